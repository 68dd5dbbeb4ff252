"""Resource requests: the asynchronous side of the API (request tokens, ProgressEvents, IN_PROGRESS → done).

A request's outcome is decided when it is accepted (the model it will leave, or the error it will fail with)
and takes effect when it completes: after ``Timing.polls`` GetResourceRequestStatus calls that answered
IN_PROGRESS, and no sooner than ``Timing.milliseconds`` after it was accepted. With ``polls`` at 0 a request
also completes on any other call once its time is up, as the real service finishes work nobody polls for.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .registry import Json

TERMINAL = frozenset({"SUCCESS", "FAILED", "CANCEL_COMPLETE"})


@dataclass
class Timing:
    """How long a request stays IN_PROGRESS."""

    polls: int = 1
    milliseconds: int = 0


@dataclass
class Request:
    token: str
    type_name: str
    operation: str  # CREATE, UPDATE, DELETE
    identifier: str | None
    fingerprint: Any  # what was asked, to tell a retried ClientToken from a reused one
    client_token: str | None = None
    status: str = "IN_PROGRESS"
    accepted: float = field(default_factory=time.time)
    event_time: float = field(default_factory=time.time)
    polls: int = 0
    # The decided outcome: the stored model afterwards (None: deleted) or the failure.
    result: Json | None = None
    error_code: str | None = None
    status_message: str | None = None
    shown_model: Json | None = None  # the ResourceModel a done request shows (write-only values left out)

    def due(self, timing: Timing, *, polled: bool) -> bool:
        if self.status in TERMINAL:
            return False
        waited = (time.time() - self.accepted) * 1000 >= timing.milliseconds
        if polled:
            return waited and self.polls > timing.polls
        return waited and timing.polls == 0

    def event(self) -> Json:
        """The ProgressEvent shape."""
        event: Json = {"TypeName": self.type_name, "RequestToken": self.token, "Operation": self.operation,
                       "OperationStatus": self.status, "EventTime": self.event_time}
        if self.identifier is not None:
            event["Identifier"] = self.identifier
        if self.status in TERMINAL and self.shown_model is not None:
            event["ResourceModel"] = json.dumps(self.shown_model)
        if self.status_message:
            event["StatusMessage"] = self.status_message
        if self.status == "FAILED" and self.error_code:
            event["ErrorCode"] = self.error_code
        return event


def new_token() -> str:
    return str(uuid.uuid4())
