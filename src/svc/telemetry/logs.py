"""The agent's Python log records, exported as OTLP log records.

Our own bridge rather than the SDK's ``LoggingHandler``: that one copies every attribute of the record
(``extra`` included) and the exception's text; this one sends the redacted message, the logger's name,
the code location and the exception's type and redacted traceback, and the current span's context so
that a command's log lines sit in its trace.
"""

from __future__ import annotations

import logging
import traceback

from opentelemetry._logs import Logger, SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider

from svc.telemetry.redaction import Redactor

# The exporters' own complaints (a collector down) must not be exported through themselves.
_IGNORED_LOGGERS = ("opentelemetry", "urllib3", "grpc", "requests")
_SEVERITY = ((logging.CRITICAL, SeverityNumber.FATAL, "FATAL"), (logging.ERROR, SeverityNumber.ERROR, "ERROR"),
             (logging.WARNING, SeverityNumber.WARN, "WARN"), (logging.INFO, SeverityNumber.INFO, "INFO"),
             (logging.DEBUG, SeverityNumber.DEBUG, "DEBUG"))


def severity(level: int) -> tuple[SeverityNumber, str]:
    for threshold, number, text in _SEVERITY:
        if level >= threshold:
            return number, text
    return SeverityNumber.TRACE, "TRACE"


class OTelLogHandler(logging.Handler):
    def __init__(self, provider: LoggerProvider, redactor: Redactor, level: int = logging.INFO) -> None:
        super().__init__(level)
        self._provider = provider
        self._redact = redactor
        self._loggers: dict[str, Logger] = {}

    def _logger(self, name: str) -> Logger:
        logger = self._loggers.get(name)
        if logger is None:
            logger = self._loggers[name] = self._provider.get_logger(name)
        return logger

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(_IGNORED_LOGGERS):
            return
        try:
            number, text = severity(record.levelno)
            attributes: dict[str, str | int] = {"code.function.name": record.funcName,
                                                "code.line.number": record.lineno, "code.file.path": record.pathname}
            if record.exc_info and record.exc_info[0] is not None:
                attributes["exception.type"] = record.exc_info[0].__name__
                attributes["exception.stacktrace"] = self._redact("".join(traceback.format_exception(
                    *record.exc_info)))
            self._logger(record.name).emit(timestamp=int(record.created * 1e9), severity_number=number,
                                           severity_text=text, body=self._redact(record.getMessage()),
                                           attributes=attributes)
        except Exception:  # noqa: BLE001 - logging must never raise into the caller
            self.handleError(record)
