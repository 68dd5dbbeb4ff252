"""Forma properties as typed CLI flags."""

from __future__ import annotations

import pytest

from svc.cli.errors import CliError
from svc.cli.forma_commands import parse_property_flags, property_help_rows
from svc.forma.arguments import read_flags
from svc.model.forma import Property

PROPERTIES = {
    "name": Property(flag="name"),
    "replicas": Property(flag="replicas", type="Int", default=1),
    "ratio": Property(flag="ratio", type="Float", default=0.5),
    "dryRun": Property(flag="dry-run", type="Boolean", default=False),
}


def test_given_flags_are_typed_and_passed_as_text() -> None:
    flags = parse_property_flags(PROPERTIES, ["--name", "web", "--replicas", "3", "--ratio", "2.5", "--dry-run"])
    assert flags == {"name": "web", "replicas": "3", "ratio": "2.5", "dry-run": "true"}


def test_defaults_are_left_to_the_forma_and_booleans_can_be_turned_off() -> None:
    # A default is the forma's own (Prop.value, a typed property's default): it needs no prop: value.
    assert parse_property_flags(PROPERTIES, ["--name", "x", "--no-dry-run"]) == {"name": "x", "dry-run": "false"}


@pytest.mark.parametrize("args", [
    ["--name", "web", "--replicas", "3", "--ratio", "2.5", "--dry-run"],
    ["--name=web", "--no-dry-run", "--replicas=-1"],
    ["--dry-run", "--name", "a b", "--ratio", "-0.5"],
    ["--name", ""],
])
def test_flags_read_without_the_declarations_are_the_parsed_ones(args: list[str]) -> None:
    # What lets the CLI evaluate a forma once (svc.forma.arguments): a well-formed command line read plainly.
    assert read_flags(args) == parse_property_flags(PROPERTIES, args)


def test_a_value_the_parser_writes_another_way_is_read_as_given() -> None:
    # The parser's 2.0 differs: the forma is then evaluated again with the parsed values.
    assert read_flags(["--name", "x", "--ratio", "2"]) == {"name": "x", "ratio": "2"}
    assert parse_property_flags(PROPERTIES, ["--name", "x", "--ratio", "2"]) == {"name": "x", "ratio": "2.0"}


@pytest.mark.parametrize(("args", "message"), [
    ([], "Missing option '--name'."),
    (["--name", "x", "--replicas", "two"], "Invalid value for '--replicas': 'two' is not a valid integer."),
    (["--name", "x", "--colour", "red"], "No such option '--colour'."),
])
def test_bad_flags_are_cli_errors(args: list[str], message: str) -> None:
    with pytest.raises(CliError) as caught:
        parse_property_flags(PROPERTIES, args)
    assert str(caught.value) == message


def test_help_rows_show_flag_type_default_and_description() -> None:
    described = {**PROPERTIES, "suffix": Property(flag="suffix", default="", description="Appended to names.")}
    assert property_help_rows(described) == [
        (True, "--name", "<String>", "[required]"),
        (False, "--replicas", "<Int>", "[default: 1]"),
        (False, "--ratio", "<Float>", "[default: 0.5]"),
        (False, "--dry-run/--no-dry-run", "<Boolean>", "[default: false]"),
        (False, "--suffix", "<String>", 'Appended to names. [default: ""]'),
    ]
