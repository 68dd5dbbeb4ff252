"""The wire shapes (``svc.model.wire``) write the documents the reference API does and read an agent's answers
leniently; the CLI's config block (``svc.config.cli_model``) decodes as Pkl renders it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import msgspec
import pytest

from svc.config.cli_model import decode_cli_block
from svc.model import wire


def _update(**fields: object) -> wire.ResourceUpdateView:
    return wire.ResourceUpdateView(ResourceId="k", ResourceType="FAKE::Test::Item", Operation="create",
                                   State="Success", **fields)  # type: ignore[arg-type]


def test_to_json_leaves_out_none_fields_at_every_level_of_shapes_but_not_inside_documents() -> None:
    command = wire.CommandView(CommandId="c", Command="apply", State="Success", ResourceUpdates=[
        _update(Properties={"Value": None, "Nested": {"Key": None}}, PatchDocument=[{"op": "add", "value": None}])])

    assert command.to_json() == {"CommandId": "c", "Command": "apply", "State": "Success", "ResourceUpdates": [
        {"ResourceId": "k", "ResourceType": "FAKE::Test::Item", "Operation": "create", "State": "Success",
         "PatchDocument": [{"op": "add", "value": None}], "Properties": {"Value": None, "Nested": {"Key": None}}}]}


def test_to_json_keeps_false_zero_and_empty_values_and_writes_shapes_in_mappings() -> None:
    assert wire.TargetUpdateView(TargetLabel="t", Operation="create", State="Success").to_json() == {
        "TargetLabel": "t", "Operation": "create", "State": "Success", "Discoverable": False}
    assert wire.CancelCommandResponse(CommandIds=["c"], ResourceUpdateStates={
        "svc://k#": wire.CanceledUpdateState(State="Canceled")}).to_json() == {
        "CommandIds": ["c"], "ResourceUpdateStates": {"svc://k#": {"State": "Canceled"}}}
    assert wire.SyncReportView().to_json(nulls=True) == {"CommandId": None, "Changed": []}


def test_timestamps_are_rfc_3339_with_utc_as_z() -> None:
    def started(at: datetime) -> object:
        return _update(StartedAt=at).to_json()["StartedAt"]

    assert started(datetime(2026, 1, 2, 3, 4, 5, 120, tzinfo=UTC)) == "2026-01-02T03:04:05.000120Z"
    assert started(datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))) == "2026-01-02T03:04:05+02:00"
    assert started(datetime(2026, 1, 2)) == "2026-01-02T00:00:00"


def test_decode_drops_unknown_fields_and_reads_nested_shapes_and_timestamps() -> None:
    answer = (b'{"CommandId":"c","Simulation":{"ChangesRequired":true,"Command":{"CommandId":"c","Command":"apply",'
              b'"State":"NotStarted","StartTs":"2026-01-02T03:04:05Z","ResourceUpdates":[{"ResourceId":"k",'
              b'"ResourceType":"T","Operation":"create","State":"NotStarted","NewField":1}]}},"Later":{}}')

    decoded = wire.decode(wire.SubmitCommandResponse, answer)

    assert decoded.Simulation.Command.StartTs == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert decoded.Simulation.Command.ResourceUpdates[0].ResourceId == "k"
    assert decoded.Description == wire.DescriptionView()
    assert wire.decode(list[wire.ResourceSummary], [{"Label": "a", "Stack": "s", "Type": "T"}])[0].Label == "a"


@pytest.mark.parametrize(("document", "where", "message"), [
    ({"Commands": [{"CommandId": "c", "Command": "apply"}]}, "Commands[0].State", "missing"),
    ({"Commands": [{"CommandId": 1, "Command": "apply", "State": "Success"}]}, "Commands[0].CommandId",
     "Expected `str`, got `int`"),
    ({"Commands": [{"CommandId": "c", "Command": "sideways", "State": "Success"}]}, "Commands[0].Command",
     "Invalid enum value 'sideways'"),
    ([], "the answer", "Expected `object`, got `array`"),
    (b"{", "the answer", "not JSON (Input data was truncated)"),
])
def test_decode_says_which_field_is_wrong(document: object, where: str, message: str) -> None:
    with pytest.raises(wire.WireError) as raised:
        wire.decode(wire.ListCommandStatusResponse, document)

    assert (raised.value.where, raised.value.message) == (where, message)


def test_a_drift_change_tells_an_absent_value_from_a_null_one() -> None:
    added = wire.decode(wire.DriftChange, {"Path": "/Tags/1", "New": "y"})
    nulled = wire.decode(wire.DriftChange, {"Path": "/Unset", "Old": None, "New": "set"})

    assert added.Old is msgspec.UNSET and nulled.Old is None
    assert added.to_json() == {"Path": "/Tags/1", "New": "y"}


def test_the_cli_block_decodes_as_pkl_renders_it_and_round_trips() -> None:
    block = {"api": {"url": "localhost", "port": 49684, "retryFor": 1500},
             "auth": {"type": "basic", "username": "ops", "password": "s3cret"},
             "upgrade": {"indexUrl": None, "findLinks": ["/wheels"]}}

    cli = decode_cli_block(block)

    assert (cli.api.base_url, cli.api.retry_for) == ("http://localhost:49684", timedelta(seconds=1.5))
    assert cli.upgrade.find_links == ("/wheels",)
    assert "s3cret" not in repr(cli) and "s3cret" not in str(cli)
    assert decode_cli_block(cli.to_json()) == cli


def test_a_wrong_cli_block_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"unknown field `colour` - at `cli.api`"):
        decode_cli_block({"api": {"url": "h", "port": 1, "retryFor": 0, "colour": "red"},
                          "upgrade": {"findLinks": []}})
    with pytest.raises(ValueError, match=r"Expected `int`, got `str` - at `cli.api.port`"):
        decode_cli_block({"api": {"url": "h", "port": "high", "retryFor": 0}, "upgrade": {"findLinks": []}})
