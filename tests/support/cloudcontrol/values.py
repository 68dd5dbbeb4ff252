"""Valid values for a part of a registry schema: what examples are made of, and what read-only properties get.

``value_for`` walks a property's schema (``$ref``s into ``definitions``, ``allOf`` merged, ``oneOf``/``anyOf``
choices tried in order until one validates) and makes the smallest value it allows: required members only,
``minItems`` elements, the first enum member, a short string matching the pattern. ``variant`` asks for a
different valid value of the same schema (the next enum member, the other boolean, a longer array, another
pattern match), which is how a second value for an update is found. A required member is never empty (``""``,
``[]``, ``{}``, or an object holding only empty members) where the schema allows more: svc, as a person writing
a forma, counts an empty value as unset and leaves it out.
"""

from __future__ import annotations

from typing import Any

from .patterns import matching_string, plain_string
from .registry import Json, TypeSchema
from .validation import validator_for

_MAX_DEPTH = 16
_VARIANT_TRIES = 4
# For a property that may be several JSON types, the simplest to make first (JSON documents: see ``kind``).
_TYPE_ORDER = ("string", "integer", "number", "boolean", "object", "array")
_FORMATS = {
    "date-time": ("2024-01-01T00:00:00Z", "2024-06-30T12:00:00Z"),
    "timestamp": ("2024-01-01T00:00:00Z", "2024-06-30T12:00:00Z"),
    "ipv4-network": ("10.0.0.0/16", "10.1.0.0/16"),
    "ipv6-network": ("2001:db8::/56", "2001:db8:1::/56"),
    "uri": ("https://example.com/", "https://example.org/"),
}


class Unsatisfiable(Exception):
    """No value was found that the schema allows."""


def without_empty(value: Any) -> Any:
    """``value`` without the empty lists and objects its objects hold, at any depth: what svc sends of it."""
    if isinstance(value, dict):
        kept = {key: without_empty(member) for key, member in value.items()}
        return {key: member for key, member in kept.items() if member not in ({}, [])}
    if isinstance(value, list):
        return [without_empty(item) for item in value]
    return value


def present(value: Any) -> bool:
    """Whether svc counts ``value`` as set: not null, nor empty once its empty members are left out."""
    return without_empty(value) not in (None, "", [], {})


