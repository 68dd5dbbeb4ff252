"""``python -m support.cloudcontrol --port N`` (with ``tests/`` on ``sys.path``): the stand-in as a process."""

from __future__ import annotations

import argparse

import uvicorn

from .server import make_app


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m support.cloudcontrol",
                                     description="A Cloud Control API stand-in for tests, on loopback.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    arguments = parser.parse_args()
    uvicorn.run(make_app(), host=arguments.host, port=arguments.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
