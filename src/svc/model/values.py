"""Property envelopes: references, values, templates and secrets, and their plain (plugin) form.

The user's structure is kept in stored state: ``{"$ref": "svc://<ksuid>#/<path>", "$value": v}``
references, ``{"$value": v, "$visibility", "$strategy"}`` values, ``{"$embed": true, "$parts": [...]}``
templates (text and reference parts). Plugins see only plain JSON (``plain``). Secrets (opaque values)
are stored as ``{"$value": sha256, "$visibility": "Opaque", "$hashed": true}`` (``hash_secrets``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from svc.model.opaque import NONE, OpaqueFields

Json = dict[str, Any]
URI_SCHEME = "svc://"
SPAN_START, SPAN_END = "\u001e", "\u001f"
REDACTED = {"$opaque": "redacted"}


class HashedValueError(ValueError):
    """A stored secret hash would reach a plugin as if it were the secret."""


def is_ref(value: Any) -> bool:
    return isinstance(value, dict) and "$ref" in value


def is_res(value: Any) -> bool:
    return isinstance(value, dict) and value.get("$res") is True


def is_embed(value: Any) -> bool:
    return isinstance(value, dict) and value.get("$embed") is True


def is_value(value: Any) -> bool:
    """A ``$value`` envelope that is not a reference (nor a template that holds its read-back value)."""
    return isinstance(value, dict) and "$value" in value and "$ref" not in value and value.get("$embed") is not True


def is_opaque(value: Any) -> bool:
    return isinstance(value, dict) and value.get("$visibility") == "Opaque"


def is_set_once(value: Any) -> bool:
    return isinstance(value, dict) and value.get("$strategy") == "SetOnce"


def resource_uri(ksuid: str, path: str) -> str:
    return f"{URI_SCHEME}{ksuid}#/{path}"


def split_uri(uri: str) -> tuple[str, str]:
    """``svc://<ksuid>#/<path>`` → (ksuid, path)."""
    body = uri.removeprefix(URI_SCHEME)
    ksuid, _, path = body.partition("#/")
    return ksuid, path


