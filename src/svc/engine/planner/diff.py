"""From stored and desired properties to the patch an update sends (engine.md §3.2–§3.3).

Pure. The stored side is the last known cloud state with the user's envelopes (secrets hashed); the
desired side is the translated forma (secrets in plain text). The hints decide what is compared:

* ``SetOnce`` values keep what is stored; ``opaque`` values compare by hash (unchanged secrets are
  never re-sent); ``format = "json"`` strings compare canonically, at any depth;
* ``writeOnly`` + ``createOnly`` fields compare with the value the agent stored (a Read never returns
  them), and are not compared when it stored none;
* ``requiredOnUpdate`` fields are always re-sent; ``hasProviderDefault`` fields the user omits take the
  provider's value; fields outside the schema and empty strings are ignored;
* ops on ``createOnly`` paths go to the create-only patch, which forces a replace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from svc.engine.planner.patch import Op, create_patch
from svc.model import values
from svc.model.opaque import NONE, OpaqueFields, opaque_fields
from svc.model.schema import Schema

Json = dict[str, Any]
UNKNOWN = "(known after apply)"


@dataclass(frozen=True)
class Patch:
    ops: list[Op] = field(default_factory=list)
    create_only: list[Op] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.ops and not self.create_only


def keep_set_once(stored: Any, desired: Any) -> Any:
    """Desired with every ``SetOnce`` value that is already set replaced by the stored one."""
    if values.is_set_once(desired):
        current = stored.get("$value") if isinstance(stored, dict) and "$value" in stored else stored
        return stored if current is not None else desired
    if isinstance(desired, dict) and isinstance(stored, dict) and not values.is_value(desired) \
            and not values.is_ref(desired) and not values.is_embed(desired):
        return {key: keep_set_once(stored.get(key), value) for key, value in desired.items()}
    return desired


def _unchanged_secret(stored: Any, desired: Any, schema_opaque: bool) -> bool:
    if not isinstance(stored, dict) or not stored.get("$hashed"):
        return False
    if isinstance(desired, dict) and "$of" in desired:  # a part of a secret: unchanged while the secret is
        return all(stored.get(key) == desired.get(key) for key in ("$ref", "$json", "$of"))
    if not (schema_opaque or values.is_opaque(desired)):
        return False
    if isinstance(desired, dict) and desired.get("$hashed"):
        return desired.get("$value") == stored.get("$value")
    raw = values.plain(desired)
    return raw is not None and values.digest(raw) == stored.get("$value")


def suppress_unchanged_secrets(stored: Json, desired: Json, opaque: OpaqueFields) -> Json:
    """Desired with unchanged secrets (at any depth) replaced by their stored (hashed) form, so they compare
    equal."""
    return {key: _secrets_kept(stored.get(key), value, opaque.at(key)) for key, value in desired.items()}


def _secrets_kept(stored: Any, desired: Any, node: OpaqueFields = NONE) -> Any:
    if _unchanged_secret(stored, desired, node.secret):
        return stored
    if isinstance(desired, list) and isinstance(stored, list):  # element by element, as they are stored
        return [_secrets_kept(stored[index] if index < len(stored) else None, item, node)
                for index, item in enumerate(desired)]
    if isinstance(desired, dict) and isinstance(stored, dict) and not any(
            check(desired) for check in (values.is_ref, values.is_value, values.is_embed)):
        return {key: _secrets_kept(stored.get(key), value, node.at(key)) for key, value in desired.items()}
    return desired


def canonical_json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError):
        return text


def _strip_empty(value: Any) -> Any:
    """Nested empty lists and objects removed (Pkl renders unset listings as ``[]``)."""
    if isinstance(value, dict):
        out = {k: _strip_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_strip_empty(v) for v in value]
    return value


def _canonical_at(value: Any, steps: list[str]) -> Any:
    """``value`` with the JSON strings at a dotted hint path (every list element followed) canonicalised."""
    if isinstance(value, list):
        return [_canonical_at(item, steps) for item in value]
    if not steps:
        return canonical_json(value)
    if isinstance(value, dict) and steps[0] in value:
        return {**value, steps[0]: _canonical_at(value[steps[0]], steps[1:])}
    return value


def _drop_leaf(items: Any, leaf: list[str]) -> None:
    """Removes ``leaf`` (a dotted path under a list's elements) from every element, in place."""
    if isinstance(items, list):
        for item in items:
            _drop_leaf(item, leaf)
    elif isinstance(items, dict) and leaf:
        if len(leaf) == 1:
            items.pop(leaf[0], None)
        else:
            _drop_leaf(items.get(leaf[0]), leaf[1:])


def _provider_defaults(actual: Json, desired: Json, schema: Schema) -> None:
    for key, hint in schema.hints.items():
        if not hint.has_provider_default:
            continue
        steps = key.split(".")
        top = steps[0]
        if len(steps) == 1:
            if desired.get(top) is None:
                actual.pop(top, None)
            elif hint.update_method == "EntitySet" and hint.index_field and isinstance(actual.get(top), list):
                wanted = {item.get(hint.index_field) for item in desired[top] if isinstance(item, dict)}
                actual[top] = [item for item in actual[top]
                               if not isinstance(item, dict) or item.get(hint.index_field) in wanted]
            continue
        if isinstance(actual.get(top), list) or isinstance(desired.get(top), list):
            _drop_leaf(actual.get(top), steps[1:])
            _drop_leaf(desired.get(top), steps[1:])
        else:  # a nested object: the provider's value stands when the user omits it
            parent_a, parent_d = actual, desired
            for index, step in enumerate(steps[:-1]):
                parent_a = parent_a.get(step) if isinstance(parent_a, dict) else None
                parent_d = parent_d.get(step) if isinstance(parent_d, dict) else None
                if isinstance(parent_a, list) or isinstance(parent_d, list):  # a list deeper down: as above
                    _drop_leaf(parent_a, steps[index + 1:])
                    _drop_leaf(parent_d, steps[index + 1:])
                    break
            else:
                if isinstance(parent_a, dict) and (not isinstance(parent_d, dict) or parent_d.get(steps[-1]) is None):
                    parent_a.pop(steps[-1], None)


def is_create_only(path: str, schema: Schema) -> bool:
    key = ".".join(step.replace("~1", "/").replace("~0", "~") for step in path.split("/")[1:]
                   if not step.isdigit())
    return any(hint.create_only and (key == name or key.startswith(name + "."))
               for name, hint in schema.hints.items())


def plain_sides(stored: Json, desired: Json, schema: Schema, *, resend: bool = True) -> tuple[Json, Json]:
    """The two plain documents the differ compares, after every hint-driven adjustment; ``resend``
    forces ``requiredOnUpdate`` fields (in plain text) into the patch."""
    opaque = opaque_fields(schema)
    desired = keep_set_once(stored, desired)
    # What is re-sent is the user's value as it is (a secret in plain text): only a re-sending diff needs it, and
    # the planner's diffs (every resource of every plan) are not.
    resent = {key for key, hint in schema.hints.items() if hint.required_on_update and "." not in key} \
        if resend else set()
    original = values.plain(desired, unresolved=UNKNOWN) if resent else {}
    desired = suppress_unchanged_secrets(stored, desired, opaque)
    actual = values.plain(stored)
    wanted = values.plain(desired, unresolved=UNKNOWN)
    if schema.fields:
        wanted = {k: v for k, v in wanted.items() if k in schema.fields}
    wanted = {k: v for k, v in wanted.items() if v != "" and v is not None}
    for key, hint in schema.hints.items():
        if hint.format == "json":
            steps = key.split(".")
            actual, wanted = _canonical_at(actual, steps), _canonical_at(wanted, steps)
        if "." in key:
            continue
        if hint.write_only and hint.create_only and actual.get(key) is None:
            # Read never returns it, so only a value the agent stored can tell a change; a resource
            # discovered has none, and would otherwise be replaced for nothing.
            wanted.pop(key, None)
        if key in resent and original.get(key) not in (None, ""):
            wanted[key] = original[key]
            actual.pop(key, None)
    actual = {k: v for k, v in actual.items() if v is not None}
    _provider_defaults(actual, wanted, schema)
    wanted = _strip_empty(wanted)
    actual = {k: v for k, v in actual.items() if not (v in ({}, []) and k not in wanted)}
    return _strip_empty(actual), wanted


def generate_patch(stored: Json, desired: Json, schema: Schema, *, exact: bool) -> Patch:
    """The update's patch; empty when nothing but re-sent ``requiredOnUpdate`` fields would change. With
    create-only changes (a replace: nothing is sent as an update) the other ops are only what changes."""
    changed = _ops(stored, desired, schema, exact=exact, resend=False)
    if not changed:
        return Patch()
    if any(is_create_only(op["path"], schema) for op in changed):
        return _split(changed, schema)
    return _split(_ops(stored, desired, schema, exact=exact, resend=True), schema)


def _split(ops: list[Op], schema: Schema) -> Patch:
    return Patch([op for op in ops if not is_create_only(op["path"], schema)],
                 [op for op in ops if is_create_only(op["path"], schema)])


def _ops(stored: Json, desired: Json, schema: Schema, *, exact: bool, resend: bool) -> list[Op]:
    actual, wanted = plain_sides(stored, desired, schema, resend=resend)
    return [op for op in create_patch(actual, wanted, schema.hints, exact=exact)
            if not (op["op"] == "add" and op.get("value") in ({}, []))]


def mask_patch(ops: list[Op], desired: Json, schema: Schema) -> list[Op]:
    """The patch as it may be stored or shown: values of secret paths replaced by their hashes."""
    opaque = opaque_fields(schema)
    masked: list[Op] = []
    for op in ops:
        steps = _steps(op["path"], desired) if "value" in op else []
        # An Opaque envelope somewhere in the field: the whole value is masked.
        if steps and values.any_within(desired.get(steps[0]), values.is_opaque):
            masked.append({**op, "value": values.hashed_secret(op["value"])})
        else:
            masked.append(_hashed_op(op, steps, opaque))
    return masked


def hash_stored_patch(ops: list[Op], desired: Json, opaque: OpaqueFields) -> list[Op]:
    """A stored patch with every secret ``opaque`` places in its values hashed: ``mask_patch`` for a patch whose
    ``desired`` state is stored (hashed already, so that its envelopes cannot be told from hashed secrets)."""
    return [_hashed_op(op, _steps(op["path"], desired) if "value" in op else [], opaque) for op in ops]


def _hashed_op(op: Op, steps: list[str | int], opaque: OpaqueFields) -> Op:
    if "value" not in op:
        return op
    return {**op, "value": values.hashed_at(op["value"], opaque.at_path(steps))}


def _steps(pointer: str, desired: Any) -> list[str | int]:
    """The steps of a JSON pointer into ``desired``: an int where it indexes a list (a digit may also be a
    mapping's key), else the key."""
    steps: list[str | int] = []
    current = desired
    for raw in pointer.split("/")[1:]:
        step = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, list) and step.isdigit():
            index = int(step)
            steps.append(index)
            current = current[index] if index < len(current) else None
        else:
            steps.append(step)
            current = current.get(step) if isinstance(current, dict) else None
    return steps