class ValueMaker:
    """Makes values for the sub-schemas of one type's schema."""

    def __init__(self, schema: TypeSchema) -> None:
        self.schema = schema
        self._validator = validator_for(schema)

    def is_valid(self, subschema: Json, value: Any) -> bool:
        """``value`` against a sub-schema of this type (its ``$ref``s resolve in the type's schema)."""
        return self._validator.evolve(schema=subschema).is_valid(value)

    def value_for(self, subschema: Json, *, name: str = "", variant: int = 0, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise Unsatisfiable(f"{name}: the schema nests deeper than {_MAX_DEPTH} levels")
        subschema = self.resolved(subschema)
        if "const" in subschema:
            return subschema["const"]
        if subschema.get("enum"):
            return subschema["enum"][variant % len(subschema["enum"])]
        for keyword in ("oneOf", "anyOf"):
            if subschema.get(keyword):
                return self._choice(subschema, keyword, name=name, variant=variant, depth=depth)
        kind = self.kind(subschema)
        if kind == "object":
            return self._object(subschema, name=name, variant=variant, depth=depth)
        if kind == "array":
            return self._array(subschema, name=name, variant=variant, depth=depth)
        if kind in ("integer", "number"):
            return self._number(subschema, variant=variant)
        if kind == "boolean":
            return variant % 2 == 0
        return self._string(subschema, name=name, variant=variant)

    def set_value(self, subschema: Json, *, name: str = "", variant: int = 0, depth: int = 0) -> Any:
        """:meth:`value_for`, not empty (see :func:`present`) where the schema allows a value that is not."""
        value = self.value_for(subschema, name=name, variant=variant, depth=depth)
        if present(value):
            return value
        resolved = self.resolved(subschema)
        least = {"object": "minProperties", "array": "minItems", "string": "minLength"}.get(self.kind(resolved))
        if least is None:
            return value
        try:
            wider = self.value_for({**resolved, least: max(1, resolved.get(least, 0))}, name=name, variant=variant,
                                   depth=depth)
        except Unsatisfiable:
            return value
        return wider if present(wider) and self.is_valid(resolved, wider) else value

    # -- structure -------------------------------------------------------------------------------------------

    def resolved(self, subschema: Json) -> Json:
        """``$ref`` replaced by what it points at (siblings kept) and ``allOf`` merged into one schema."""
        seen = 0
        while "$ref" in subschema:
            seen += 1
            if seen > _MAX_DEPTH:
                raise Unsatisfiable(f"{subschema['$ref']}: a cycle of references")
            target = self.schema.definition(subschema["$ref"])
            subschema = {**target, **{k: v for k, v in subschema.items() if k != "$ref"}}
        if subschema.get("allOf"):
            merged = {k: v for k, v in subschema.items() if k != "allOf"}
            for part in subschema["allOf"]:
                part = self.resolved(part)
                merged["properties"] = {**merged.get("properties", {}), **part.get("properties", {})}
                merged["required"] = [*merged.get("required", []), *part.get("required", [])]
                for key, value in part.items():
                    merged.setdefault(key, value)
            subschema = merged
        return subschema

    def _choice(self, subschema: Json, keyword: str, *, name: str, variant: int, depth: int) -> Any:
        """The first choice (from ``variant`` on) whose value satisfies the whole schema, ``oneOf``'s
        exactly-one rule included."""
        base = {k: v for k, v in subschema.items() if k != keyword}
        choices = subschema[keyword]
        fallback: list[Any] = []  # an empty value (a marker such as ``"Drop": {}``): only when no choice has more
        for offset in range(len(choices)):
            choice = self.resolved(choices[(variant + offset) % len(choices)])
            merged = {"properties": {**base.get("properties", {}), **choice.get("properties", {})},
                      "required": [*base.get("required", []), *choice.get("required", [])]}
            # Where both constrain a string (two patterns), a value made for either may satisfy both; an object
            # choice that requires nothing must still hold a member, or it matches every choice of a oneOf.
            shapes = ({**base, **choice, **merged}, {**choice, **base, **merged},
                      {**base, **choice, **merged, "minProperties": max(1, choice.get("minProperties", 0))})
            for combined in shapes:
                for attempt in range(_VARIANT_TRIES):
                    try:
                        value = self.value_for(combined, name=name, variant=variant + attempt, depth=depth + 1)
                    except Unsatisfiable:
                        break
                    if self.is_valid(subschema, value):
                        if present(value):
                            return value
                        fallback.append(value)
        if fallback:
            return fallback[0]
        raise Unsatisfiable(f"{name}: no choice of its {keyword} gives a valid value")

    @staticmethod
    def kind(subschema: Json) -> str:
        """The JSON type a value of ``subschema`` is made as."""
        declared = subschema.get("type")
        if isinstance(declared, list):
            if "object" in declared:  # a JSON document (a policy) given as an object or its text
                return "object"
            return next((kind for kind in _TYPE_ORDER if kind in declared), "string")
        if declared:
            return declared
        if "properties" in subschema or "patternProperties" in subschema:
            return "object"
        if "items" in subschema:
            return "array"
        return "string"

    def _object(self, subschema: Json, *, name: str, variant: int, depth: int) -> Json:
        properties: dict[str, Json] = subschema.get("properties", {})
        required = list(dict.fromkeys(subschema.get("required", [])))
        # A map or object that must not be empty gets its first members; another variant, one member more.
        least = max(subschema.get("minProperties", 0), len(required) + 1 if variant else 0)
        least = min(least, subschema.get("maxProperties", least))
        value: Json = {}
        for member in required:
            member_schema = properties.get(member) or self._map_values(subschema) or {}
            value[member] = self.set_value(member_schema, name=member, variant=variant, depth=depth + 1)
        # Then members that hold something, before empty ones (a marker such as ``"All": {}``, which svc leaves out).
        for only_present in (True, False):
            for member in properties:
                if len(value) >= least:
                    break
                if member not in value:
                    made = self.set_value(properties[member], name=member, variant=variant, depth=depth + 1)
                    if present(made) or not only_present:
                        value[member] = made
        free_form = not properties and subschema.get("additionalProperties", True) is not False
        while len(value) < subschema.get("minProperties", 0) or (free_form and len(value) < least):
            key = matching_string(next(iter(subschema.get("patternProperties", {})), ""), variant=len(value)) \
                or f"key{len(value) + 1}"
            value[key] = self.set_value(self._map_values(subschema) or {}, name=key, variant=variant,
                                        depth=depth + 1)
        return value

    @staticmethod
    def _map_values(subschema: Json) -> Json | None:
        patterns = subschema.get("patternProperties") or {}
        if patterns:
            return next(iter(patterns.values()))
        extra = subschema.get("additionalProperties")
        return extra if isinstance(extra, dict) else None

    def _array(self, subschema: Json, *, name: str, variant: int, depth: int) -> list[Any]:
        count = subschema.get("minItems", 0)
        if variant and count < subschema.get("maxItems", count + 1):
            count += 1  # another valid value: one element more
        items = subschema.get("items", {})
        if isinstance(items, list):  # draft-07 tuple form
            return [self.value_for(item, name=name, variant=variant, depth=depth + 1) for item in items[:count]]
        values: list[Any] = []
        # Unique elements: each from another variant, and objects with at least one member (empty ones are equal).
        shapes = [items, {**self.resolved(items), "minProperties": 1}] if subschema.get("uniqueItems") else [items]
        for index in range(count):
            candidates = (self.value_for(shape, name=name, variant=variant + index + attempt, depth=depth + 1)
                          for shape in shapes for attempt in range(_VARIANT_TRIES))
            unique = subschema.get("uniqueItems") is True
            values.append(next((value for value in candidates if not unique or value not in values), None))
            if values[-1] is None:
                raise Unsatisfiable(f"{name}: no {count} different elements were found")
        return values

    # -- scalars ---------------------------------------------------------------------------------------------

    @staticmethod
    def _number(subschema: Json, *, variant: int) -> int | float:
        low = subschema.get("minimum")
        if "exclusiveMinimum" in subschema:
            low = subschema["exclusiveMinimum"] + 1
        high = subschema.get("maximum")
        if "exclusiveMaximum" in subschema:
            high = subschema["exclusiveMaximum"] - 1
        step = subschema.get("multipleOf", 1)
        start = low if low is not None else (min(1, high) if high is not None else 1)
        if step != 1:
            start = -(-start // step) * step  # the first multiple at or above the minimum
        value = start + variant * step
        if high is not None and value > high:
            value = start
        return int(value) if float(value).is_integer() and subschema.get("type") != "number" else value

    @staticmethod
    def _string(subschema: Json, *, name: str, variant: int) -> str:
        low, high = subschema.get("minLength", 0), subschema.get("maxLength")
        known = _FORMATS.get(subschema.get("format", ""))
        if known:
            return known[variant % 2]
        pattern = subschema.get("pattern")
        if pattern:  # a non-empty match first: an empty name is valid for few services
            for min_length in dict.fromkeys((max(low, 1), low)):
                found = matching_string(pattern, min_length=min_length, max_length=high, variant=variant)
                if found is not None:
                    return found
        stem = "".join(ch for ch in name.lower() if ch.isalnum()) or "example"
        return plain_string(min_length=low, max_length=high, variant=variant, stem=stem)
