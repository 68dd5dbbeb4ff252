"""``svc agent start`` and ``svc agent stop``."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import FrameType

import uvicorn

from svc import __version__
from svc.agent.allocator import limit_arenas
from svc.agent.errors import AgentError
from svc.agent.logs import configure_logging
from svc.agent.pidfile import is_alive, remove_pid, running_pid, write_pid
from svc.api import AgentInfo, create_app
from svc.collector import tune_collector
from svc.config import AgentConfig, load_config
from svc.config.passwords import is_bcrypt_hash
from svc.datastore import Datastore, DatastoreError, claim_single_agent, open_datastore
from svc.engine import Engine as SvcEngine
from svc.engine import build_engine
from svc.engine.leadership import Leadership, LeaseHolder, SoleLeader, advertised_url
from svc.engine.sealing import is_sealing_key
from svc.ids import persistent_id
from svc.paths import data_dir, pid_file
from svc.pkl import stop_shared_server
from svc.plugins.installed import installed_plugins
from svc.plugins.runner import PluginLoadError
from svc.telemetry import start_telemetry, telemetry_problem

log = logging.getLogger("svc.agent")

# Lets tests run an agent that reports another version, to exercise the CLI's strict version check.
TEST_VERSION_OVERRIDE = "SVC_TESTING_AGENT_VERSION"
STOP_TIMEOUT_SECONDS = 10.0
# How long a thread keeps the GIL while another waits for it (CPython's default: 5 ms). The event loop shares the
# process with the commit thread and the API's worker threads, which run Python (SQLAlchemy, planning, status
# documents) while plugin answers arrive; each answer the loop woke for waited up to the whole interval.
SWITCH_INTERVAL = 0.0005


class _Server(uvicorn.Server):
    """uvicorn re-raises SIGINT/SIGTERM after shutting down, which kills the process before our
    clean-up runs; here a signal only asks the server to stop (a second one forces it). A leader hands its lease
    over at once, while uvicorn still lets the requests under way finish."""

    def __init__(self, config: uvicorn.Config, leadership: Leadership) -> None:
        super().__init__(config)
        self._leadership = leadership
        self._handing_over: asyncio.Task[None] | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # A signal handler may run in the middle of the event loop's own code: the hand-over starts on its next turn.
        asyncio.get_running_loop().call_soon_threadsafe(self._hand_over)

    def _hand_over(self) -> None:
        if self._handing_over is None:
            self._handing_over = asyncio.get_running_loop().create_task(self._leadership.step_down())

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def check_agent_config(config: AgentConfig) -> None:
    """Refuses settings the agent must not run with (Pkl has checked types and ranges already)."""
    if config.auth is not None:
        for index, user in enumerate(config.auth.authorized_users):
            if not is_bcrypt_hash(user.password):
                raise AgentError(
                    f"agent.auth.authorizedUsers[{index}] ({user.username}): the password is not a bcrypt hash; "
                    "plain-text passwords are refused. Generate a hash with: svc auth hash-password"
                )
    server = config.server
    if bool(server.tls_cert) != bool(server.tls_key):
        raise AgentError("agent.server.tlsCert and agent.server.tlsKey must be set together")
    for field, value in (("tlsCert", server.tls_cert), ("tlsKey", server.tls_key)):
        if value and not Path(value).expanduser().is_file():
            raise AgentError(f"agent.server.{field}: file {value} does not exist")
    if (problem := telemetry_problem(config.o_tel)) is not None:
        raise AgentError(problem)
    if config.sealing_key is not None and not is_sealing_key(config.sealing_key):
        raise AgentError("agent.sealingKey is not a Fernet key (32 url-safe base64-encoded bytes); generate one with: "
                         "python3 -c \"import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())\"")
    leadership = config.leadership
    if leadership.renew_interval >= leadership.lease_duration:
        raise AgentError(f"agent.leadership.renewInterval ({leadership.renew_interval.total_seconds():g}s) must be "
                         f"shorter than leaseDuration ({leadership.lease_duration.total_seconds():g}s)")


def listen(host: str, port: int) -> socket.socket:
    """The agent's listening socket, bound before anything slow starts (a taken port fails at once)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on connections of a socket that says it is TCP.
    # Without it Nagle held each answer's body until the client acknowledged its headers, which the client delays
    # up to 40 ms: every answer took 40 ms more, 4 of them in a `svc apply --wait`.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise AgentError(
                f"port {port} is already in use; stop what listens there or set agent.server.port"
            ) from exc
        raise AgentError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _claim_datastore(config: AgentConfig, claims: contextlib.ExitStack) -> None:
    """On SQLite, makes this agent the file's only one until ``claims`` closes or the process ends (the server
    backends elect a leader instead); a second agent on the file fails here, before touching the database."""
    try:
        claims.enter_context(claim_single_agent(config.datastore))
    except DatastoreError as error:
        raise AgentError(str(error)) from error


