"""The subprocess plugin host against real plugin processes (PROBE from ``support.probe_plugin``, and FAKE)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from svc.plugins.host import HostedPlugin
from svc.plugins.process import PluginProcess
from svc.plugins.runner import Call, PluginCallError, PluginLoadError
from svc.plugins.sdk import ErrorCode, Status

SUPPORT = Path(__file__).resolve().parents[1] / "support"
CALL = Call("PROBE::Test::Thing", {}, 10.0)


def probe(directory: Path, plugin: str = "probe_plugin:Probe", **config: Any) -> HostedPlugin:
    return HostedPlugin(
        "PROBE", "0.0.0", {"Dir": str(directory), **config},
        argv=[sys.executable, "-m", "svc.plugins.serve", plugin, "--namespace", "PROBE"],
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(SUPPORT), os.environ.get("PYTHONPATH")]))},
        backoff=0.01, max_backoff=0.05)


def hosted(host: HostedPlugin, body: Callable[[HostedPlugin], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        await host.start()
        try:
            return await body(host)
        finally:
            await host.close()

    return asyncio.run(main())


def with_token(token: str) -> Call:
    return Call(CALL.resource_type, CALL.target_config, CALL.timeout, token)


def test_a_create_that_happened_before_the_crash_is_not_sent_again(tmp_path: Path) -> None:
    (tmp_path / "crash-after-create").touch()

    async def body(host: HostedPlugin) -> Any:
        first_pid = host.describe()["pid"]
        progress = await host.create(with_token("tok-1"), "a", {"X": 1})
        return first_pid, progress, host.describe()

    first_pid, progress, after = hosted(probe(tmp_path), body)
    assert progress.status is Status.SUCCESS and progress.native_id == "a"
    # PROBE is not idempotent: a blind re-send would have appended a second line.
    assert (tmp_path / "creates.log").read_text().splitlines() == ["tok-1 a"]
    assert after["restarts"] == 1 and after["pid"] != first_pid and after["state"] == "running"


def test_a_call_lost_with_the_process_is_sent_again_after_the_restart(tmp_path: Path) -> None:
    (tmp_path / "crash-on-read").touch()

    async def body(host: HostedPlugin) -> Any:
        return await host.read(CALL, "crash", None), host.describe()

    result, after = hosted(probe(tmp_path), body)
    assert result.error_code is None and result.properties == {"pid": after["pid"]}
    assert after["restarts"] == 1


def test_a_mutating_call_without_a_token_is_never_re_sent(tmp_path: Path) -> None:
    (tmp_path / "crash-on-delete").touch()

    async def body(host: HostedPlugin) -> Any:
        return await host.delete(CALL, "a")

    progress = hosted(probe(tmp_path), body)
    assert progress.status is Status.FAILURE and progress.error_code is ErrorCode.UNFORESEEN_ERROR
    assert "may have reached the provider" in progress.message


def test_many_requests_are_in_flight_at_once(tmp_path: Path) -> None:
    parties = 20

    async def body(host: HostedPlugin) -> Any:
        return await asyncio.gather(*(host.read(CALL, "barrier", None) for _ in range(parties)))

    results = hosted(probe(tmp_path, Barrier=parties), body)
    # Each read waits at a barrier for all the others: a host that sent them one by one would time out.
    assert all(r.error_code is None for r in results), [r.message for r in results if r.error_code]


def test_a_plugin_answers_shutdown_before_it_exits(tmp_path: Path) -> None:
    """Its answers leave in one write per loop turn: the last one must still be written before the process ends."""
    host = probe(tmp_path)

    async def main() -> tuple[Any, int]:
        process = await PluginProcess.spawn("PROBE", host.argv, host.env, host.plugin_config)
        answer = await process.request("shutdown", {}, 5.0)
        return answer, await process.process.wait()

    assert asyncio.run(main()) == ({}, 0)


def test_a_plugin_that_keeps_crashing_is_given_up_after_its_restart_budget(tmp_path: Path) -> None:
    host = probe(tmp_path)
    host.max_restarts = 2

    async def body(host: HostedPlugin) -> Any:
        (tmp_path / "die-on-configure").touch()  # every restart now dies during its handshake
        os.kill(host.describe()["pid"], signal.SIGKILL)
        result = await host.read(CALL, "config", None)
        return result, host.describe()

    result, after = hosted(host, body)
    assert result.error_code is ErrorCode.UNFORESEEN_ERROR
    assert "crashed 3 times" in result.message and "not restarted" in result.message
    assert after["state"] == "failed" and "pid" not in after


def test_configure_passes_the_plugin_config_and_stderr_reaches_the_log(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="svc.plugin.PROBE")

    async def body(host: HostedPlugin) -> Any:
        config = await host.read(CALL, "config", None)
        logged = await host.read(CALL, "log", None)
        await asyncio.sleep(0.3)  # stderr is read concurrently with the answer
        return config, logged

    config, logged = hosted(probe(tmp_path, Flavour="mint"), body)
    assert config.properties == {"Dir": str(tmp_path), "Flavour": "mint"}
    assert logged.error_code is None  # the stray print did not corrupt the protocol stream
    lines = [record.getMessage() for record in caplog.records if record.name == "svc.plugin.PROBE"]
    assert any(line.startswith("[PROBE] WARNING") and "probe says hello" in line for line in lines), lines
    assert any(line == "[PROBE] a stray print" for line in lines), lines


def test_list_failures_keep_their_code_and_filters_reach_the_plugin(tmp_path: Path) -> None:
    async def body(host: HostedPlugin) -> Any:
        listed = await host.list(CALL, 10, None, {"Parent": "p-1"})
        with pytest.raises(PluginCallError) as denied:
            await host.list(CALL, 10, None, {"deny": "yes"})
        return listed, denied.value

    listed, denied = hosted(probe(tmp_path), body)
    assert listed.native_ids == ["Parent=p-1"]
    assert denied.code is ErrorCode.ACCESS_DENIED and "not allowed" in denied.message


def test_a_plugin_that_cannot_load_stops_the_start_with_its_reason(tmp_path: Path) -> None:
    host = probe(tmp_path, plugin="probe_plugin:NoSuchClass")
    with pytest.raises(PluginLoadError) as failure:
        asyncio.run(host.start())
    message = str(failure.value)
    assert "\n" not in message and "PROBE" in message and "NoSuchClass" in message


def test_a_call_past_its_deadline_is_a_timeout(tmp_path: Path) -> None:
    async def body(host: HostedPlugin) -> Any:
        return await host.read(Call(CALL.resource_type, {"Sleep": 3}, 0.5), "slow", None)

    result = hosted(probe(tmp_path), body)
    assert result.error_code is ErrorCode.SERVICE_TIMEOUT


def test_fake_runs_on_the_host_with_token_replay(tmp_path: Path) -> None:
    cloud = {"Type": "FAKE", "Path": str(tmp_path / "cloud.db")}

    async def body(host: HostedPlugin) -> Any:
        call = Call("FAKE::Test::Item", cloud, 10.0, "t-1")
        first = await host.create(call, "a", {"Value": "x"})
        second = await host.create(call, "a", {"Value": "x"})  # the same token: the first answer
        read = await host.read(Call("FAKE::Test::Item", cloud, 10.0), first.native_id, None)
        return first, second, read

    first, second, read = hosted(HostedPlugin("FAKE", "0.1.0", {}), body)
    assert first.status is Status.SUCCESS and second.native_id == first.native_id
    assert read.properties == {"Value": "x", "Id": first.native_id}
