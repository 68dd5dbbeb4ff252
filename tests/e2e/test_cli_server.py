"""The warm CLI server (``svc.launcher``, ``svc.cli.server``): the first command runs in its own process and starts a
server; later ones run in a worker the server forks, with the caller's arguments, working directory, environment
and standard streams, its Ctrl-C, and its exit code. Each test has a runtime directory of its own, so it starts,
sees and stops its own server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pexpect
import pytest

from support.fake_world import ENV, World, submit, wait_running
from support.processes import NATIVE_LAUNCHER, SVC, is_cli_spare, is_pkl_server, process_state, run_svc, stopped_within

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads a process's children from /proc")
ITEMS = "".join(f'new item.Item {{ label = "i{n}"; value = "v{n}" }}\n' for n in range(3))


class Server:
    """The server of one runtime directory, as the commands given ``env`` start and use it, handed them by
    ``launcher``: native (``native/launcher.c``) or python (``svc.launcher``)."""

    def __init__(self, runtime: Path, env: dict[str, str], launcher: str) -> None:
        self.directory = runtime / "svc"
        self.env = env
        self.launcher = launcher

    @property
    def socket(self) -> Path | None:
        return next(self.directory.glob("cli-*.sock"), None)

    @property
    def pid(self) -> int:
        return int(next(self.directory.glob("cli-*.lock")).read_text())

    def start(self) -> None:
        """Runs a first command (in its own process, it starts the server) and waits for the server to listen."""
        first = run_svc("--version", env={**self.env, "TERMINAL_WIDTH": ""})  # Typer's help width: the command's
        assert first.returncode == 0, first.stderr
        deadline = time.monotonic() + 60
        while self.socket is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.socket is not None, self.log()

    def children(self) -> list[int]:
        return [int(pid) for task in Path(f"/proc/{self.pid}/task").iterdir()
                for pid in (task / "children").read_text().split()]

    def workers(self) -> list[int]:
        """The children running a command: not the spare, which waits for the next one, nor the Pkl server."""
        return [pid for pid in self.children() if not (is_cli_spare(pid) or is_pkl_server(pid))]

    def pkl(self, within: float = 30, other_than: int | None = None) -> int:
        """The Pkl server the server lends its spares, once it has started it (one other than ``other_than``)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            found = [pid for pid in self.children() if is_pkl_server(pid) and pid != other_than]
            if found:
                [pkl] = found
                return pkl
            time.sleep(0.02)
        raise AssertionError(f"no Pkl server after {within} s: {self.log()}")

    def spare(self, within: float = 30) -> int:
        """The spare worker, once the server has forked it."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            spares = [pid for pid in self.children() if is_cli_spare(pid)]
            if spares:
                [spare] = spares
                return spare
            time.sleep(0.02)
        raise AssertionError(f"no spare worker after {within} s: {self.log()}")

    def log(self) -> str:
        return "".join(path.read_text() for path in self.directory.glob("cli-*.log"))


@pytest.fixture(params=["native", "python"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """A server, and the launcher its commands come through: the installed ``svc`` hands a command over natively
    unless a ``PYTHON*`` variable may make Python another, and then becomes the Python console script, which hands it
    over itself. ``PYTHONSTARTUP`` changes nothing for a script, so it is the same server either way."""
    if request.param == "native" and not NATIVE_LAUNCHER:
        pytest.skip("svc is pip's console script here: no C compiler built the native launcher")
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    if request.param == "python":
        env["PYTHONSTARTUP"] = ""
    server = Server(runtime, env, request.param)
    yield server
    if server.directory.is_dir() and next(server.directory.glob("cli-*.lock"), None):
        try:
            os.kill(server.pid, signal.SIGTERM)
        except (OSError, ValueError):
            pass


def _in_state(pid: int, state: str, within: float = 30) -> bool:
    deadline = time.monotonic() + within
    while process_state(pid) != state and time.monotonic() < deadline:
        time.sleep(0.02)
    return process_state(pid) == state


def _gone(pid: int, within: float = 30) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process_state(pid) in (None, "Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_a_command_in_the_server_answers_as_in_its_own_process(world: World, server: Server) -> None:
    """The same output, errors and exit codes; a forma named relative to the caller's directory; the caller's
    COLUMNS; standard input read from the caller's."""
    server.start()
    (world.directory / "main.pkl").write_text(world.forma(ITEMS).read_text())
    alone = {**server.env, "SVC_CLI_SERVER": "off"}
    cases = [
        ["plan", "main.pkl"],
        ["plan", "missing.pkl"],
        ["apply", "main.pkl"],  # asks; standard input says no
        ["inventory", "resources", "--query", "label:i1"],
        ["no-such-command"],
        ["--help"],  # Typer's help, as wide as the command's environment says
        ["plan", "main.pkl", "--help"],
    ]
    for args in cases:
        here, there = (subprocess.run([SVC, *args, "--config", str(world.agent.config)], cwd=world.directory,
                                      input="n\n", capture_output=True, text=True, timeout=120,
                                      env={**os.environ, **ENV, "COLUMNS": "97", "TERMINAL_WIDTH": "60", **env})
                           for env in (alone, server.env))
        assert (there.returncode, there.stdout, there.stderr) == (here.returncode, here.stdout, here.stderr), args
    applied = world.svc("apply", str(world.directory / "main.pkl"), "--yes", "--wait", env=server.env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert sorted(world.inventory()) == ["i0", "i1", "i2"]


@contextmanager
def _following(world: World, server: Server) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A command held running (its last resource hangs) and ``svc command status --follow`` of it through the
    server, once the server's worker runs it."""
    world.cloud.set_knob("hang", {"labels": ["i2"]})
    command_id = submit(world, world.forma(ITEMS))
    wait_running(world, command_id, "i2")
    follower = subprocess.Popen([SVC, "command", "status", command_id, "--follow", "--config",
                                 str(world.agent.config)], env={**os.environ, **ENV, **server.env},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not server.workers() and time.monotonic() < deadline:
            time.sleep(0.05)
        yield command_id, follower
    finally:
        if follower.poll() is None:
            follower.kill()


def _released(world: World, follower: subprocess.Popen[str]) -> tuple[str, str]:
    """The held resource let go: what the follower wrote, once it ended with the command."""
    world.cloud.clear_knobs("hang")
    return follower.communicate(timeout=60)


def test_the_command_runs_in_a_worker_of_the_server_which_passes_its_exit_code(world: World, server: Server) -> None:
    server.start()
    with _following(world, server) as (command_id, follower):
        assert len(server.workers()) == 1  # the command runs there
        assert not Path(f"/proc/{follower.pid}/task/{follower.pid}/children").read_text().split()  # not here
        client = Path(f"/proc/{follower.pid}/exe").resolve()
        assert client == (Path(SVC).resolve() if server.launcher == "native" else Path(sys.executable).resolve())
        out, err = _released(world, follower)
    assert follower.returncode == 0, out + err
    assert f"apply {command_id} succeeded." in out, out
    failed = world.svc("command", "status", "2ZnoSuchCommand", env=server.env)
    assert failed.returncode == 1 and failed.stderr.startswith("Error: command not found"), failed.stderr


def test_each_command_runs_in_the_spare_forked_before_it(world: World, server: Server) -> None:
    """The server keeps the next command's worker forked ahead (a spare, its page faults taken ahead): the command
    runs in it, the server forks the next spare once it has ended, and a server leaving takes its spare along."""
    server.start()
    spare = server.spare()
    with _following(world, server) as (_, follower):
        assert server.workers() == [spare]
        out, err = _released(world, follower)
    assert follower.returncode == 0, out + err
    assert _gone(spare)
    following = server.spare()
    assert following != spare
    assert run_svc("--version", env=server.env).stdout.startswith("svc version")
    assert _gone(following)
    killed = server.spare()  # a spare that dies waiting: the next command gets a worker forked then
    os.kill(killed, signal.SIGKILL)
    assert _gone(killed)
    assert run_svc("--version", env=server.env).stdout.startswith("svc version")
    last = server.spare()
    assert last != killed
    os.kill(server.pid, signal.SIGTERM)
    assert _gone(last, within=10)


def test_ctrl_c_reaches_the_worker_and_a_killed_client_hangs_it_up(world: World, server: Server) -> None:
    server.start()
    world.cloud.set_knob("hang", {"labels": ["i2"]})
    command_id = submit(world, world.forma(ITEMS))
    wait_running(world, command_id, "i2")

    terminal = pexpect.spawn(SVC, ["command", "status", command_id, "--follow", "--config", str(world.agent.config)],
                             encoding="utf-8", timeout=60, dimensions=(40, 160),
                             env={**os.environ, **server.env, "TERM": "xterm"},
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        terminal.expect(r"2 of 3 done")  # the live view: the worker writes to this terminal
        [worker] = server.workers()
        terminal.sendintr()
        terminal.expect("follow it again with: svc command status")
        terminal.expect(pexpect.EOF)
    finally:
        terminal.close(force=True)
    assert terminal.exitstatus in (1, 130)
    assert _gone(worker)
    assert world.command(command_id)["State"] == "InProgress"  # Ctrl-C stops following, not the command

    follower = subprocess.Popen([SVC, "command", "status", command_id, "--follow", "--config",
                                 str(world.agent.config)], env={**os.environ, **ENV, **server.env},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not server.workers() and time.monotonic() < deadline:
        time.sleep(0.05)
    [worker] = server.workers()
    follower.kill()  # SIGKILL: it can pass nothing on
    follower.wait()
    assert _gone(worker)
    world.cloud.clear_knobs("hang")


def test_ctrl_z_stops_the_worker_with_its_client_and_fg_continues_both(world: World, server: Server) -> None:
    """In a shell with job control (a terminal's stop signals reach only a process group that is not orphaned)."""
    server.start()
    world.cloud.set_knob("hang", {"labels": ["i2"]})
    command_id = submit(world, world.forma(ITEMS))
    wait_running(world, command_id, "i2")
    shell = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], encoding="utf-8", timeout=60, dimensions=(40, 160),
                          env={**os.environ, **server.env, "TERM": "xterm", "PS1": "$ "})
    try:
        shell.expect_exact("$ ")
        shell.sendline(f"{SVC} command status {command_id} --follow --config {world.agent.config}")
        shell.expect(r"2 of 3 done")
        [worker] = server.workers()
        [client] = Path(f"/proc/{shell.pid}/task/{shell.pid}/children").read_text().split()
        shell.sendcontrol("z")
        shell.expect("Stopped")
        assert _in_state(worker, "T") and _in_state(int(client), "T")
        shell.sendline("fg")
        assert _in_state(worker, "S") and _in_state(int(client), "S")
        world.cloud.clear_knobs("hang")
        shell.expect(f"apply {command_id} succeeded.")
        shell.expect_exact("$ ")
        shell.sendline("exit $?")
        shell.expect(pexpect.EOF)
    finally:
        shell.close(force=True)
        world.cloud.clear_knobs("hang")
    assert shell.exitstatus == 0


def test_a_server_whose_code_changed_refuses_and_the_next_command_starts_a_new_one(world: World,
                                                                                   server: Server) -> None:
    server.start()
    first = server.pid
    module = Path(__import__("svc.cli.render", fromlist=["x"]).__file__)
    seen = module.stat()
    try:
        os.utime(module, ns=(seen.st_atime_ns, seen.st_mtime_ns + 1_000_000_000))
        refused = run_svc("--version", env=server.env)  # run in its own process
        assert refused.returncode == 0 and refused.stdout.startswith("svc version"), refused.stderr
        assert _gone(first)
        server.start()
        second = server.pid
        assert second != first
        os.kill(second, signal.SIGTERM)  # with no command running, it leaves at once
        assert _gone(second, within=10)
        assert server.socket is None
    finally:
        os.utime(module, ns=(seen.st_atime_ns, seen.st_mtime_ns))


def test_off_and_idle(world: World, server: Server) -> None:
    """``SVC_CLI_SERVER=off`` starts no server; one started with ``SVC_CLI_SERVER_IDLE`` leaves after that long
    without a command, and takes its socket with it."""
    alone = run_svc("--version", env={**server.env, "SVC_CLI_SERVER": "off"})
    assert alone.returncode == 0
    time.sleep(0.5)
    assert not server.directory.exists() or server.socket is None

    server.env["SVC_CLI_SERVER_IDLE"] = "1"
    server.start()
    pid = server.pid
    assert _gone(pid)
    assert server.socket is None


def test_a_command_ends_as_it_would_have_when_its_server_dies_meanwhile(world: World, server: Server) -> None:
    """The worker tells its client how the command ended: a server killed while it runs takes nothing with it."""
    server.start()
    with _following(world, server) as (command_id, follower):
        [worker] = server.workers()
        os.kill(server.pid, signal.SIGKILL)
        out, err = _released(world, follower)
    assert follower.returncode == 0, out + err
    assert f"apply {command_id} succeeded." in out and not err, out + err
    assert _gone(worker)


def test_each_command_borrows_the_servers_pkl_server_which_waitsstopped_within(world: World, server: Server) -> None:
    """The server lends one Pkl server to each command in turn: it evaluates with the command's environment, waits
    stopped between commands, is replaced once lost, and goes with the server, even killed."""
    server.start()
    pkl = server.pkl()
    forma = world.forma('new item.Item { label = "g"; value = read("env:GREETING") }\n')  # evaluated every time
    for greeting in ("hello", "hi"):
        evaluated = world.svc("eval", str(forma), "--output-consumer", "machine",
                              env={**server.env, "GREETING": greeting})
        assert evaluated.returncode == 0, evaluated.stderr
        assert f'"Value":"{greeting}"' in evaluated.stdout.replace(" ", ""), evaluated.stdout
        server.spare()  # the command's worker has ended
        assert server.pkl() == pkl and stopped_within(pkl)
    os.kill(pkl, signal.SIGKILL)  # lost between commands: the next one evaluates in a server of its own
    evaluated = world.svc("eval", str(forma), "--output-consumer", "machine", env={**server.env, "GREETING": "yo"})
    assert evaluated.returncode == 0 and '"yo"' in evaluated.stdout, evaluated.stderr
    assert _gone(pkl)
    replaced = server.pkl(other_than=pkl)
    evaluated = world.svc("eval", str(forma), "--output-consumer", "machine", env={**server.env, "GREETING": "hey"})
    assert evaluated.returncode == 0 and '"hey"' in evaluated.stdout, evaluated.stderr
    os.kill(server.pid, signal.SIGKILL)
    assert _gone(replaced)


def test_a_command_right_after_another_borrows_the_pkl_server_the_other_gave_back(world: World,
                                                                                 server: Server) -> None:
    """A script's next line comes as soon as the command before has exited, before its worker's process has: the
    worker gives the Pkl server back before it tells its client, so the next command evaluates in it (the lent
    server's CPU grows with each evaluation) rather than in one of its own."""
    server.start()
    pkl = server.pkl()
    world.svc("--version", env=server.env)
    for edit in range(4):
        forma = world.forma(f'new item.Item {{ label = "w"; value = IntSeq(1, 400000).fold({edit}, (a, b) -> a + b)'
                            '.toString() }\n')  # a new forma each time: evaluated, not kept
        before = _cpu_ticks(pkl)
        evaluated = world.svc("eval", str(forma), "--output-consumer", "machine", env=server.env)
        assert evaluated.returncode == 0, evaluated.stderr
        assert _cpu_ticks(pkl) > before, f"evaluation {edit} ran in another Pkl server"
    assert server.pkl() == pkl


def test_an_apply_stops_the_pkl_server_it_borrowed_before_it_follows_the_command(world: World,
                                                                                  server: Server) -> None:
    """The borrowed Pkl server's compiler would keep a CPU busy while the agent runs the command: it is stopped as
    soon as the forma is evaluated, while the command still runs."""
    server.start()
    pkl = server.pkl()
    world.cloud.set_knob("hang", {"labels": ["i2"]})
    follower = subprocess.Popen([SVC, "apply", str(world.forma(ITEMS)), "--yes", "--wait", "--config",
                                 str(world.agent.config)], env={**os.environ, **ENV, **server.env},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not world.inventory() and time.monotonic() < deadline:  # i0 and i1 are created, i2 hangs
            time.sleep(0.05)
        assert follower.poll() is None and server.workers()
        assert server.pkl() == pkl and stopped_within(pkl, within=1)
    finally:
        world.cloud.clear_knobs("hang")
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, out + err


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


@contextmanager
def _evaluating_slowly(world: World, server: Server, pkl: int) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``svc eval`` of a forma that keeps the lent Pkl server ``pkl`` busy for seconds, once it has evaluated a
    while: the client and its worker; the client is killed on the way out."""
    slow = world.forma('new item.Item { label = "s"; value = IntSeq(1, 300000000).fold(0, (a, b) -> a + b).toString() }\n',
                       name="slow.pkl")
    client = subprocess.Popen([SVC, "eval", str(slow)], env={**os.environ, **ENV, **server.env},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        started = _cpu_ticks(pkl)
        deadline = time.monotonic() + 30
        while _cpu_ticks(pkl) < started + 30 and time.monotonic() < deadline:
            time.sleep(0.01)
        [worker] = server.workers()
        yield client, worker
    finally:
        client.kill()
        client.wait()


def test_a_command_killed_while_its_pkl_server_evaluates_leaves_the_next_one_a_new_server(world: World,
                                                                                          server: Server) -> None:
    """A client killed mid-evaluation has its worker hung up on: the Pkl server it borrowed is in the middle of a
    conversation nobody will finish, so it is not lent again; the next command evaluates in a new one."""
    server.start()
    pkl = server.pkl()
    with _evaluating_slowly(world, server, pkl) as (client, worker):
        assert client.poll() is None, "the evaluation ended before the client was killed"
    assert _gone(worker) and _gone(pkl)
    replaced = server.pkl(other_than=pkl)
    quick = world.forma('new item.Item { label = "q"; value = "quick" }\n', name="quick.pkl")
    evaluated = world.svc("eval", str(quick), "--output-consumer", "machine", env=server.env)
    assert evaluated.returncode == 0 and '"quick"' in evaluated.stdout, evaluated.stderr
    assert server.pkl() == replaced


def test_a_worker_ended_by_a_signal_ends_its_client_by_the_same_signal(world: World, server: Server) -> None:
    """As a shell sees a command killed in its own process: the exit status says the signal."""
    server.start()
    with _evaluating_slowly(world, server, server.pkl()) as (client, worker):
        os.kill(worker, signal.SIGKILL)
        assert client.wait(timeout=30) == -signal.SIGKILL
