"""The answers that list a command's every resource update (its plan at submission, its status), rendered update by
update and streamed.

Built whole, such an answer held every update four times at once: its record (or planned change), a pydantic view,
the document as one dict and its JSON text. For 100,000 resources that was most of the agent's peak memory. Here
each update's view is rendered to its JSON text as it is read (a command's records a page at a time,
``queries.StoredUpdates``) and dropped; only the texts are kept, put in the answer's order and sent in chunks.
Everything is read before the answer starts, so a datastore outage still answers 503.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from operator import itemgetter
from typing import Any

from fastapi.responses import StreamingResponse

from svc import jsontext
from svc.api.command_views import (
    change_view,
    command_view,
    submit_response,
    update_progress,
    update_summary,
    update_view,
)
from svc.engine.command_records import shown_change
from svc.engine.service import Caller, StoredCommand, Submission
from svc.model.records import ResourceUpdateRecord

_ITEMS_PER_CHUNK = 1000  # array items sent per chunk of the body


class Rendered(list[str]):
    """The JSON texts of an array's items, in order. Kept as str: orjson's bytes keep a 4 KiB buffer however short
    the text (100,000 of them held 400 MB)."""


# Part of an answer: its text, or an array's rendered items (joined with commas as they are sent).
Part = bytes | Rendered


def status_parts(commands: Sequence[StoredCommand]) -> list[Part]:
    """``{"Commands": [each command's view]}``; reads the commands' updates (run it on a worker thread)."""
    documents = []
    for stored in commands:
        document = command_view(stored.record, ()).to_json()
        document["ResourceUpdates"] = _stored_updates(stored)
        if stored.update_counts is not None:
            document["UpdateCounts"] = dict(stored.update_counts)
        documents.append(document)
    return json_parts({"Commands": documents})


def submit_parts(submission: Submission, caller: Caller) -> list[Part]:
    """``command_views.submit_response`` (run it on a worker thread)."""
    document = submit_response(submission, caller, with_updates=False).to_json()
    plan = (document.get("Simulation") or {}).get("Command")
    if plan is not None:
        shown = submission.shown or (shown_change(change) for change in submission.changeset.resources)
        plan["ResourceUpdates"] = _rendered(change_view(change, "NotStarted").to_json() for change in shown)
    return json_parts(document)


def _stored_updates(stored: StoredCommand) -> Rendered:
    """The JSON text of each of the command's update views, in the view's order."""
    render = (update_progress if stored.progress else update_summary) if stored.summary else update_view
    texts = [(_order(record), jsontext.dumps(render(record).to_json())) for record in stored.updates]
    texts.sort(key=itemgetter(0))  # stable: equal keys keep the datastore's (ksuid) order, as before
    return Rendered(text for _, text in texts)


def _rendered(items: Iterable[Any]) -> Rendered:
    return Rendered(jsontext.dumps(item) for item in items)


def _order(record: ResourceUpdateRecord) -> tuple[Any, ...]:
    return record.stack_label, record.resource_type, record.resource_label, record.operation


def json_parts(value: Any) -> list[Part]:
    """``value`` as JSON, in parts: each ``Rendered`` in it is an array of its texts, the rest is encoded here."""
    parts: list[Part] = []
    _encode(value, parts)
    return parts


def _encode(value: Any, parts: list[Part]) -> None:
    if isinstance(value, Rendered):
        parts += [b"[", value, b"]"]
    elif isinstance(value, dict) and _holds_rendered(value):
        for position, (name, member) in enumerate(value.items()):
            parts.append((b"," if position else b"{") + _text(name) + b":")
            _encode(member, parts)
        parts.append(b"}")
    elif isinstance(value, list) and _holds_rendered(value):
        for position, item in enumerate(value):
            parts.append(b"," if position else b"[")
            _encode(item, parts)
        parts.append(b"]")
    else:
        parts.append(_text(value))


def _holds_rendered(value: Any) -> bool:
    if isinstance(value, Rendered):
        return True
    if isinstance(value, dict):
        return any(_holds_rendered(member) for member in value.values())
    if isinstance(value, list):
        return any(isinstance(item, dict | list) and _holds_rendered(item) for item in value)
    return False


def _text(value: Any) -> bytes:
    return jsontext.dumps(value).encode()  # a bytes object of its own size (see ``Rendered``)


def streamed(parts: list[Part], status_code: int = 200, headers: dict[str, str] | None = None) -> StreamingResponse:
    return StreamingResponse(chunks(parts), status_code=status_code, media_type="application/json", headers=headers)


async def chunks(parts: list[Part]) -> AsyncIterator[bytes]:
    """The parts as a few chunks: a small answer is one."""
    chunk = bytearray()
    for part in parts:
        if not isinstance(part, Rendered):
            chunk += part
            continue
        for start in range(0, len(part), _ITEMS_PER_CHUNK):
            if start:
                chunk += b","
            chunk += ",".join(part[start:start + _ITEMS_PER_CHUNK]).encode()
            yield bytes(chunk)
            chunk.clear()
    if chunk:
        yield bytes(chunk)
