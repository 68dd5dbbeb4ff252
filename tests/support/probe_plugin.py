"""PROBE: a plugin for testing the subprocess host itself, served as ``probe_plugin:Probe``.

Unlike FAKE it is deliberately *not* idempotent (every create appends a line to ``creates.log``), so a host
that re-sent a create blindly after a crash would leave two lines. Marker files in its ``Dir`` (plugin
config) make it misbehave on cue: ``crash-after-create`` (die after acting, before answering),
``crash-on-read`` (die once during a read), ``crash-on-delete`` and ``die-on-configure``.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from svc.plugins.sdk import Ctx, ErrorCode, ListResult, PluginError, Progress, ReadResult, Status


def _take(marker: Path) -> bool:
    """True once per marker file: it is removed before the plugin dies, so the restart behaves."""
    try:
        marker.unlink()
        return True
    except FileNotFoundError:
        return False


class Probe:
    barrier: threading.Barrier | None = None

    def configure(self, config: dict[str, Any]) -> None:
        self.config = config
        self.dir = Path(config["Dir"])
        if (self.dir / "die-on-configure").exists():
            os._exit(5)
        if config.get("Barrier"):
            Probe.barrier = threading.Barrier(int(config["Barrier"]), timeout=20)

    def create(self, ctx: Ctx, label: str, properties: dict[str, Any]) -> Progress:
        with (self.dir / "creates.log").open("a") as log:
            log.write(f"{ctx.request_token} {label}\n")
        if _take(self.dir / "crash-after-create"):
            os._exit(3)
        return Progress(Status.SUCCESS, native_id=label, properties=properties)

    def status(self, ctx: Ctx, request_id: str, native_id: str) -> Progress:
        log = self.dir / "creates.log"
        for line in log.read_text().splitlines() if log.exists() else []:
            token, _, label = line.partition(" ")
            if token == request_id:
                return Progress(Status.SUCCESS, native_id=label)
        raise PluginError(ErrorCode.NOT_FOUND, f"no operation {request_id}")

    def read(self, ctx: Ctx, native_id: str, prior: dict[str, Any] | None) -> ReadResult:
        if native_id == "config":
            return ReadResult(properties=dict(self.config))
        if native_id == "barrier":
            assert Probe.barrier is not None
            Probe.barrier.wait()  # every party must be in flight at once, or this times out
            return ReadResult(properties={"pid": os.getpid()})
        if native_id == "crash":
            if _take(self.dir / "crash-on-read"):
                os._exit(4)
            return ReadResult(properties={"pid": os.getpid()})
        if native_id == "log":
            ctx.log.warning("probe says hello")
            print("a stray print")  # must reach the log, not the protocol stream
            return ReadResult(properties={})
        if native_id == "slow":
            time.sleep(float(ctx.target.get("Sleep", 5)))
            return ReadResult(properties={})
        return ReadResult(error_code=ErrorCode.NOT_FOUND, message=f"no {native_id}")

    def update(self, ctx: Ctx, native_id: str, prior: dict[str, Any], desired: dict[str, Any],
               patch: list[dict[str, Any]]) -> Progress:
        return Progress(Status.SUCCESS, native_id=native_id, properties=desired)

    def delete(self, ctx: Ctx, native_id: str) -> Progress:
        if _take(self.dir / "crash-on-delete"):
            os._exit(6)
        return Progress(Status.SUCCESS, native_id=native_id)

    def list(self, ctx: Ctx, page_size: int, page_token: str | None, filters: dict[str, str]) -> ListResult:
        if filters.get("deny"):
            raise PluginError(ErrorCode.ACCESS_DENIED, "listing is not allowed here")
        return ListResult([f"{key}={value}" for key, value in sorted(filters.items())])
