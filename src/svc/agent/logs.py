"""Agent logging: to the console and to a file, each with its own level."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

from svc.config.model import LoggingConfig, expand_path

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}
_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def configure_logging(config: LoggingConfig) -> Path:
    """Sends ``svc``'s and the HTTP server's logs to the console and the log file; returns the file."""
    log_file = expand_path(config.file_path)
    log_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    console = logging.StreamHandler()
    console.setLevel(_LEVELS[config.console_log_level])
    file = logging.handlers.RotatingFileHandler(log_file, maxBytes=50 * 1024 * 1024, backupCount=5)
    file.setLevel(_LEVELS[config.file_log_level])
    for handler in (console, file):
        handler.setFormatter(logging.Formatter(_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [console, file]
    root.setLevel(min(console.level, file.level))
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    return log_file
