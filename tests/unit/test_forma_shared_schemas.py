"""The forma as the agent parses it: resources of one type share one validated descriptor (a 100,000-resource
forma held 100,000 copies), and a bad descriptor is still reported where it is."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from svc.model.forma import Forma

ITEM_SCHEMA = {"Identifier": "$.Id", "Fields": ["Value"], "Hints": {"Value": {"CreateOnly": False}}}
OTHER_SCHEMA = {"Identifier": "$.Name", "Fields": ["Name"]}


def _resource(label: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"Label": label, "Type": "FAKE::Test::Item", "Stack": "app", "Target": "cloud", "Schema": schema,
            "Properties": {"Value": label}}


def test_resources_with_equal_descriptors_share_one() -> None:
    # Each resource's descriptor arrives as a dict of its own, as JSON parsing makes them.
    forma = Forma.model_validate({"Resources": [_resource("a", dict(ITEM_SCHEMA)), _resource("b", dict(ITEM_SCHEMA)),
                                                _resource("c", dict(OTHER_SCHEMA))]})
    a, b, c = forma.resources
    assert a.schema_ is b.schema_ and a.schema_ is not c.schema_
    assert a.schema_.identifier == "$.Id" and a.hint("Value") is not None and c.schema_.fields == ("Name",)
    assert Forma.model_validate(forma.to_json()) == forma


def test_a_bad_descriptor_is_reported_at_its_resource() -> None:
    with pytest.raises(ValidationError) as raised:
        Forma.model_validate({"Resources": [_resource("a", ITEM_SCHEMA), _resource("b", {"Fields": ["Value"]})]})
    assert [error["loc"] for error in raised.value.errors()] == [("Resources", 1, "Schema", "Identifier")]
