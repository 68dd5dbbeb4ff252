"""Reference property paths (``$property``): dotted steps, a backslash taking the next character as it is,
as ``svc.pkl``'s ``.at(key)`` escapes them (real Pkl builds them in tests/integration/test_schema_rules.py)."""

from __future__ import annotations

import pytest

from svc.model import values


@pytest.mark.parametrize(("path", "steps"), [
    ("Tags.0.Key", ["Tags", "0", "Key"]),
    ("Labels.a\\.b", ["Labels", "a.b"]),
    ("Labels.a:b/c d \"e\"", ["Labels", 'a:b/c d "e"']),
    ("Labels.a\\:b", ["Labels", "a:b"]),  # a path built when `.at()` also escaped `:`
    ("Labels.x\\\\.y", ["Labels", "x\\", "y"]),  # an escaped backslash, then a separator
    ("Labels.x\\\\\\.y", ["Labels", "x\\.y"]),
    ("Labels.end\\", ["Labels", "end\\"]),
])
def test_split_path(path: str, steps: list[str]) -> None:
    assert values.split_path(path) == steps


def test_get_path_follows_the_steps_into_objects_and_lists() -> None:
    document = {"Labels": {"x\\": {"y": 1}, "x.y": 2}, "Tags": [{"Key": "k"}]}
    assert values.get_path(document, "Labels.x\\\\.y") == 1
    assert values.get_path(document, "Labels.x\\.y") == 2
    assert values.get_path(document, "Tags.0.Key") == "k"
    with pytest.raises(KeyError):
        values.get_path(document, "Tags.1.Key")
