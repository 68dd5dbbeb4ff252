"""Checking a resource model against its type's registry schema, with the service's wording of a failure.

The registry's dialect is JSON Schema draft-07 plus ``dependentRequired`` (from 2019-09); its ``$ref``s point
into the schema's own ``definitions``. Some of its patterns are Java regular expressions (``\\p{L}``,
``[a&&[^b]]``) that Python's ``re`` cannot compile: those are not checked, as the brief for the stand-in
allows ("patterns where compilable by Python").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft7Validator, Draft202012Validator, ValidationError, validators

from .registry import TypeSchema

_DRAFT7_PATTERN = Draft7Validator.VALIDATORS["pattern"]
_DRAFT7_PATTERN_PROPERTIES = Draft7Validator.VALIDATORS["patternProperties"]
_DRAFT7_ADDITIONAL_PROPERTIES = Draft7Validator.VALIDATORS["additionalProperties"]


@functools.cache
def compiled(pattern: str) -> re.Pattern[str] | None:
    """``pattern`` compiled by Python, or None when it is a Java-only pattern."""
    try:
        return re.compile(pattern)
    except (re.error, OverflowError):
        return None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if compiled(pattern) is not None:
        yield from _DRAFT7_PATTERN(validator, pattern, instance, schema)


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
                        ) -> Iterator[ValidationError]:
    checkable = {pattern: subschema for pattern, subschema in patterns.items() if compiled(pattern) is not None}
    yield from _DRAFT7_PATTERN_PROPERTIES(validator, checkable, instance, schema)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    # Which keys a Java-only key pattern matches cannot be told here: every key counts as matched (jsonschema
    # would compile the pattern, and fail).
    if any(compiled(pattern) is None for pattern in schema.get("patternProperties") or ()):
        return
    yield from _DRAFT7_ADDITIONAL_PROPERTIES(validator, additional, instance, schema)


RegistryValidator = validators.extend(Draft7Validator, {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "dependentRequired": Draft202012Validator.VALIDATORS["dependentRequired"],
})


@functools.cache
def _validator(schema: TypeSchema) -> Any:
    return RegistryValidator(schema.validation_schema())


def validator_for(schema: TypeSchema) -> Any:
    """A validator of whole resource models of ``schema``'s type (built once per type)."""
    return _validator(schema)


def model_errors(schema: TypeSchema, model: Any) -> list[str]:
    """Every way ``model`` breaks the type's schema, worded as Cloud Control words it; empty when valid."""
    return [describe(error) for error in sorted(validator_for(schema).iter_errors(model), key=_error_order)]


def first_model_error(schema: TypeSchema, model: Any) -> str | None:
    errors = model_errors(schema, model)
    return errors[0] if errors else None


# The type names of the validator behind CloudFormation's messages ("expected type: Integer, found: String").
_JSON_TYPE_NAMES = {"string": "String", "integer": "Integer", "number": "Number", "boolean": "Boolean",
                    "object": "JSONObject", "array": "JSONArray", "null": "Null"}


def _found_type(value: Any) -> str:
    if isinstance(value, bool):
        return "Boolean"
    kinds = {str: "string", int: "integer", float: "number", dict: "object", list: "array", type(None): "null"}
    return _JSON_TYPE_NAMES[kinds.get(type(value), "object")]


def _error_order(error: ValidationError) -> tuple[str, str]:
    return ("/".join(str(part) for part in error.absolute_path), error.validator)


def describe(error: ValidationError) -> str:
    """One schema failure as Cloud Control's "Model validation failed" messages put it: the JSON pointer of the
    offending value (``#/Tags/0``) and what is wrong there, naming the property."""
    where = "#" + "".join(f"/{part}" for part in error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"{where}: required key [{missing}] not found"
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"{where}: extraneous key [{extra[0] if extra else '?'}] is not permitted"
    if error.validator == "type":
        expected = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return (f"{where}: expected type: {', '.join(_JSON_TYPE_NAMES.get(kind, kind) for kind in expected)}, "
                f"found: {_found_type(error.instance)}")
    return f"{where}: failed validation constraint for keyword [{error.validator}]"
