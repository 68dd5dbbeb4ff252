"""The forma as the agent parses it: resources of one type share one validated descriptor (a 100,000-resource
forma held 100,000 copies), and a bad descriptor is still reported where it is."""

from __future__ import annotations

import json
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


def test_the_wire_form_lists_each_descriptor_once_and_reads_back_the_same() -> None:
    forma = Forma.model_validate({"Resources": [_resource("a", dict(ITEM_SCHEMA)), _resource("b", dict(ITEM_SCHEMA)),
                                                _resource("c", dict(OTHER_SCHEMA))]})
    wire = forma.to_wire()
    assert wire["Schemas"] == [forma.resources[0].schema_.to_json(), forma.resources[2].schema_.to_json()]
    assert [(r["Label"], r["SchemaIndex"], "Schema" in r) for r in wire["Resources"]] == [
        ("a", 0, False), ("b", 0, False), ("c", 1, False)]
    again = Forma.model_validate(wire)
    assert again == forma and again.to_json() == forma.to_json()
    a, b, _ = again.resources
    assert a.schema_ is b.schema_


@pytest.mark.parametrize("index", [2, -1, "0", None])
def test_a_schema_index_that_names_no_descriptor_is_reported_at_its_resource(index: Any) -> None:
    resource = {key: value for key, value in _resource("a", ITEM_SCHEMA).items() if key != "Schema"}
    with pytest.raises(ValidationError) as raised:
        Forma.model_validate({"Schemas": [ITEM_SCHEMA, OTHER_SCHEMA], "Resources": [{**resource, "SchemaIndex": index}]})
    assert [error["loc"] for error in raised.value.errors()] == [("Resources", 0, "Schema")]


def test_a_bad_listed_descriptor_is_reported_at_the_resources_that_use_it() -> None:
    resource = {key: value for key, value in _resource("a", ITEM_SCHEMA).items() if key != "Schema"}
    with pytest.raises(ValidationError) as raised:
        Forma.model_validate({"Schemas": [{"Fields": ["Value"]}], "Resources": [{**resource, "SchemaIndex": 0}]})
    assert [error["loc"] for error in raised.value.errors()] == [("Resources", 0, "Schema", "Identifier")]


def test_the_forma_json_dumps_each_descriptor_once_in_the_models_own_rendering() -> None:
    resources = [_resource("a", dict(ITEM_SCHEMA)), _resource("b", dict(ITEM_SCHEMA)), _resource("c", dict(OTHER_SCHEMA))]
    forma = Forma.model_validate({"Stacks": [{"Label": "app"}], "Resources": resources})
    rendered = forma.to_json()
    # Byte for byte what pydantic dumps of the whole model (key order included), less what is empty.
    whole = forma.model_dump(mode="json", by_alias=True, exclude_none=True)
    del whole["Description"], whole["Properties"], whole["Stacks"][0]["Policies"]
    assert json.dumps(rendered) == json.dumps(whole)
    assert list(rendered["Resources"][0]) == ["Label", "Type", "Stack", "Target", "Schema", "Properties", "Managed"]
    a, b, c = rendered["Resources"]
    assert a["Schema"] is b["Schema"] and a["Schema"] is not c["Schema"]
