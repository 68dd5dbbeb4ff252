"""Execution-time references: each ``$ref`` gets its producer's current value before the plugin call.

The value comes from the producer's state, which the DAG guarantees is final for this command: its create
or update finished first, and this command's own result is used as soon as the plugin answered (its write
is queued ahead of the dependent's; see ``executor``). A secret is stored only as a hash, so a reference
to one is answered by a live Read of the producer (``read_live``). ``$json`` extracts a path from a
JSON string value; a ``SetOnce`` reference that has a value keeps it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from svc.model import values

Json = dict[str, Any]


class Producer(Protocol):
    """What a reference reads of the resource it points to: a stored version, or the state a change of this
    command is writing (``ResourceVersion`` and ``ResourceWrite`` both are)."""

    @property
    def type(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def stack(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def native_id(self) -> str | None: ...
    @property
    def properties(self) -> Mapping[str, Any]: ...
    @property
    def read_only_properties(self) -> Mapping[str, Any]: ...


LoadResource = Callable[[str], Awaitable[Producer | None]]
ReadLive = Callable[[Producer], Awaitable[Json | None]]


class ResolveError(Exception):
    pass


class Resolver:
    def __init__(self, load: LoadResource, read_live: ReadLive, live: dict[str, Json | None] | None = None) -> None:
        self._load = load
        self._read_live = read_live
        self._live = {} if live is None else live  # ksuid → its live read; a caller's dict shares them
        self._secrets: set[str] = set()  # the references (URIs) whose producer holds a secret there
        self._hashes: dict[str, str] = {}  # their producer's stored hash of that secret, by URI
        self._places: dict[str, list[list[Any]]] = {}  # where a referenced object holds its secrets, by URI

    async def value(self, uri: str) -> Any:
        ksuid, path = values.split_uri(uri)
        producer = await self._load(ksuid)
        if producer is None:
            raise ResolveError(f"could not resolve reference {uri!r}: the referenced resource does not exist")
        stored = _stored_at(producer.properties, path)
        if values.contains_hash(stored) or values.is_opaque(stored):  # a secret, or an object holding one
            self._secrets.add(uri)
            if (digest := _stored_hash(stored)) is not None:
                self._hashes[uri] = digest
            if places := [place for place in values.secret_places(stored) if place]:
                self._places[uri] = places
        for document in (producer.read_only_properties, producer.properties):
            try:
                found = values.get_path(values.plain_known(dict(document)), path)
            except KeyError:
                continue
            if not values.contains_unresolved(found):
                return found
            break
        if ksuid not in self._live:
            self._live[ksuid] = await self._read_live(producer)
        live = self._live[ksuid]
        try:
            return values.get_path(live or {}, path)
        except KeyError:
            raise ResolveError(f"could not resolve reference {uri!r}: {producer.stack}/{producer.type}/"
                               f"{producer.label} has no property {path!r}") from None

    async def resolve(self, properties: Json) -> Json:
        """``properties`` with every reference's ``$value`` filled in."""
        cache: dict[str, Any] = {}
        for _, ref in values.iter_refs(properties):
            uri = ref["$ref"]
            if uri not in cache:
                cache[uri] = await self.value(uri)

        return values.map_refs(properties, lambda ref: _filled(ref, cache, ref["$ref"] in self._secrets,
                                                               self._hashes.get(ref["$ref"]),
                                                               self._places.get(ref["$ref"])))


def _stored_at(properties: Mapping[str, Any], path: str) -> Any:
    """What a producer stores at ``path`` (secrets only hashed, or as Opaque values); None when nothing."""
    try:
        return values.get_path(dict(properties), path)
    except KeyError:
        return None


def _filled(ref: Json, cache: dict[str, Any], secret: bool, source: str | None = None,
            places: list[list[Any]] | None = None) -> Json:
    """A reference with its value (a SetOnce reference keeps the value it has, unless only its hash). The
    value of a secret is one to the consumer too: it is hashed wherever the consumer's state is stored.

    A path into a secret (``$json``) also keeps the producer's hash of the whole secret (``$of``): the
    planner, which knows only hashes, cannot tell the part from the whole, but can tell the secret has not
    changed since this value was taken from it. A whole object that holds secrets keeps where they are
    (``$secrets``): it is hashed with each secret as its own hash, as the planner can compute it from the
    producer's stored state (``values.stored_digest``)."""
    if values.is_set_once(ref) and ref.get("$value") is not None and not ref.get("$hashed"):
        return ref
    value = cache[ref["$ref"]]
    if "$json" in ref:
        value = _json_path(value, str(ref["$json"]), ref["$ref"])
    filled = {k: v for k, v in ref.items() if k not in ("$hashed", "$of", "$secrets")} | {"$value": value}
    if secret and "$json" in ref and source is not None:
        filled["$of"] = source
    elif secret and places:
        filled["$secrets"] = places
    return filled | {"$visibility": "Opaque"} if secret else filled


def _stored_hash(found: Any) -> str | None:
    """The hash a producer stores of the secret it stores as ``found`` (of an object holding secrets: see
    ``values.stored_digest``); None when it stores none there."""
    if isinstance(found, dict) and found.get("$hashed"):
        return found.get("$value")
    return values.stored_digest(found) if values.contains_hash(found) else None



def _json_path(value: Any, path: str, uri: str) -> Any:
    try:
        document = json.loads(value) if isinstance(value, str) else value
        return values.get_path(document, path.removeprefix("$.").removeprefix("$"))
    except (ValueError, KeyError) as error:
        raise ResolveError(f"could not resolve reference {uri!r}: no {path!r} in its JSON value") from error