def digest(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# -- templates ---------------------------------------------------------------------------------------------

_SPAN = re.compile(f"{SPAN_START}([^{SPAN_END}]*){SPAN_END}")


def parse_template(template: str) -> list[Any]:
    """``"a \\x1e<base64 envelope>\\x1f b"`` → ``["a ", {envelope}, " b"]``; raises ValueError on stray marks."""
    parts: list[Any] = []
    position = 0
    for match in _SPAN.finditer(template):
        if match.start() > position:
            parts.append(template[position:match.start()])
        try:
            envelope = json.loads(base64.b64decode(match.group(1), validate=True))
        except (ValueError, json.JSONDecodeError) as error:
            raise ValueError("a template span is not a base64 JSON reference") from error
        if not isinstance(envelope, dict):
            raise ValueError("a template span is not a reference")
        parts.append(envelope)
        position = match.end()
    rest = template[position:]
    if SPAN_START in rest or SPAN_END in rest:
        raise ValueError("a template has an unterminated reference span")
    if rest:
        parts.append(rest)
    return parts


def assemble(embed: Json) -> Any:
    """The template's string: the provider's value when a read-back stored one that differs from the
    template (``$value``, see ``svc.engine.observed.merge``), else the parts once every reference part has a
    value; None while any is unresolved."""
    if embed.get("$value") is not None:
        return embed["$value"]
    out: list[str] = []
    for part in embed.get("$parts", []):
        if isinstance(part, str):
            out.append(part)
        elif "$value" in part and part["$value"] is not None:
            out.append(part["$value"] if isinstance(part["$value"], str) else json.dumps(part["$value"]))
        else:
            return None
    return "".join(out)


# -- walking -----------------------------------------------------------------------------------------------

def iter_refs(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Json]]:
    """Every ``$ref`` envelope (templates included) with the property path that holds it."""
    # One isinstance per node and the envelope keys tested inline: this walk runs for every resource change.
    if isinstance(value, dict):
        if "$ref" in value:
            yield path, value
        elif value.get("$embed") is True:
            for part in value.get("$parts", []):
                if is_ref(part):
                    yield path, part
        elif "$value" not in value:
            for key, item in value.items():
                yield from iter_refs(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from iter_refs(item, (*path, index))


def ref_uris(properties: Json) -> list[str]:
    return sorted({ref["$ref"] for _, ref in iter_refs(properties)})


def hint_key(path: tuple[Any, ...]) -> str:
    """The schema hint key of a property path: dotted, without list indices."""
    return ".".join(str(step) for step in path if not isinstance(step, int))


def is_envelope(value: Json) -> bool:
    """A reference, value, template or resource envelope: what ``map_envelopes`` converts."""
    return "$ref" in value or "$value" in value or value.get("$embed") is True or value.get("$res") is True


def map_envelopes(value: Any, convert: Callable[[Any], Any]) -> Any:
    """Rebuilds ``value`` with ``convert`` applied to every envelope (refs, values, templates)."""
    if isinstance(value, dict):
        if is_envelope(value):
            return convert(value)
        return {key: map_envelopes(item, convert) for key, item in value.items()}
    if isinstance(value, list):
        return [map_envelopes(item, convert) for item in value]
    return value


def map_refs(value: Any, convert: Callable[[Json], Any]) -> Any:
    """Rebuilds ``value`` with ``convert`` applied to every reference, a template's reference parts included."""

    def envelope(found: Json) -> Any:
        if is_embed(found):
            return {**found, "$parts": [convert(p) if is_ref(p) else p for p in found["$parts"]]}
        return convert(found) if is_ref(found) else found

    return map_envelopes(value, envelope)


# -- plain form --------------------------------------------------------------------------------------------

UNRESOLVED = object()


def plain(value: Any, *, guarded: bool = False, unresolved: Any = None) -> Any:
    """What a plugin sees: envelopes replaced by their values, templates assembled.

    ``guarded`` (what is written to a provider) refuses stored secret hashes; ``unresolved`` stands for a
    reference without a value yet.
    """

    def convert(envelope: Json) -> Any:
        if guarded and envelope.get("$hashed"):
            raise HashedValueError("a stored secret hash cannot be written to the provider")
        if is_embed(envelope):
            text = assemble(envelope)
            return unresolved if text is None else text
        if is_ref(envelope):
            return envelope.get("$value", unresolved) if envelope.get("$value") is not None else unresolved
        if is_res(envelope):
            return unresolved
        return envelope.get("$value")

    return map_envelopes(value, convert)


def plain_known(value: Any) -> Any:
    """``plain`` with secrets (hashes) and unresolved references as ``UNRESOLVED``: values the planner
    may not use as if known."""

    def convert(envelope: Json) -> Any:
        if envelope.get("$hashed") or is_opaque(envelope) or is_res(envelope):
            return UNRESOLVED
        if is_embed(envelope):
            text = assemble(envelope)
            return UNRESOLVED if text is None else text
        found = envelope.get("$value")
        return UNRESOLVED if found is None else found

    return map_envelopes(value, convert)


def any_within(value: Any, found: Callable[[Any], bool]) -> bool:
    """Whether ``found`` holds for ``value`` or for anything nested in its dicts and lists."""
    if found(value):
        return True
    if isinstance(value, dict):
        return any(any_within(v, found) for v in value.values())
    if isinstance(value, list):
        return any(any_within(v, found) for v in value)
    return False


def _is_unresolved(value: Any) -> bool:
    return value is UNRESOLVED


def contains_unresolved(value: Any) -> bool:
    return any_within(value, _is_unresolved)


def split_path(path: str) -> list[str]:
    """The steps of a dotted property path: a backslash takes the next character as it is, so ``\\.`` is a
    dot inside a key and ``\\\\`` a backslash (``svc.pkl``'s ``.at()`` escapes keys this way)."""
    if "\\" not in path:  # most paths: every reference's resolution splits one
        return path.split(".")
    steps: list[str] = []
    step: list[str] = []
    characters = iter(path)
    for character in characters:
        if character == "\\":
            step.append(next(characters, "\\"))
        elif character == ".":
            steps.append("".join(step))
            step = []
        else:
            step.append(character)
    steps.append("".join(step))
    return steps


def get_path(document: Any, path: str) -> Any:
    """A dotted path (``Tags.0.Key``, see ``split_path``) into a plain document; KeyError if absent."""
    current = document
    for step in split_path(path):
        if isinstance(current, list) and step.isdigit() and int(step) < len(current):
            current = current[int(step)]
        elif isinstance(current, dict) and step in current:
            current = current[step]
        else:
            raise KeyError(path)
    return current


# -- secrets -----------------------------------------------------------------------------------------------

def hashed_secret(envelope_or_value: Any) -> Json:
    """The at-rest form of a secret (never hashed twice)."""
    if isinstance(envelope_or_value, dict) and envelope_or_value.get("$hashed"):
        return dict(envelope_or_value)
    if is_value(envelope_or_value) or is_ref(envelope_or_value):
        stored = {k: v for k, v in envelope_or_value.items() if k != "$value"}
        if (value := envelope_or_value.get("$value")) is not None:
            # A value that holds secrets below its top (``$secrets``) hashes as its producer stores it, so
            # that the planner, which knows only the producer's stored form, gets the same hash.
            paths = envelope_or_value.get("$secrets")
            stored["$value"] = digest(_marked(value, paths)) if paths else digest(value)
            stored["$hashed"] = True
        stored["$visibility"] = "Opaque"
        return stored
    return {"$value": digest(envelope_or_value), "$visibility": "Opaque", "$hashed": True}


# A value holding secrets below its top (a reference to a whole object with a secret inside) is hashed whole,
# over its form with each secret as its own hash: ``stored_digest`` computes that from the producer's stored
# state (secrets hashed), ``hashed_secret`` from the value itself and the secrets' places (``$secrets``).

def secret_places(stored: Any, path: tuple[Any, ...] = ()) -> list[list[Any]]:
    """Where a stored value holds hashed secrets: each a list of keys and list indices."""
    if isinstance(stored, dict):
        if stored.get("$hashed"):
            return [list(path)]
        if is_envelope(stored):
            return []
        return [place for key, item in stored.items() for place in secret_places(item, (*path, key))]
    if isinstance(stored, list):
        return [place for index, item in enumerate(stored) for place in secret_places(item, (*path, index))]
    return []


def stored_digest(stored: Any) -> str:
    """The hash of a stored value that holds secrets below its top (see ``hashed_secret``)."""
    return digest(_stored_marks(stored))


def _stored_marks(stored: Any) -> Any:
    if isinstance(stored, dict):
        if stored.get("$hashed"):
            return {"$hashed": stored.get("$value")}
        if is_envelope(stored):
            return plain(stored)
        return {key: _stored_marks(item) for key, item in stored.items()}
    if isinstance(stored, list):
        return [_stored_marks(item) for item in stored]
    return stored


def _marked(value: Any, places: list[list[Any]]) -> Any:
    """``value`` with the secret at each place replaced by its hash, as ``_stored_marks`` renders one."""
    marked = json.loads(json.dumps(value))
    for place in places:
        if not place:
            return {"$hashed": digest(value)}
        parent = marked
        try:
            for step in place[:-1]:
                parent = parent[step]
            if parent[place[-1]] is not None:
                parent[place[-1]] = {"$hashed": digest(parent[place[-1]])}
        except (KeyError, IndexError, TypeError):
            continue  # no longer there: the value changed shape, and its hash with it
    return marked


# The recursive walks below are module functions, not closures: a closure that calls itself is a reference
# cycle, which only the garbage collector frees, and these run several times per resource change. They descend
# the schema's opaque fields (``OpaqueFields``) along the value: a list's elements stay at the list's node.

def hash_secrets(properties: Json, opaque: OpaqueFields) -> Json:
    """Properties as they may be stored: the schema's opaque values (at any depth) and Opaque envelopes hashed."""
    return {key: _concealed(value, opaque.at(key), hashed_secret) for key, value in properties.items()}


def conceal_secrets(properties: Json, opaque: OpaqueFields, conceal: Callable[[Any], Any]) -> Json:
    """Properties with each secret (where ``hash_secrets`` hashes one) replaced by ``conceal(secret)``: the
    secret's value or envelope whole, e.g. sealed under a key so that it can be restored exactly."""
    return {key: _concealed(value, opaque.at(key), conceal) for key, value in properties.items()}


def hashed_at(value: Any, node: OpaqueFields) -> Any:
    """``value`` as it may be stored, where ``node`` is its place among the schema's opaque fields."""
    return _concealed(value, node, hashed_secret)


def _concealed(value: Any, node: OpaqueFields, conceal: Callable[[Any], Any]) -> Any:
    if not isinstance(value, (dict, list)):  # most values: plain scalars
        return conceal(value) if node.secret and value is not None else value
    if isinstance(value, list):  # each element a secret, or holding secrets where the schema says
        return [_concealed(item, node, conceal) for item in value]
    if is_opaque(value) or (node.secret and not is_embed(value)):
        return conceal(value)
    if is_embed(value):
        return {**value, "$parts": [conceal(p) if is_opaque(p) else p for p in value.get("$parts", [])]}
    if is_ref(value) or is_value(value):
        return value
    return {key: _concealed(item, node.at(key), conceal) for key, item in value.items()}


def redact(properties: Json, opaque: OpaqueFields) -> Json:
    """Plain prior properties for a plugin: secrets replaced by a sentinel (they are only hashes)."""
    return {key: _redacted(value, opaque.at(key)) for key, value in properties.items()}


def _redacted(value: Any, node: OpaqueFields = NONE) -> Any:
    if isinstance(value, list):
        return [_redacted(item, node) for item in value]
    if (is_opaque(value) or (isinstance(value, dict) and value.get("$hashed"))
            or (node.secret and value is not None)):
        return dict(REDACTED)
    if is_ref(value) or is_value(value) or is_embed(value):
        return plain(value)
    if isinstance(value, dict):
        return {key: _redacted(item, node.at(key)) for key, item in value.items()}
    return value


def contains_hash(value: Any) -> bool:
    if isinstance(value, dict):
        return bool(value.get("$hashed")) or any(contains_hash(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_hash(v) for v in value)
    return False
