"""The fast JSON codec answers as the standard library does where the two libraries differ."""

from __future__ import annotations

import dataclasses
import enum
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from svc import jsontext


class Color(enum.StrEnum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int


@pytest.mark.parametrize("value", [
    {"a": 1, "b": [1.5, None, True], "c": {"d": "é ✓"}},
    [],
    "text",
    2**70,  # beyond orjson's 64 bits: written by the fallback
    {"big": -(2**65), "small": 1},
    {"color": Color.RED},
])
def test_round_trips_like_the_standard_library(value: Any) -> None:
    text = jsontext.dumps(value)
    assert json.loads(text) == json.loads(json.dumps(value))
    assert jsontext.loads(text) == json.loads(json.dumps(value))
    assert jsontext.loads(jsontext.dump_bytes(value)) == jsontext.loads(text)


def test_output_is_compact_utf8() -> None:
    assert jsontext.dumps({"a": [1, 2], "b": "é"}) == '{"a":[1,2],"b":"é"}'


def test_non_string_keys_become_strings_as_in_json() -> None:
    keys = {1: "one", 2.5: "half", None: "none"}
    assert jsontext.loads(jsontext.dumps(keys)) == json.loads(json.dumps(keys))


@pytest.mark.parametrize("value", [datetime(2026, 1, 1, tzinfo=UTC), {1, 2}, Point(1), object(), {"nested": [b"x"]}])
def test_what_json_refuses_is_refused_with_type_error(value: Any) -> None:
    with pytest.raises(TypeError):
        json.dumps(value)
    with pytest.raises(TypeError):
        jsontext.dumps(value)


@pytest.mark.parametrize("text", ["{bad", "", "[1,", b"\xff"])
def test_bad_text_is_a_value_error(text: str | bytes) -> None:
    with pytest.raises(ValueError):
        jsontext.loads(text)


@pytest.mark.parametrize("value", [
    {"a": [1, 2, {}], "b": {"c": [], "d": None, "e": 1.5e16, "f": False}},
    {"text": "é ✓ 中"},  # escaped for a terminal, UTF-8 in a file
    {"big": 2**70},  # beyond orjson's 64 bits: the fallback
    [],
])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_text_is_the_standard_librarys(value: Any, ascii_only: bool) -> None:
    assert jsontext.dump_bytes(value, indent=True, ascii_only=ascii_only) == \
        json.dumps(value, indent=2, ensure_ascii=ascii_only).encode("utf-8")
    assert jsontext.dump_bytes(value, ascii_only=ascii_only) == \
        json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only).encode("utf-8")


@pytest.mark.parametrize("indent", [True, False])
def test_what_json_refuses_is_refused_or_handed_to_default(indent: bool) -> None:
    value = {"when": datetime(2026, 1, 1, tzinfo=UTC), "point": Point(1), "big": 2**70}
    with pytest.raises(TypeError):
        jsontext.dump_bytes(value, indent=indent)

    def default(item: Any) -> Any:
        return dataclasses.asdict(item) if isinstance(item, Point) else str(item)

    assert jsontext.dump_bytes(value, indent=indent, default=default) == json.dumps(
        value, default=default, indent=2 if indent else None, separators=None if indent else (",", ":")).encode()
