"""The test side of ``engine_worker --serve``: an engine in a child process that a test can SIGKILL.

``EngineProcesses`` keeps one spare worker that has already imported everything (a cold start costs
seconds of imports on a loaded machine), so replacing a killed engine costs only the engine's own start,
which is where recovery happens.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]


class WorkerDied(RuntimeError):
    pass


class EngineProcess:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise WorkerDied(f"engine worker exited with {self.process.wait()}")
        return line

    def start(self, db: Path, key: Path, in_flight: int) -> None:
        self._send({"db": str(db), "key": str(key), "in_flight": in_flight})
        while not self._line().startswith("started"):
            pass

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, op: str, **arguments: Any) -> dict[str, Any]:
        self._send({"op": op, **arguments})
        return json.loads(self._line())

    def submit(self, op: str, **arguments: Any) -> None:
        """Sends a request without reading its answer (the process is about to be killed)."""
        self._send({"op": op, **arguments})

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


class EngineProcesses:
    """Starts engines on one datastore, one at a time, always with a spare warmed up."""

    def __init__(self, db: Path, key: Path, log: Path, in_flight: int = 8) -> None:
        self.db, self.key, self.log, self.in_flight = db, key, log, in_flight
        self._spare: subprocess.Popen[str] | None = None

    def _spawn(self) -> subprocess.Popen[str]:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
        with open(self.log, "a") as log:
            return subprocess.Popen([sys.executable, "-m", "support.engine_worker", "--serve"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=log, text=True, env=env)

    def start(self) -> EngineProcess:
        process = self._spare or self._spawn()
        self._spare = self._spawn()
        engine = EngineProcess(process)
        engine.start(self.db, self.key, self.in_flight)
        return engine

    def close(self) -> None:
        if self._spare is not None:
            self._spare.kill()
            self._spare.wait()
            self._spare = None
