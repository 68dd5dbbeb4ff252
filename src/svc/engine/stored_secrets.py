"""Secrets an earlier version stored in clear, hashed when the agent starts leading.

Every write hashes a type's secrets where its schema, as the running plugin declares it, places them. Rows
written before may hold some in clear: svc before secrets at any depth were hashed kept a nested secret given as
a plain string as it was, and a plugin whose new schema declares a field secret leaves the values stored under
the old one. So when an agent starts leading, each stored type whose schema declares secrets is walked once for
the secrets it declares (``Datastore.rewrite_stored_documents``: every version of its resources, the changes of
past commands and their progress), and the walk is recorded with those secrets' paths as a background run
(kind ``stored-secrets``, scoped by type). A type is walked again only when its schema's secrets change.

Hashing is idempotent, so a walk interrupted (a crash, an outage) is simply done again at the next start, and a
value that is hashed already stays as it is: the plan compares a secret with its hash, so a forma that names the
same secret plans nothing afterwards.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from svc.datastore.interface import Datastore
from svc.engine.planner import Catalog
from svc.engine.planner.diff import hash_stored_patch
from svc.model import values
from svc.model.opaque import OpaqueFields, opaque_fields
from svc.model.records import RunState

log = logging.getLogger("svc.engine")

Json = dict[str, Any]
RUN_KIND = "stored-secrets"
# Only the leader walks (``Engine.lead``; its writes are fenced by the lease), so a walk still marked running was
# left by an agent that died or lost the lease: the new leader takes it over at once.
_TAKE_OVER = timedelta(0)


@dataclass(frozen=True)
class HashedAtRest:
    """The stored documents of one type with every secret its schema places (``opaque``) hashed."""

    opaque: OpaqueFields

    def properties(self, properties: Json) -> Json:
        return values.hash_secrets(properties, self.opaque) if properties else properties

    def change(self, change: Json) -> Json:
        hashed = dict(change)
        for side in ("desired", "prior"):
            if isinstance(change.get(side), dict):
                hashed[side] = values.hash_secrets(change[side], self.opaque)
        for patch in ("patch", "create_only_patch"):
            if isinstance(change.get(patch), list):
                hashed[patch] = hash_stored_patch(change[patch], change.get("desired") or {}, self.opaque)
        return hashed

    def update_data(self, data: Json) -> Json:
        progress = data.get("progress")
        if not isinstance(progress, dict) or not isinstance(progress.get("ResourceProperties"), dict):
            return data
        hashed = values.hash_secrets(progress["ResourceProperties"], self.opaque)
        return {**data, "progress": {**progress, "ResourceProperties": hashed}}


def hash_stored_secrets(store: Datastore, catalog: Catalog) -> dict[str, int]:
    """Walks each stored type whose secrets (as the catalog's schema declares them) were not walked for yet;
    the rows rewritten, by type. Types no running plugin serves are left until one does."""
    rewritten: dict[str, int] = {}
    for type_ in sorted(store.stored_types()):
        try:
            schema = catalog.types.get(type_)
        except ValueError as error:  # a plugin's schema that does not validate: its commands are refused too
            log.warning("the schema of %s does not validate (%s); its stored rows are looked at again at the next "
                        "start", type_, str(error).splitlines()[0])
            continue
        opaque = opaque_fields(schema) if schema is not None else None
        if opaque is None or not opaque.holds_secret:
            continue
        paths = list(opaque.source)
        done = store.get_run(RUN_KIND, type_)
        if done is not None and done.state == RunState.SUCCEEDED and done.details.get("paths") == paths:
            continue
        run_id = store.begin_run(RUN_KIND, type_, stale_after=_TAKE_OVER)
        if run_id is None:  # a claim made this very instant: left to the next start
            continue
        try:
            count = store.rewrite_stored_documents(type_, HashedAtRest(opaque))
        except BaseException:
            store.finish_run(RUN_KIND, type_, run_id, succeeded=False)
            raise
        store.finish_run(RUN_KIND, type_, run_id, succeeded=True, details={"paths": paths, "rewritten": count})
        if count:
            log.warning("hashed the secrets an earlier version stored in clear in %d stored row(s) of %s", count,
                        type_)
        rewritten[type_] = count
    if any(rewritten.values()):
        store.erase_replaced_rows()  # the clear values' old bytes too
    return rewritten
