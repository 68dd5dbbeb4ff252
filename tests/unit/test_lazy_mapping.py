"""``LazyMapping`` and the catalog over it: a type's schema is made when first read, never by adding, removing or
listing types (an agent with the full AWS package knows ~1,700 types and starts without validating them)."""

from __future__ import annotations

import pytest

from svc.engine.planner import Catalog
from svc.model.lazy import LazyMapping
from svc.model.schema import Schema


def counting(names: list[str]) -> tuple[LazyMapping[Schema], list[str]]:
    made: list[str] = []

    def maker(name: str):
        return lambda: made.append(name) or Schema(identifier=f"$.{name.split('::')[-1]}Id")

    return LazyMapping({name: maker(name) for name in names}), made


def test_keys_are_known_without_making_values_and_each_value_is_made_once() -> None:
    schemas, made = counting(["AWS::S3::Bucket", "AWS::SQS::Queue"])
    assert list(schemas) == ["AWS::S3::Bucket", "AWS::SQS::Queue"] and len(schemas) == 2
    assert "AWS::S3::Bucket" in schemas and "AWS::SNS::Topic" not in schemas
    assert made == [] and schemas.made() == 0
    assert schemas["AWS::S3::Bucket"].identifier == "$.BucketId"
    assert schemas["AWS::S3::Bucket"] is schemas.get("AWS::S3::Bucket")
    assert made == ["AWS::S3::Bucket"] and schemas.made() == 1
    assert schemas.get("AWS::SNS::Topic") is None
    with pytest.raises(KeyError):
        schemas["AWS::SNS::Topic"]


def test_merging_selecting_and_mapping_make_nothing_and_keep_what_was_made() -> None:
    schemas, made = counting(["AWS::S3::Bucket", "AWS::SQS::Queue"])
    bucket = schemas["AWS::S3::Bucket"]
    merged = schemas.merged({"FAKE::Test::Thing": Schema(identifier="$.Id")})
    assert sorted(merged) == ["AWS::S3::Bucket", "AWS::SQS::Queue", "FAKE::Test::Thing"]
    assert merged.made() == 2 and made == ["AWS::S3::Bucket"]  # the bucket as it was made, the plain value
    assert merged["AWS::S3::Bucket"] is bucket
    selected = merged.selected(["AWS::SQS::Queue"])
    identifiers = selected.mapped(lambda schema: schema.identifier)
    assert list(identifiers) == ["AWS::SQS::Queue"] and made == ["AWS::S3::Bucket"]
    assert identifiers["AWS::SQS::Queue"] == "$.QueueId" and made == ["AWS::S3::Bucket", "AWS::SQS::Queue"]


def test_the_catalog_adds_removes_and_lists_a_plugins_types_without_validating_them() -> None:
    schemas, made = counting(["AWS::S3::Bucket", "AWS::SQS::Queue"])
    catalog = Catalog(frozenset({"FAKE"}), {"FAKE::Test::Thing": Schema(identifier="$.Id")})
    catalog.add("AWS", schemas)
    assert sorted(catalog.types) == ["AWS::S3::Bucket", "AWS::SQS::Queue", "FAKE::Test::Thing"]
    assert sorted(catalog.types_of("aws")) == ["AWS::S3::Bucket", "AWS::SQS::Queue"]
    catalog.remove("FAKE")
    assert sorted(catalog.types) == ["AWS::S3::Bucket", "AWS::SQS::Queue"] and catalog.namespaces == {"AWS"}
    assert made == []
    assert catalog.types["AWS::SQS::Queue"].identifier == "$.QueueId" and made == ["AWS::SQS::Queue"]
