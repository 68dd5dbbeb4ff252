"""Minimal valid properties for a registry type, and second values for the all-types sweep (issue 26).

``example_for(schema)`` gives, from the type's registry schema alone:

- ``properties``: every required property (read-only ones excepted) with a value the schema accepts, plus what a
  top-level ``oneOf``/``anyOf`` needs; nothing else;
- ``mutable``: a property an update may change in place (holding nothing create-only, read-only or write-only,
  not part of the identifier) and a second valid value for it, when the type has an update handler and one exists;
- ``create_only``: a create-only property and a second valid value for it (changing it means replacement).

Every value is checked against the whole schema before it is offered; a type for which none is found raises
``Unsatisfiable`` with the reason. Required values and second values are never empty (``""``, ``[]``, ``{}``):
svc counts an empty value as unset, as a person writing the forma would. Tags hold a ``Key`` and a ``Value``,
as the plugin's tag class asks. ``settable`` limits the second values to properties a forma can set (a
hand-written module declares fewer than the registry schema).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from .models import touches, without_paths
from .registry import Json, TypeSchema
from .validation import first_model_error
from .values import Unsatisfiable, ValueMaker, present, without_empty

__all__ = ["Change", "Example", "Unsatisfiable", "example_for", "present"]

_VARIANTS = 4


@dataclass(frozen=True)
class Change:
    """A property set to a second valid value (``before`` is None when the minimal properties leave it out)."""

    name: str
    before: Any
    after: Any


@dataclass(frozen=True)
class Example:
    type_name: str
    properties: Json
    mutable: Change | None
    create_only: Change | None


def example_for(schema: TypeSchema, settable: Collection[str] | None = None) -> Example:
    maker = ValueMaker(schema)
    properties = minimal_properties(schema, maker)
    candidates = [name for name in schema.properties if settable is None or name in settable]
    # Not a property that holds a create-only or read-only part either (a patch of it would touch that part), nor
    # a write-only one (a read could not show the update took effect).
    fixed_paths = (*schema.create_only_paths, *schema.read_only_paths, *schema.write_only_paths)
    mutable_names = [name for name in candidates if touches(f"/{name}", fixed_paths) is None
                     and name not in schema.primary_identifier]
    mutable = _second_value(schema, maker, properties, mutable_names) if "update" in schema.handlers else None
    # A write-only one only when the minimal properties set it: svc tells a change of a create-only, write-only
    # property by the value it stored, and has none when the resource was created without it.
    create_only_names = [name for name in candidates if name in schema.create_only - schema.read_only
                         and (name not in schema.write_only or name in properties)]
    return Example(schema.type_name, properties, mutable, _second_value(schema, maker, properties, create_only_names))


def _value(schema: TypeSchema, maker: ValueMaker, name: str, *, variant: int = 0) -> Any:
    """A value for the top-level property ``name`` that svc counts as set (see :func:`present`); tags with their
    ``Key`` and ``Value``."""
    subschema = maker.resolved(schema.properties[name])
    if name == _tag_property(schema):
        items = maker.resolved(subschema["items"])
        subschema = {**subschema, "items": {**items, "required": sorted({*items.get("required", ()), "Key", "Value"})}}
    value = maker.set_value(subschema, name=name, variant=variant)
    if present(without_paths({name: value}, schema.read_only_paths).get(name)):
        return value
    # An object whose first member is read-only (an ARN the service makes): the first member a caller may set.
    members = [member for member in subschema.get("properties") or {}
               if f"/properties/{name}/{member}" not in schema.read_only_paths]
    if not members:
        return value
    try:
        return maker.set_value({**subschema, "required": [*subschema.get("required", ()), members[0]]}, name=name,
                               variant=variant)
    except Unsatisfiable:
        return value


def _tag_property(schema: TypeSchema) -> str | None:
    """The tag property when it is CloudFormation's list of ``Key``/``Value`` objects (the plugin's ``aws.Tags``)."""
    tagging = schema.raw.get("tagging") or {}
    name = str(tagging.get("tagProperty") or "/properties/Tags").removeprefix("/properties/")
    node = schema.properties.get(name)
    if tagging.get("taggable") is False or not isinstance(node, dict) or node.get("type") != "array" \
            or not isinstance(node.get("items"), dict):
        return None
    items = ValueMaker(schema).resolved(node["items"])
    return name if {"Key", "Value"} <= set(items.get("properties") or {}) else None


def minimal_properties(schema: TypeSchema, maker: ValueMaker | None = None) -> Json:
    maker = maker or ValueMaker(schema)
    required, choices = _requirements(schema.raw)
    wanted = [name for name in dict.fromkeys([*schema.required, *required]) if name not in schema.read_only]
    properties = {name: _value(schema, maker, name) for name in wanted}
    for keyword, group in choices:  # one of several sets of properties is required: the first that fits
        for choice in group:
            extended = dict(properties)
            for name in _requirements(choice)[0]:
                if name in schema.properties and name not in extended:
                    extended[name] = _value(schema, maker, name)
            for name, narrowed in choice.get("properties", {}).items():  # a choice that asks more of a member
                if name in schema.properties and narrowed.get("required"):
                    member = maker.resolved(schema.properties[name])
                    extended[name] = maker.set_value({**member, "required": [*member.get("required", []),
                                                                             *narrowed["required"]]}, name=name)
            if maker.is_valid({keyword: group}, extended):
                properties = extended
                break
    properties = without_paths(properties, schema.read_only_paths)  # a member an object's variant chose may be one
    error = first_model_error(schema, properties)
    if error is not None:
        raise Unsatisfiable(f"{schema.type_name}: the minimal properties break the schema: {error}")
    return properties


def _requirements(schema: Json) -> tuple[list[str], list[tuple[str, list[Json]]]]:
    """The property names a top-level schema requires (its ``allOf`` parts' included) and its choices
    (``oneOf``/``anyOf`` groups, at the top or inside ``allOf``)."""
    required = list(schema.get("required", ()))
    choices = [(keyword, schema[keyword]) for keyword in ("oneOf", "anyOf") if schema.get(keyword)]
    for part in schema.get("allOf", ()):
        part_required, part_choices = _requirements(part)
        required += part_required
        choices += part_choices
    return required, choices


def _second_value(schema: TypeSchema, maker: ValueMaker, properties: Json, names: list[str]) -> Change | None:
    """The first of ``names`` (those already in ``properties`` first, deprecated ones never) with a second value
    that keeps the whole model valid and that svc sends as it is: nothing empty in it, and every object key of
    the first value still there (svc never removes a key the forma drops: the provider's value stands, so
    switching an object from one ``oneOf`` choice to another cannot be written)."""
    deprecated = {path.split("/")[-1] for path in schema.raw.get("deprecatedProperties", ())}
    ordered = sorted((name for name in names if name not in deprecated), key=lambda name: name not in properties)
    for name in ordered:
        before = properties.get(name)
        # A part of the identifier left out is one the service makes up (the stand-in from the first variant).
        first = 0 if before is None and name not in schema.primary_identifier else 1
        for variant in range(first, _VARIANTS):
            try:
                after = _value(schema, maker, name, variant=variant)
            except Unsatisfiable:
                break
            after = without_paths({name: after}, schema.read_only_paths).get(name)  # only what a caller may set
            if present(after) and without_empty(after) == after and after != without_empty(before) \
                    and _keeps_keys(before, after) and first_model_error(schema, {**properties, name: after}) is None:
                return Change(name, before, after)
    return None


def _keeps_keys(before: Any, after: Any) -> bool:
    """Whether every object key of ``before`` is in ``after``, at every depth (lists element by element, as svc
    compares an ordered list)."""
    if isinstance(before, dict):
        return isinstance(after, dict) and all(key in after and _keeps_keys(value, after[key])
                                               for key, value in before.items())
    if isinstance(before, list) and isinstance(after, list):
        return all(_keeps_keys(b, a) for b, a in zip(before, after, strict=False))
    return True
