"""The native id of a create's answer, at the schema's identifier: one JSONPath, or several joined by ``|``."""

from __future__ import annotations

from svc.model.native_ids import native_id_in


def test_a_top_level_or_nested_identifier_is_the_value_there() -> None:
    assert native_id_in({"BucketName": "logs"}, "$.BucketName") == "logs"
    assert native_id_in({"Meta": {"RecordId": 7}}, "$.Meta.RecordId") == "7"


def test_a_compound_identifier_joins_its_values_with_a_bar_in_order() -> None:
    answer = {"TableName": "orders", "DatabaseName": "sales"}
    assert native_id_in(answer, "$.DatabaseName|$.TableName") == "sales|orders"


def test_a_compound_identifier_with_a_missing_part_names_no_id() -> None:
    assert native_id_in({"DatabaseName": "sales"}, "$.DatabaseName|$.TableName") == ""
    assert native_id_in({}, "$.Id") == "" and native_id_in({"Id": True}, "$.Id") == ""
