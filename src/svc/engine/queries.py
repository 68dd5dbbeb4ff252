"""Reading commands back: one command, a list of them, and the paged reads the engine's other parts share.

Every function is synchronous (SQL): the service runs them on a worker thread. What is read is returned as
stored (``StoredCommand``); the API renders it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from svc.datastore.interface import Datastore
from svc.datastore.query import COMMAND_FIELDS, parse_query
from svc.engine.service import Caller, StoredCommand
from svc.model.records import CommandRecord, Page, ResourceUpdateRecord, each_item, every_item
from svc.model.states import TERMINAL_COMMAND_STATES

PAGE = 1000


def updates_of(store: Datastore, command_id: str) -> list[ResourceUpdateRecord]:
    """Every resource update of the command, with its document."""
    return every_item(lambda c: store.get_resource_updates(command_id, cursor=c, limit=PAGE))


@dataclass(frozen=True)
class StoredUpdates:
    """A command's updates (with their documents, or ``summary``: without, as
    ``Datastore.get_resource_update_summaries`` reads them), read a page at a time whenever they are iterated. A
    100,000-update command's status is rendered page by page: its records, held all at once with their views,
    made most of the agent's peak memory."""

    store: Datastore
    command_id: str
    summary: bool = False
    modified_since: datetime | None = None
    with_progress: bool = False  # a summary with each update's progress (``get_resource_update_summaries``)
    first: Page[ResourceUpdateRecord] | None = None  # the first page, read with the command

    def __iter__(self) -> Iterator[ResourceUpdateRecord]:
        return each_item(self.page, self.first)

    def page(self, cursor: str | None) -> Page[ResourceUpdateRecord]:
        if self.summary:
            return self.store.get_resource_update_summaries(
                self.command_id, modified_since=self.modified_since, with_progress=self.with_progress, cursor=cursor,
                limit=PAGE)
        return self.store.get_resource_updates(self.command_id, cursor=cursor, limit=PAGE)


def incomplete_commands(store: Datastore) -> list[CommandRecord]:
    return every_item(lambda c: store.list_incomplete_commands(cursor=c, limit=PAGE))


def read_command(store: Datastore, command_id: str, *, summary: bool = False,
                 updated_since: datetime | None = None, progress: bool = False) -> StoredCommand | None:
    """The command and its updates; ``summary``: the updates without their documents, with ``updated_since``
    only those whose state was written since then (a poll of a 10,000-update command cost a second of the
    agent's CPU with the documents), and once the command has ended, how many of all its updates are in each
    state: what a follower's last poll needs besides the updates written since the one before, instead of
    reading every update again. ``progress``: a summary with each update's progress (a live view's rows)."""
    progress = summary and progress
    updates = StoredUpdates(store, command_id, summary, updated_since, progress)
    with store.snapshot():  # the counts and the first page of updates of the state the command was read in
        command = store.get_command(command_id)
        if command is None:
            return None
        ended = summary and command.state in TERMINAL_COMMAND_STATES
        counts = store.count_resource_update_states(command_id) if ended else None
        updates = replace(updates, first=updates.page(None))
    return StoredCommand(command, updates, summary=summary, progress=progress, update_counts=counts)


def list_commands(store: Datastore, query: str, caller: Caller, *, scope: Literal["client", "agent"],
                  max_results: int, counts: bool = False) -> list[StoredCommand]:
    """The query's matches, else the caller's latest command (``client``) or everyone's (``agent``). ``counts``:
    each command's updates counted by state instead of read (a list of commands shown as a table needs no more;
    read, one command of 20,000 updates made listing the last 50 commands take two seconds)."""
    with store.snapshot():  # the commands and their counts as of one moment, in one read transaction
        if query.strip():
            found = store.list_commands(parse_query(query, COMMAND_FIELDS), client_id=caller.client_id,
                                        limit=max_results).items
        elif scope == "client":
            found = store.list_commands(parse_query("client:me", COMMAND_FIELDS), client_id=caller.client_id,
                                        limit=1).items
        else:
            found = store.list_commands(limit=max_results).items
        if counts:
            return [StoredCommand(command, (), summary=True,
                                  update_counts=store.count_resource_update_states(command.id)) for command in found]
    return [StoredCommand(command, StoredUpdates(store, command.id)) for command in found]
