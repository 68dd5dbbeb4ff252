"""The plugin gateway: a plugin by namespace (any spelling), its retry policy and limits, and calls retried the
one way whoever makes them (a change, a synchronization read, a discovery listing)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from svc.engine.gateway import PluginGateway, PluginLimits
from svc.engine.operations import Attempt, Guard, RetryPolicy, Step
from svc.plugins.runner import Call, PluginCallError
from svc.plugins.sdk import ErrorCode, ListResult, Operation, Progress, ReadResult, Status

FAST = RetryPolicy(max_retries=2, retry_delay=0.0, status_interval=0.0, call_timeout=7.0)


class Scripted:
    """A runner answering each operation from a script, recording the calls it got."""

    namespace = "FAKE"

    def __init__(self, **answers: list[Any]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, Call]] = []

    def _next(self, operation: str, call: Call) -> Any:
        self.calls.append((operation, call))
        answer = self.answers[operation].pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def create(self, call: Call, label: str, properties: dict[str, Any]) -> Progress:
        return self._next("create", call)

    async def read(self, call: Call, native_id: str, prior: dict[str, Any] | None) -> ReadResult:
        return self._next("read", call)

    async def status(self, call: Call, request_id: str, native_id: str) -> Progress:
        return self._next("status", call)

    async def list(self, call: Call, page_size: int, page_token: str | None, filters: dict[str, str]) -> ListResult:
        return self._next("list", call)

    async def start(self) -> None:
        self.calls.append(("start", Call("", {})))

    async def close(self) -> None:
        self.calls.append(("close", Call("", {})))


def _gateway(runner: Scripted, **limits: Any) -> PluginGateway:
    return PluginGateway({"FAKE": runner}, retry=FAST, plugins={"fake": PluginLimits(**limits)} if limits else None)


def test_a_plugin_is_found_by_any_spelling_of_its_namespace() -> None:
    gateway = _gateway(Scripted())
    assert gateway.plugin("FAKE") is gateway.plugin("Fake") is gateway.find("fake")
    assert gateway.find("AWS") is None
    with pytest.raises(LookupError, match="no plugin serves namespace 'AWS'"):
        gateway.plugin("AWS")


def test_a_plugin_has_its_own_retry_policy_and_limits_or_the_agents() -> None:
    own = RetryPolicy(max_retries=1)
    configured = _gateway(Scripted(), requests_per_second=3.0, max_in_flight=1, retry=own).plugin("FAKE")
    assert configured.policy is own and configured.limits.bucket.rate == 3.0

    async def one_slot() -> bool:
        async with configured.dispatch():
            return configured.limits.slots.locked()

    assert asyncio.run(one_slot()) and not configured.limits.slots.locked()
    assert _gateway(Scripted()).plugin("FAKE").policy is FAST


def test_a_throttled_listing_is_retried_and_each_attempt_holds_a_slot() -> None:
    page = ListResult(native_ids=["a"])
    runner = Scripted(list=[PluginCallError(ErrorCode.THROTTLING, "slow down"), page])
    plugin = _gateway(runner, max_in_flight=1).plugin("FAKE")
    assert asyncio.run(plugin.list("FAKE::Test::Item", {"Region": "x"}, 10, None, {})) is page
    assert [call.timeout for _, call in runner.calls] == [7.0, 7.0]
    assert not plugin.limits.slots.locked()  # both attempts gave their slot back


def test_a_listing_denied_fails_at_once() -> None:
    runner = Scripted(list=[PluginCallError(ErrorCode.ACCESS_DENIED, "no")])
    with pytest.raises(PluginCallError):
        asyncio.run(_gateway(runner).plugin("FAKE").list("FAKE::Test::Item", {}, 10, None, {}))
    assert len(runner.calls) == 1


def test_a_read_retries_what_is_recoverable_and_answers_not_found_when_asked_to() -> None:
    found = ReadResult(properties={"Value": "v"})
    runner = Scripted(read=[ReadResult(error_code=ErrorCode.SERVICE_TIMEOUT), found,
                            ReadResult(error_code=ErrorCode.NOT_FOUND)])
    plugin = _gateway(runner).plugin("FAKE")
    assert asyncio.run(plugin.read("FAKE::Test::Item", {}, "n", None, not_found_ok=False)) is found
    gone = asyncio.run(plugin.read("FAKE::Test::Item", {}, "n", None, not_found_ok=True))
    assert gone.error_code is ErrorCode.NOT_FOUND and len(runner.calls) == 3


def test_a_create_is_recorded_before_each_call_polled_while_under_way_and_retried_with_a_fresh_token() -> None:
    runner = Scripted(create=[Progress.failure(ErrorCode.THROTTLING, "slow down"),
                              Progress(Status.IN_PROGRESS, request_id="r-1")],
                      status=[Progress(Status.SUCCESS, native_id="n-1")])
    recorded: list[tuple[str, int, str | None]] = []

    async def record(attempt: Attempt, progress: Progress | None) -> None:
        recorded.append((attempt.token, attempt.number, attempt.request_id))

    attempt = Attempt("create", "cmd-k-create")
    done = asyncio.run(_gateway(runner).plugin("FAKE").create("FAKE::Test::Item", {}, "a", {}, attempt, record,
                                                               Step(Guard(), "k")))
    assert done.native_id == "n-1" and attempt.native_id == "n-1"
    assert [(operation, call.request_token) for operation, call in runner.calls] == [
        ("create", "cmd-k-create"), ("create", "cmd-k-create.2"), ("status", None)]
    assert recorded == [("cmd-k-create", 1, None), ("cmd-k-create", 1, None), ("cmd-k-create.2", 2, None),
                        ("cmd-k-create.2", 2, "r-1")]


def test_a_plugin_added_at_run_time_is_started_served_and_forgotten_once_removed() -> None:
    gateway = _gateway(Scripted())
    added = Scripted()
    added.namespace = "LOCAL"

    async def scenario() -> None:
        await gateway.add(added, PluginLimits(requests_per_second=5.0, max_in_flight=2))
        assert [operation for operation, _ in added.calls] == ["start"]
        assert gateway.plugin("local") is gateway.find("LOCAL")
        assert gateway.plugin("Local").limits is not gateway.plugin("FAKE").limits
        assert set(gateway.processes()) == {"FAKE", "LOCAL"}
        await gateway.remove("local")
        assert [operation for operation, _ in added.calls] == ["start", "close"]
        assert gateway.find("local") is None and gateway.find("Local") is None and gateway.find("LOCAL") is None
        assert set(gateway.processes()) == {"FAKE"} and gateway.find("fake") is not None

    asyncio.run(scenario())


def _created(runner: Scripted) -> Progress:
    async def record(attempt: Attempt, progress: Progress | None) -> None:
        return None

    return asyncio.run(_gateway(runner).plugin("FAKE").create("FAKE::Test::Item", {}, "a", {},
                                                               Attempt("create", "cmd-k-create"), record,
                                                               Step(Guard(), "k")))


def test_an_operation_that_ended_failed_is_issued_again_and_a_failed_poll_is_polled_again() -> None:
    ended = Progress.failure(ErrorCode.THROTTLING, "the provider was throttled", operation=Operation.CREATE)
    runner = Scripted(create=[Progress(Status.IN_PROGRESS, request_id="r-1"),
                              Progress(Status.IN_PROGRESS, request_id="r-2")],
                      status=[ended, Progress.failure(ErrorCode.THROTTLING, "slow down", operation=Operation.STATUS),
                              Progress(Status.SUCCESS, native_id="n-2")])
    assert _created(runner).native_id == "n-2"
    assert [(operation, call.request_token) for operation, call in runner.calls] == [
        ("create", "cmd-k-create"), ("status", None), ("create", "cmd-k-create.2"), ("status", None),
        ("status", None)]
