"""Minimal valid properties for a registry type, and second values for the all-types sweep (issue 26).

``example_for(schema)`` gives, from the type's registry schema alone:

- ``properties``: every required property (read-only ones excepted) with a value the schema accepts, plus what a
  top-level ``oneOf``/``anyOf`` needs; nothing else;
- ``mutable``: a property an update may change in place (holding nothing create-only, read-only or write-only,
  not part of the identifier) and a second valid value for it, when the type has an update handler and one exists;
- ``create_only``: a create-only property and a second valid value for it (changing it means replacement).

Every value is checked against the whole schema before it is offered; a type for which none is found raises
``Unsatisfiable`` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .models import touches, without_paths
from .registry import Json, TypeSchema
from .validation import first_model_error
from .values import Unsatisfiable, ValueMaker

__all__ = ["Change", "Example", "Unsatisfiable", "example_for"]

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


def example_for(schema: TypeSchema) -> Example:
    maker = ValueMaker(schema)
    properties = minimal_properties(schema, maker)
    # Not a property that holds a create-only or read-only part either (a patch of it would touch that part), nor
    # a write-only one (a read could not show the update took effect).
    fixed_paths = (*schema.create_only_paths, *schema.read_only_paths, *schema.write_only_paths)
    mutable_names = [name for name in schema.properties if touches(f"/{name}", fixed_paths) is None
                     and name not in schema.primary_identifier]
    mutable = _second_value(schema, maker, properties, mutable_names) if "update" in schema.handlers else None
    create_only_names = [name for name in schema.properties if name in schema.create_only - schema.read_only]
    return Example(schema.type_name, properties, mutable, _second_value(schema, maker, properties, create_only_names))


def minimal_properties(schema: TypeSchema, maker: ValueMaker | None = None) -> Json:
    maker = maker or ValueMaker(schema)
    required, choices = _requirements(schema.raw)
    wanted = [name for name in dict.fromkeys([*schema.required, *required]) if name not in schema.read_only]
    properties = {name: maker.value_for(schema.properties[name], name=name) for name in wanted}
    for keyword, group in choices:  # one of several sets of properties is required: the first that fits
        for choice in group:
            extended = dict(properties)
            for name in _requirements(choice)[0]:
                if name in schema.properties and name not in extended:
                    extended[name] = maker.value_for(schema.properties[name], name=name)
            for name, narrowed in choice.get("properties", {}).items():  # a choice that asks more of a member
                if name in schema.properties and narrowed.get("required"):
                    member = maker.resolved(schema.properties[name])
                    extended[name] = maker.value_for({**member, "required": [*member.get("required", []),
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
    that keeps the whole model valid."""
    deprecated = {path.split("/")[-1] for path in schema.raw.get("deprecatedProperties", ())}
    ordered = sorted((name for name in names if name not in deprecated), key=lambda name: name not in properties)
    for name in ordered:
        before = properties.get(name)
        for variant in range(0 if before is None else 1, _VARIANTS):
            try:
                after = maker.value_for(schema.properties[name], name=name, variant=variant)
            except Unsatisfiable:
                break
            after = without_paths({name: after}, schema.read_only_paths).get(name)  # only what a caller may set
            if after != before and first_model_error(schema, {**properties, name: after}) is None:
                return Change(name, before, after)
    return None
