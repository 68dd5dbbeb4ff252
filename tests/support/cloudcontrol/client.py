"""Starting the stand-in as its own process, and driving its control API from a test."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import httpx
from botocore.config import Config as BotoConfig

from support.processes import free_port

_TESTS = Path(__file__).resolve().parents[2]  # the directory that holds ``support``


class StandInStartError(RuntimeError):
    """The stand-in exited or did not answer in time."""


class StandIn:
    """A running stand-in: its URL, and its control API (``/_standin/…``) as methods."""

    def __init__(self, url: str) -> None:
        self.url = url
        # One connection pool and one boto3 client per stand-in: making either costs tenths of a second.
        self._http = httpx.Client(base_url=url, timeout=30)
        self._clients: dict[int, Any] = {}

    def __repr__(self) -> str:
        return f"StandIn({self.url!r})"

    def close(self) -> None:
        self._http.close()

    def environment(self) -> dict[str, str]:
        """What points a process's botocore ``cloudcontrol`` clients here (and no other service's)."""
        return {"AWS_ENDPOINT_URL_CLOUDCONTROL": self.url}

    def client(self, *, max_attempts: int = 1) -> Any:
        """A boto3 ``cloudcontrol`` client on the stand-in with dummy credentials; by default without botocore's
        own retries, so a test sees each answer."""
        if max_attempts not in self._clients:
            self._clients[max_attempts] = boto3.client(
                "cloudcontrol", region_name="us-east-1", endpoint_url=self.url, aws_access_key_id="testing",
                aws_secret_access_key="testing",
                config=BotoConfig(retries={"total_max_attempts": max_attempts, "mode": "standard"}))
        return self._clients[max_attempts]

    def _post(self, action: str, body: dict[str, Any] | None = None) -> Any:
        answer = self._http.post(f"/_standin/{action}", json=body or {})
        if answer.status_code >= 400:
            raise RuntimeError(f"stand-in control {action}: {answer.text}")
        return answer.json()

    def state(self) -> dict[str, Any]:
        """``resources`` (type → identifier → stored model, write-only values included), ``calls`` per
        operation, ``requests`` (token → status) and ``timing``."""
        answer = self._http.get("/_standin/state")
        answer.raise_for_status()
        return answer.json()

    def reset(self) -> None:
        """Forgets every resource, request, call count and injected fault; default timing."""
        self._post("reset")

    def set_timing(self, *, polls: int = 1, milliseconds: int = 0, page_size: int | None = None) -> None:
        """Requests answer IN_PROGRESS to ``polls`` status polls and for at least ``milliseconds``;
        ``page_size`` is the ListResources page without MaxResults."""
        body: dict[str, Any] = {"polls": polls, "milliseconds": milliseconds}
        if page_size is not None:
            body["pageSize"] = page_size
        self._post("timing", body)

    def throttle(self, *, next_calls: int = 0, rate: float = 0.0, per_second: float = 0.0,
                 operations: Sequence[str] = ()) -> None:
        """The next ``next_calls`` calls, then a ``rate`` share of calls (reproducibly drawn), then the calls of
        one operation beyond ``per_second`` a second (a token bucket per operation, as AWS meters each API
        action; 0: none) answer ThrottlingException; only calls of ``operations`` (API names, e.g.
        ``ListResources``) when given. ``state()["throttled"]`` counts them per operation."""
        self._post("throttle", {"next": next_calls, "rate": rate, "perSecond": per_second,
                                "operations": list(operations)})

    def delay(self, milliseconds: int, operations: Sequence[str] = ()) -> None:
        """Every answer (of ``operations`` when given) waits ``milliseconds``."""
        self._post("delay", {"milliseconds": milliseconds, "operations": list(operations)})

    def fail_requests(self, operation: str, error_code: str, *, type_name: str | None = None,
                      message: str | None = None, count: int | None = None) -> None:
        """New CREATE/UPDATE/DELETE requests (of ``type_name`` when given) end FAILED with ``error_code`` (a
        HandlerErrorCode such as ``ServiceLimitExceeded``); ``count`` of them, or all when None."""
        self._post("fail", {"operation": operation, "errorCode": error_code, "typeName": type_name,
                            "message": message or f"injected {error_code}", "count": count})

    def answer_error(self, operation: str, code: str, *, type_name: str | None = None, message: str | None = None,
                     count: int | None = None) -> None:
        """Calls of ``operation`` (of ``type_name`` when given) answer the error ``code`` (e.g.
        ``AccessDeniedException``); ``count`` of them, or all when None."""
        self._post("error", {"operation": operation, "code": code, "typeName": type_name,
                             "message": message or f"injected {code}", "count": count})

    def put_resource(self, type_name: str, properties: dict[str, Any]) -> dict[str, Any]:
        """A resource made at once, behind the API's back (for discovery): its ``Identifier`` and ``Properties``."""
        return self._post("resources", {"typeName": type_name, "properties": properties})

    def delete_resource(self, type_name: str, identifier: str) -> bool:
        """A resource removed behind the API's back; whether it was there."""
        return self._post("resources/delete", {"typeName": type_name, "identifier": identifier})["deleted"]


@contextmanager
def start_cloudcontrol(log: Path) -> Iterator[StandIn]:
    """The stand-in (``python -m support.cloudcontrol``) on a free loopback port, its output in ``log``; stopped
    after."""
    port = free_port()
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_TESTS),
                                                                             os.environ.get("PYTHONPATH")]))}
    with log.open("wb") as output:
        process = subprocess.Popen([sys.executable, "-m", "support.cloudcontrol", "--port", str(port)],
                                   stdout=output, stderr=subprocess.STDOUT, env=environment)
    standin = StandIn(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                standin.state()
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise StandInStartError(
                        f"the Cloud Control stand-in did not start:\n{log.read_text(errors='replace')}") from None
                time.sleep(0.1)
        yield standin
    finally:
        standin.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
