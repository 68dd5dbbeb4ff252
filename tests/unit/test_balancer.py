"""The load balancer stand-in (``support.balancer``) in front of two tiny HTTP servers: round-robin, its own 503
with no backend, health checks, a refusing backend skipped, draining on deregistration, a 502 for a dropped
request."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from support.balancer import Balancer
from support.tiny_http import Answer, Request, TinyHttp


class Backend(TinyHttp):
    """Answers its name, or on the health path 200 while ``healthy`` (else 503)."""

    def __init__(self, name: str) -> None:
        super().__init__(self._answer)
        self.name = name
        self.healthy = True
        self.delay = 0.0

    def _answer(self, request: Request) -> Answer:
        if request.path == "/api/v1/health":
            return Answer(200 if self.healthy else 503, {"Status": "ok" if self.healthy else "down"})
        return Answer(200, self.name, delay=self.delay)


@pytest.fixture
def backends() -> Iterator[tuple[Backend, Backend]]:
    with Backend("a") as a, Backend("b") as b:
        yield a, b


def get(balancer: Balancer, path: str = "/") -> httpx.Response:
    return httpx.get(balancer.url + path, timeout=10)


def names(balancer: Balancer, count: int) -> list[str]:
    return [get(balancer).text for _ in range(count)]


def wait_until(condition, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.02)


def test_connections_go_round_robin(backends: tuple[Backend, Backend]) -> None:
    a, b = backends
    with Balancer() as balancer:
        balancer.register(a.port)
        balancer.register(b.port)
        assert sorted(names(balancer, 4)) == ["a", "a", "b", "b"]
        first, second, third = names(balancer, 3)
        assert first != second and third == first


def test_with_no_backend_it_answers_503_itself() -> None:
    with Balancer() as balancer:
        response = httpx.post(balancer.url + "/api/v1/commands", content=b"x" * 100_000, timeout=10)
        assert response.status_code == 503 and "load balancer" in response.text
        assert balancer.answered[503] == 1


def test_only_backends_passing_the_health_check_get_connections(backends: tuple[Backend, Backend]) -> None:
    a, b = backends
    b.healthy = False
    with Balancer(health_check=True, interval=0.05) as balancer:
        balancer.register(a.port)
        balancer.register(b.port)
        wait_until(lambda: balancer.healthy(a.port))
        assert names(balancer, 4) == ["a"] * 4
        assert not balancer.healthy(b.port)
        b.healthy = True
        wait_until(lambda: balancer.healthy(b.port))
        assert sorted(names(balancer, 4)) == ["a", "a", "b", "b"]
        a.healthy = b.healthy = False
        wait_until(lambda: not balancer.healthy(a.port) and not balancer.healthy(b.port))
        assert get(balancer).status_code == 503
        assert all(request.headers["user-agent"] == "svc-test-balancer" for request in a.seen
                   if request.path == "/api/v1/health")


def test_a_newly_registered_backend_is_checked_at_once(backends: tuple[Backend, Backend]) -> None:
    a, b = backends
    b.healthy = False
    with Balancer(health_check=True, interval=60.0) as balancer:
        balancer.register(b.port)
        wait_until(lambda: any(request.path == "/api/v1/health" for request in b.seen))
        assert get(balancer).status_code == 503  # checked, and failed: no traffic
        balancer.register(a.port)
        wait_until(lambda: balancer.healthy(a.port), timeout=2)  # long before the next round, a minute away
        assert get(balancer).text == "a"


@pytest.mark.parametrize("health_check", [False, True])
def test_a_backend_that_refuses_is_skipped(backends: tuple[Backend, Backend], health_check: bool) -> None:
    a, b = backends
    with Balancer(health_check=health_check, interval=60.0) as balancer:
        balancer.register(a.port)
        balancer.register(b.port)
        wait_until(lambda: balancer.healthy(a.port) and balancer.healthy(b.port))
        b.stop()  # it stops listening; no check notices for a minute
        assert names(balancer, 4) == ["a"] * 4
        # Checked: marked down at its first refusal, until a check passes. Unchecked: skipped each time.
        assert balancer.healthy(b.port) is (not health_check)


def test_deregistering_drains_open_connections_while_new_ones_go_elsewhere(backends: tuple[Backend, Backend]) -> None:
    a, b = backends
    a.delay = 1.0
    with Balancer() as balancer:
        balancer.register(a.port)
        slow: list[httpx.Response] = []
        request = threading.Thread(target=lambda: slow.append(get(balancer)))
        request.start()
        wait_until(lambda: balancer.open_connections(a.port) == 1)
        balancer.register(b.port)
        drained: list[bool] = []
        deregistering = threading.Thread(target=lambda: drained.append(balancer.deregister(a.port)))
        deregistering.start()
        wait_until(lambda: balancer.draining(a.port))
        assert names(balancer, 3) == ["b"] * 3  # while a drains
        assert balancer.draining(a.port) and balancer.open_connections(a.port) == 1
        deregistering.join(timeout=10)
        request.join(timeout=10)
        assert drained == [True] and [response.text for response in slow] == ["a"]


def test_a_drain_that_takes_too_long_closes_what_is_left(backends: tuple[Backend, Backend]) -> None:
    a, _ = backends
    a.delay = 3.0
    with Balancer() as balancer:
        balancer.register(a.port)
        failures: list[Exception] = []

        def slow_request() -> None:
            try:
                get(balancer)
            except httpx.HTTPError as error:
                failures.append(error)

        request = threading.Thread(target=slow_request)
        request.start()
        wait_until(lambda: balancer.open_connections(a.port) == 1)
        started = time.monotonic()
        assert balancer.deregister(a.port, timeout=0.3) is False
        assert time.monotonic() - started < 2
        request.join(timeout=10)
        assert len(failures) == 1


def test_a_request_the_backend_drops_gets_a_502() -> None:
    with TinyHttp(lambda _: None) as dropping, Balancer() as balancer:
        balancer.register(dropping.port)
        response = get(balancer, "/api/v1/resources")
        assert response.status_code == 502 and balancer.answered[502] == 1
        assert [request.path for request in dropping.seen] == ["/api/v1/resources"]
