"""A CLI server's worker (``svc.cli.worker.work``) as it ends: its client hears the exit code, and whoever reads
the command's output sees its end then, not once the worker's process is gone (tearing down a worker's memory takes
milliseconds, which a pipe's reader, `svc apply | tee log`, waited for)."""

from __future__ import annotations

import os
import select
import socket
import time

import pytest

from svc.cli import worker
from svc.handoff import EXITED, read_record

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a worker")


def test_the_output_ends_when_the_exit_code_is_told_not_when_the_worker_is_gone() -> None:
    stdin_read, stdin_write = os.pipe()
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    client, worker_end = socket.socketpair()
    server_end, report_end = socket.socketpair()  # what the worker wrote goes to the server, after the exit code
    request = ("key", ["--version"], dict(os.environ), os.getcwd(), 0o022, [("utf-8", "strict")] * 3)
    pid = os.fork()
    if pid == 0:  # the worker, whose process lingers for 5 s after telling its exit code
        exit_now = os._exit
        os._exit = lambda code: (time.sleep(5), exit_now(code))  # type: ignore[assignment]
        try:
            client.close()
            server_end.close()
            for descriptor in (stdin_write, out_read, err_read):
                os.close(descriptor)
            worker.work(request, [stdin_read, out_write, err_write], worker_end, report_end)
        finally:
            exit_now(1)
    try:
        worker_end.close()
        report_end.close()
        for descriptor in (stdin_read, out_write, err_write):
            os.close(descriptor)
        kind, code = read_record(client)
        assert (kind, code) == (EXITED, 0)
        output, ended = b"", False
        deadline = time.monotonic() + 2
        while not ended and select.select([out_read], [], [], max(deadline - time.monotonic(), 0))[0]:
            chunk = os.read(out_read, 4096)
            output += chunk
            ended = not chunk
        assert ended, "no end of the output within 2 s of the exit code"
        assert output.startswith(b"svc version"), output
        assert os.waitpid(pid, os.WNOHANG) == (0, 0)  # the worker is still there
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        client.close()
        server_end.close()
        for descriptor in (stdin_write, out_read, err_read):
            os.close(descriptor)
