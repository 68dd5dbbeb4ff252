"""The native launcher (``native/launcher.c``, built by ``scripts/build_launcher.py``): it hands a command to a warm
CLI server without starting Python, and leaves every other case to the console script, which it becomes with the
same arguments. Here the console script it becomes is a stand-in that notes it ran: what the launcher left to it
is then plain to see (the real one's behaviour is ``test_cli_server``'s and ``test_launcher``'s)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.processes import NATIVE_LAUNCHER

REPO = Path(__file__).resolve().parents[2]
COMPILER = shutil.which("cc") or shutil.which("gcc")
CONSOLE_SCRIPT = Path(sys.executable).parent.parent / "libexec" / "svc" / "svc"
pytestmark = pytest.mark.skipif(COMPILER is None, reason="no C compiler: svc is pip's console script")


def _build_launcher_module() -> object:
    spec = importlib.util.spec_from_file_location("build_launcher", REPO / "scripts" / "build_launcher.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_launcher = _build_launcher_module()
FELL_BACK = 3  # the stand-in console script's exit code


@dataclass
class Launcher:
    binary: Path
    runtime: Path
    env: dict[str, str]
    noted: Path  # the stand-in console script's arguments, one a line, once it ran

    def run(self, *args: str, env: dict[str, str] | None = None, **options: object) -> subprocess.CompletedProcess[str]:
        self.noted.unlink(missing_ok=True)
        return subprocess.run([str(self.binary), *args], capture_output=True, text=True, timeout=60,
                              env={**self.env, **(env or {})}, **options)  # type: ignore[call-overload]

    def fell_back_with(self) -> list[str] | None:
        return self.noted.read_text().splitlines() if self.noted.exists() else None

    def start_server(self) -> None:
        """As the console script does for the first command: the real one runs it here and starts the server."""
        first = subprocess.run([str(CONSOLE_SCRIPT), "--version"], capture_output=True, text=True, timeout=120,
                               env=self.env)
        assert first.returncode == 0, first.stderr
        deadline = time.monotonic() + 60
        while not list(self.runtime.glob("svc/cli-*.sock")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(self.runtime.glob("svc/cli-*.sock")), "no server"


def _compiled(destination: Path, key: str, socket_name: str, console_script: Path) -> Path:
    destination.write_bytes(build_launcher.compile_launcher(  # type: ignore[attr-defined]
        COMPILER, build_launcher.definitions(key, socket_name, console_script)))  # type: ignore[attr-defined]
    destination.chmod(0o755)
    return destination


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[Launcher]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    noted = tmp_path / "noted"
    stand_in = tmp_path / "console-script"
    stand_in.write_text(f'#!/bin/sh\nprintf "%s\\n" "$0" "$@" > {noted}\nexit {FELL_BACK}\n')
    stand_in.chmod(0o755)
    key, socket_name = build_launcher.server_key(sys.executable)  # type: ignore[attr-defined]
    env = {**{name: value for name, value in os.environ.items() if not name.startswith("PYTHON")},
           "XDG_RUNTIME_DIR": str(runtime)}
    yield Launcher(_compiled(tmp_path / "svc", key, socket_name, stand_in), runtime, env, noted)
    for lock in runtime.glob("svc/cli-*.lock"):
        try:
            os.kill(int(lock.read_text()), signal.SIGTERM)
        except (OSError, ValueError):
            pass


def test_the_installation_runs_svc_through_the_native_launcher() -> None:
    assert NATIVE_LAUNCHER
    assert CONSOLE_SCRIPT.read_text().startswith(f"#!{Path(sys.executable).parent / 'python'}\n")


def test_it_compiles_without_a_warning(tmp_path: Path) -> None:
    defined = build_launcher.definitions("key", "cli-0.sock", tmp_path / "svc")  # type: ignore[attr-defined]
    assert build_launcher.compile_launcher(COMPILER, defined, "-Werror", "-pedantic")  # type: ignore[attr-defined]


def test_with_no_server_it_becomes_the_console_script_with_the_same_arguments(launcher: Launcher) -> None:
    ran = launcher.run("plan", "my forma.pkl", "--prop", "")
    assert ran.returncode == FELL_BACK
    assert launcher.fell_back_with() == [str(launcher.binary.parent / "console-script"), "plan", "my forma.pkl",
                                         "--prop", ""]


def test_with_a_server_it_hands_the_command_over(launcher: Launcher) -> None:
    launcher.start_server()
    ran = launcher.run("--version")
    assert (ran.returncode, ran.stdout.startswith("svc version"), launcher.fell_back_with()) == (0, True, None)
    wrong = launcher.run("no-such-command")
    alone = subprocess.run([str(CONSOLE_SCRIPT), "no-such-command"], capture_output=True, text=True, timeout=60,
                           env={**launcher.env, "SVC_CLI_SERVER": "off"})
    assert (wrong.returncode, wrong.stdout, wrong.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    assert wrong.returncode == 1 and "No such command" in wrong.stderr and launcher.fell_back_with() is None


@pytest.mark.parametrize(("args", "env"), [
    (["--version"], {"SVC_CLI_SERVER": " Off "}),
    (["--version"], {"SVC_CLI_SERVER": "0"}),
    (["agent", "start", "--config", "agent.pkl"], {}),  # becomes the agent
    (["upgrade"], {}),  # replaces the installation the server runs
    (["--show-completion"], {}),  # looks for the user's shell among its parent processes
    (["plan", "--install-completion", "bash"], {}),
    (["--version"], {"PYTHONPATH": "/elsewhere"}),  # another import path: another server, whose key only Python knows
    (["--version"], {"PYTHONSAFEPATH": "1"}),  # another flag
])
def test_what_it_leaves_to_the_console_script(launcher: Launcher, args: list[str], env: dict[str, str]) -> None:
    launcher.start_server()
    ran = launcher.run(*args, env=env)
    assert ran.returncode == FELL_BACK, ran.stderr
    assert launcher.fell_back_with() == [str(launcher.binary.parent / "console-script"), *args]


@pytest.mark.parametrize(("args", "env"), [
    (["--version"], {"SVC_CLI_SERVER": "on"}),
    (["--version"], {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}),
    (["agent", "--help"], {}),
])
def test_what_it_hands_over(launcher: Launcher, args: list[str], env: dict[str, str]) -> None:
    launcher.start_server()
    ran = launcher.run(*args, env=env)
    assert ran.returncode == 0 and launcher.fell_back_with() is None, ran.stderr


def test_a_closed_standard_stream_is_left_to_the_console_script(launcher: Launcher) -> None:
    launcher.start_server()
    ran = launcher.run("--version", preexec_fn=lambda: os.close(0))
    assert ran.returncode == FELL_BACK


def test_a_runtime_directory_others_may_enter_is_not_used(launcher: Launcher) -> None:
    launcher.start_server()
    (launcher.runtime / "svc").chmod(0o755)
    assert launcher.run("--version").returncode == FELL_BACK


def test_a_server_that_refuses_the_command_leaves_it_to_the_console_script(launcher: Launcher,
                                                                          tmp_path: Path) -> None:
    """A launcher whose key is not its server's (the interpreter was upgraded under it): the server refuses, and
    the console script runs the command."""
    launcher.start_server()
    [socket] = launcher.runtime.glob("svc/cli-*.sock")
    stale = _compiled(tmp_path / "stale", "another key", socket.name, tmp_path / "console-script")
    launcher.noted.unlink(missing_ok=True)
    ran = subprocess.run([str(stale), "--version"], capture_output=True, text=True, timeout=60, env=launcher.env)
    assert ran.returncode == FELL_BACK and launcher.fell_back_with() is not None
