"""The query language parser: pure, no database."""

from __future__ import annotations

import pytest

from svc.datastore.query import (
    COMMAND_FIELDS,
    DESTROY_FIELDS,
    RESOURCE_FIELDS,
    STAR,
    BoolFilter,
    InvalidQueryError,
    Pattern,
    Query,
    TextFilter,
    parse_query,
)
from svc.datastore.query_sql import like_pattern


def lit(text: str) -> Pattern:
    return Pattern.literal(text)


def test_empty_query_matches_everything() -> None:
    assert parse_query("") == Query("resources")
    assert parse_query("   \t ") == Query("resources")


def test_fields_values_and_order() -> None:
    query = parse_query("stack:prod type:AWS::S3::Bucket managed:false")
    assert query.filters == (
        TextFilter("stack", (lit("prod"),)),
        TextFilter("type", (lit("AWS::S3::Bucket"),)),
        BoolFilter("managed", (False,)),
    )


def test_double_colons_need_no_escaping_anywhere() -> None:
    assert parse_query("-type:AWS::EC2::*").get("type") == TextFilter("type", (), (Pattern(("AWS::EC2::", STAR)),))
    assert parse_query('label:"a::b c"').get("label") == TextFilter("label", (lit("a::b c"),))
    assert parse_query("type:AWS::S3::Bucket", DESTROY_FIELDS).get("type") == TextFilter(
        "type", (lit("AWS::S3::Bucket"),))


def test_repeated_terms_or_included_and_keep_excluded() -> None:
    query = parse_query("target:eu +target:us -stack:a -stack:b stack:c*")
    assert query.get("target") == TextFilter("target", (lit("eu"), lit("us")))
    assert query.get("stack") == TextFilter("stack", (Pattern(("c", STAR)),), (lit("a"), lit("b")))


def test_duplicates_collapse() -> None:
    assert parse_query("stack:a stack:a").get("stack") == TextFilter("stack", (lit("a"),))


def test_field_names_are_case_insensitive_values_are_not() -> None:
    assert parse_query("STACK:Prod").get("stack") == TextFilter("stack", (lit("Prod"),))


def test_quotes_group_and_backslashes_escape() -> None:
    assert parse_query('label:"my app"').get("label") == TextFilter("label", (lit("my app"),))
    assert parse_query(r'label:"say \"hi\""').get("label") == TextFilter("label", (lit('say "hi"'),))
    assert parse_query(r"label:a\ b").get("label") == TextFilter("label", (lit("a b"),))
    assert parse_query(r"label:a\*b").get("label") == TextFilter("label", (lit("a*b"),))
    assert parse_query('label:""').get("label") == TextFilter("label", (Pattern(()),))
    assert parse_query('label:"x*"').get("label") == TextFilter("label", (Pattern(("x", STAR)),))


def test_wildcards_anywhere() -> None:
    assert parse_query("label:*foo").get("label") == TextFilter("label", (Pattern((STAR, "foo")),))
    assert parse_query("label:foo*bar").get("label") == TextFilter("label", (Pattern(("foo", STAR, "bar")),))
    assert parse_query("label:*f**").get("label") == TextFilter("label", (Pattern((STAR, "f", STAR)),))


def test_sql_like_escapes_percent_underscore_and_backslash() -> None:
    assert like_pattern(Pattern(("50%_off\\", STAR))) == "50\\%\\_off\\\\%"
    assert like_pattern(Pattern((STAR, "a", STAR))) == "%a%"


def test_pattern_matches_like_sql_would() -> None:
    pattern = parse_query("label:a%*_z").get("label")
    assert isinstance(pattern, TextFilter)
    assert pattern.include[0].matches("a%mid_z") and not pattern.include[0].matches("abz")


@pytest.mark.parametrize("managed, expected", [("true", True), ("T", True), ("1", True), ("False", False),
                                                ("0", False), ("f", False)])
def test_booleans(managed: str, expected: bool) -> None:
    assert parse_query(f"managed:{managed}").get("managed") == BoolFilter("managed", (expected,))


@pytest.mark.parametrize("text, term, reason", [
    ("prod", "prod", "explicit field"),
    ("AWS::S3::Bucket", "AWS::S3::Bucket", "explicit field"),
    ("color:red", "color:red", "unknown field 'color'"),
    ("stack:", "stack:", "empty"),
    ("label:a?b", "label:a?b", "'?' wildcards are not supported"),
    ("label:*", "label:*", "matches everything"),
    ("-stack:**", "-stack:**", "matches everything"),
    ("managed:maybe", "managed:maybe", "true or false"),
    ('label:"open', 'label:"open', "unterminated"),
    ("stack:a\\", "stack:a\\", "trailing backslash"),
])
def test_invalid_queries_name_the_term_and_the_valid_fields(text: str, term: str, reason: str) -> None:
    with pytest.raises(InvalidQueryError) as caught:
        parse_query(f"stack:ok {text}")
    error = caught.value
    assert error.term == term and reason in error.reason
    assert error.valid_fields == ("stack", "type", "label", "target", "managed")
    assert f"'{term}'" in str(error) and "valid fields: stack, type, label, target, managed" in str(error)


def test_contexts_have_their_own_fields() -> None:
    with pytest.raises(InvalidQueryError, match="cannot be used in destroy queries"):
        parse_query("managed:true", DESTROY_FIELDS)
    assert parse_query("native_id:i-123", DESTROY_FIELDS).get("native_id") == TextFilter("native_id", (lit("i-123"),))
    with pytest.raises(InvalidQueryError, match="unknown field 'native_id'"):
        parse_query("native_id:i-123", RESOURCE_FIELDS)
    query = parse_query("client:me status:InProgress command:apply", COMMAND_FIELDS)
    assert [f.field for f in query.filters] == ["client", "status", "command"]


def test_pattern_renders_back_to_query_text() -> None:
    assert str(Pattern(("a b*", STAR))) == "a\\ b\\**"
    text = str(Pattern(("x:y", STAR, '"q"')))
    assert parse_query(f"label:{text}").get("label") == TextFilter("label", (Pattern(("x:y", STAR, '"q"')),))
