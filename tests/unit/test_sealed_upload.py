"""Whether an uploaded forma may hold a sealed secret (a saved plan's), read from its text: a forma that cannot
is not walked for them; one that may is, whatever way its JSON writes the key."""

from __future__ import annotations

import json

import pytest

from svc.api.submission import may_hold_sealed

SEALED = {"Resources": [{"Label": "db", "Properties": {"Password": {"$sealed": "gAAAA"}}}]}
PLAIN = {"Resources": [{"Label": "db", "Properties": {"Password": "not sealed", "Note": "$sealed in a value"}}]}


@pytest.mark.parametrize("text", [
    json.dumps(SEALED), json.dumps(SEALED, separators=(",", ":")),
    json.dumps(SEALED).replace("$sealed", "\\u0024sealed"),  # the key written with an escape
    json.dumps(PLAIN).replace("not", "n\\u006ft"),  # any escape: the text alone cannot tell
])
def test_a_forma_that_may_hold_a_sealed_secret_is_opened(text: str) -> None:
    assert may_hold_sealed(text.encode())
    assert json.loads(text) in (SEALED, PLAIN)


def test_a_forma_without_the_key_holds_none() -> None:
    assert not may_hold_sealed(json.dumps(PLAIN, ensure_ascii=False).encode())