def _open_datastore(config: AgentConfig, agent_id: str) -> Datastore:
    """Connects to the datastore and migrates it; any failure is one line naming the setting. The sessions carry
    the agent's id (PostgreSQL's ``application_name``): with several agents on one database, who wrote what shows."""
    log.info("opening the %s datastore", config.datastore.datastore_type)
    try:
        return open_datastore(config.datastore, application_name=f"svc-agent-{agent_id}")
    except DatastoreError as error:
        raise AgentError(f"cannot open the datastore: {error}") from error


def _build_engine(config: AgentConfig, datastore: Datastore, info: AgentInfo) -> SvcEngine:
    """The engine with the enabled plugins loaded; the API starts it before serving and stops it after."""
    try:
        return build_engine(config, datastore, agent_id=info.agent_id, agent_version=info.version)
    except PluginLoadError as error:
        raise AgentError(str(error)) from error


def _leadership(config: AgentConfig, datastore: Datastore, engine: SvcEngine, agent_id: str) -> Leadership:
    """An SQLite datastore's agent leads alone; agents sharing PostgreSQL or Aurora lead by its lease."""
    url = advertised_url(config)
    if datastore.backend == "sqlite":
        return SoleLeader(engine, agent_id, url)

    def set_gate(check: Callable[[], Awaitable[None]] | None) -> None:
        engine.gateway.gate.check = check

    return LeaseHolder(engine, datastore, config.leadership, agent_id, url, set_gate=set_gate)


def start_agent(config_path: Path) -> None:
    """Runs the agent in the foreground until SIGINT or SIGTERM."""
    limit_arenas()  # before any thread starts
    config = load_config(config_path).agent
    check_agent_config(config)
    pid_path = pid_file()
    if (pid := running_pid(pid_path)) is not None:
        raise AgentError(f"an agent is already running (PID {pid}); stop it with: svc agent stop")
    sock = listen(config.server.bind_address, config.server.port)
    log_file = configure_logging(config.logging)
    claims = contextlib.ExitStack()
    _claim_datastore(config, claims)
    info = AgentInfo(
        version=os.environ.get(TEST_VERSION_OVERRIDE) or __version__,
        agent_id=persistent_id(data_dir() / "agent_id"),
        plugin_versions={plugin.namespace.upper(): plugin.version for plugin in installed_plugins()},
    )
    datastore = _open_datastore(config, info.agent_id)
    telemetry = start_telemetry(config, agent_id=info.agent_id, version=info.version, counts=datastore.counts)
    engine = _build_engine(config, datastore, info)
    leadership = _leadership(config, datastore, engine, info.agent_id)
    app = create_app(config, info, datastore, engine, leadership)
    # Pkl was needed for the config and the plugins' schemas only (another use starts it again); left running,
    # its idle server would hold about 40 MB for the agent's lifetime.
    stop_shared_server()
    telemetry.mount(app)
    server = _Server(leadership=leadership, config=uvicorn.Config(
        app,
        ssl_certfile=config.server.tls_cert and str(Path(config.server.tls_cert).expanduser()),
        ssl_keyfile=config.server.tls_key and str(Path(config.server.tls_key).expanduser()),
        log_config=None,
        access_log=False,
        # Not uvloop, which uvicorn would take if it were installed: its transports can lose the peer of a socket
        # closed early (uvloop issue 560), and a request forwarded to a leader that was stopping then failed with
        # an AttributeError inside httpx instead of a connection error the follower answers 503 to.
        loop="asyncio",
        timeout_graceful_shutdown=int(STOP_TIMEOUT_SECONDS),
    ))
    write_pid(pid_path)
    tune_collector()
    sys.setswitchinterval(SWITCH_INTERVAL)
    scheme = "https" if config.server.tls_enabled else "http"
    log.info("svc agent %s (id %s) listening on %s://%s:%d; logs in %s", info.version, info.agent_id, scheme,
             config.server.bind_address, config.server.port, log_file)
    try:
        server.run(sockets=[sock])
        if app.state.startup_error is not None:
            raise AgentError(f"the engine failed to start: {app.state.startup_error}")
    finally:
        remove_pid(pid_path)
        sock.close()
        telemetry.shutdown()  # flushes the last spans, metrics and log records; reads resource counts
        datastore.close()
        claims.close()
        log.info("svc agent stopped")


def stop_agent() -> int:
    """Sends SIGTERM to the running agent and waits for it to exit; returns its PID."""
    pid_path = pid_file()
    pid = running_pid(pid_path)
    if pid is None:
        raise AgentError(f"the agent is not running (no live PID in {pid_path})")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if running_pid(pid_path) is None or not is_alive(pid):
            return pid
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    pid_path.unlink(missing_ok=True)
    return pid

