"""How the CLI shows a plan (``svc plan``, ``svc apply``): every change with what it does to the properties, the
one way to show a property change (old → new, multi-line values as a unified diff, secrets never), Terraform's
summary line; and how it reads a saved plan (a damaged one is a one-line error)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from svc.cli.errors import CliError
from svc.cli.plan_files import FORMAT, SavedPlan, read_plan, write_plan
from svc.cli.plan_render import plan_lines, summary_line
from svc.cli.property_changes import change_lines, patch_changes, value_lines
from svc.model import values, wire
from svc.model.wire import CommandView, DriftChange, SimulationView

SECRET = values.hashed_secret("hunter2")


def update(label: str, operation: str, **fields: object) -> dict[str, object]:
    return {"ResourceId": f"K-{label}", "ResourceType": "FAKE::Test::Item", "ResourceLabel": label,
            "StackName": "app", "Operation": operation, "State": "NotStarted", **fields}


PLAN = wire.decode(CommandView, {"CommandId": "", "Command": "apply", "Mode": "reconcile", "State": "NotStarted",
    "TargetUpdates": [{"TargetLabel": "cloud", "Operation": "create", "State": "NotStarted"}],
    "ResourceUpdates": [
        update("d", "delete", OldProperties={"Value": "gone", "Tags": ["x"]}, StateMessage="not in the forma (reconcile)"),
        update("c", "create", Properties={"Value": "line 1\nline 2", "Token": SECRET,
                                          "Ref": {"$ref": "svc://K-a#/Id"}, "Db": {"Host": "h", "Password": SECRET}}),
        update("b", "update", OldProperties={"Value": "one\ntwo\nthree", "Size": 1, "Token": SECRET, "Gone": "g"},
               Properties={"Value": "one\n2\nthree", "Size": 2, "Token": SECRET},
               PatchDocument=[{"op": "replace", "path": "/Value", "value": "one\n2\nthree"},
                              {"op": "replace", "path": "/Size", "value": 2},
                              {"op": "replace", "path": "/Token", "value": values.hashed_secret("hunter3")},
                              {"op": "add", "path": "/Note", "value": {"$ref": "svc://K-a#/Id", "$value": "id-a"}},
                              {"op": "remove", "path": "/Gone"}]),
        update("a", "delete", OldProperties={"Token": "t1", "Value": "v"}, GroupId="G",
               CreateOnlyPatch=[{"op": "replace", "path": "/Token", "value": "t2"}],
               PatchDocument=[{"op": "replace", "path": "/Value", "value": "w"}],
               StateMessage="create-only field(s) changed: Token"),
        update("a", "create", Properties={"Token": "t2", "Value": "w"}, GroupId="G",
               StateMessage="create-only field(s) changed: Token"),
    ]})


def test_each_change_shows_what_it_does_to_the_properties() -> None:
    assert plan_lines(PLAN) == [
        "+ create  target cloud",
        "± replace FAKE::Test::Item a (stack app): create-only field(s) changed: Token",
        '    /Token: "t1" → "t2"',
        '    /Value: "v" → "w"',  # the replace's other changes, after what forces it
        "~ update  FAKE::Test::Item b (stack app)",
        "    /Value:",
        "      @@ -1,3 +1,3 @@",
        "       one",
        "      -two",
        "      +2",
        "       three",
        "    /Size: 1 → 2",
        "    /Token: (sensitive) → (sensitive)",
        '    /Note: (absent) → "id-a"',
        '    /Gone: "g" → (absent)',
        "+ create  FAKE::Test::Item c (stack app)",
        "    /Value:",
        "      line 1",
        "      line 2",
        "    /Token: (sensitive)",
        "    /Ref: (known after apply)",
        '    /Db/Host: "h"',
        "    /Db/Password: (sensitive)",
        "- delete  FAKE::Test::Item d (stack app): not in the forma (reconcile)",
        '    /Value: "gone"',
        '    /Tags/0: "x"',
    ]
    assert summary_line(PLAN) == "Plan: 2 to add, 1 to change, 2 to destroy."  # a replace adds one, destroys one
    assert "hunter" not in "\n".join(plan_lines(PLAN)) and SECRET["$value"] not in "\n".join(plan_lines(PLAN))


def test_a_multi_line_value_added_or_removed_is_a_diff_from_or_to_nothing() -> None:
    assert change_lines([DriftChange(Path="/Script", New="a\nb")]) == ["/Script:", "  @@ -0,0 +1,2 @@", "  +a", "  +b"]
    assert change_lines([DriftChange(Path="/Script", Old="a\nb", New=SECRET)]) == ["/Script: \"a\\nb\" → (sensitive)"]
    assert change_lines(patch_changes([{"op": "remove", "path": "/Script"}], {"Script": "a\nb"})) == [
        "/Script:", "  @@ -1,2 +0,0 @@", "  -a", "  -b"]


def test_one_line_ending_in_a_newline_is_one_value_and_a_diff_needs_more_lines_on_a_side() -> None:
    assert change_lines([DriftChange(Path="/Content", Old="teal\n", New="red\n")]) == [
        '/Content: "teal\\n" → "red\\n"']
    assert change_lines([DriftChange(Path="/Content", Old="a\nb\n", New="c\n")]) == [
        "/Content:", "  @@ -1,2 +1 @@", "  -a", "  -b", "  +c"]


def test_a_stored_template_shows_the_text_its_resolved_parts_make() -> None:
    template = {"$embed": True, "$parts": [{"$ref": "svc://K#/Path", "$value": "site"}, "/index.html"]}
    assert value_lines({"Path": template}) == ['/Path: "site/index.html"']
    assert value_lines({"Path": {**template, "$parts": [{"$ref": "svc://K#/Path"}, "/x"]}}) == [
        "/Path: (known after apply)"]


def test_values_of_a_create_are_listed_leaf_by_leaf_and_envelopes_show_their_value() -> None:
    assert value_lines({"A": {"$value": "x", "$visibility": "Clear"}, "B": [], "C": {"D": [1, {"E": None}]}}) == [
        '/A: "x"', "/B: []", "/C/D/0: 1", "/C/D/1/E: null"]


def test_a_saved_plan_is_read_back_as_written_and_a_damaged_one_is_a_one_line_error(tmp_path: Path) -> None:
    simulation = SimulationView(ChangesRequired=True, Command=PLAN, Fingerprint={"resource app/T/a": "update:1"})
    saved = SavedPlan(source="main.pkl", mode="reconcile", force=False, plan=simulation,
                      forma={"Resources": [], "Stacks": [{"Label": "app"}]})
    path = tmp_path / "plan.out"
    write_plan(path, saved)
    assert path.stat().st_mode & 0o777 == 0o600
    again = read_plan(path)
    assert (again.plan, again.forma, again.mode, again.source) == (simulation, saved.forma, "reconcile", "main.pkl")

    def error(text: str) -> str:
        path.write_text(text)
        with pytest.raises(CliError) as raised:
            read_plan(path)
        message = str(raised.value)
        assert "\n" not in message and "svc plan -o" in message
        return message

    assert "is not a plan that svc plan -o wrote" in error("hello, I am not a plan")
    assert "is not a plan that svc plan -o wrote" in error("[1, 2]")
    assert "another format ('svc-plan/9'" in error(json.dumps({"Format": "svc-plan/9"}))
    damaged = saved.to_json()
    del damaged["Plan"]["Fingerprint"]
    assert "is damaged" in error(json.dumps(damaged))
    assert "is damaged" in error(json.dumps({**saved.to_json(), "Mode": "sideways"}))
    assert "is damaged" in error(json.dumps({**saved.to_json(), "Plan": {"ChangesRequired": "perhaps"}}))
    assert "does not exist" in error_missing(tmp_path / "nowhere.out")
    assert FORMAT == "svc-plan/1"

    destroy = SavedPlan(source="main.pkl", mode="reconcile", force=False, plan=simulation, forma=saved.forma,
                        on_dependents="cascade")
    write_plan(path, destroy)
    again = read_plan(path)
    assert (again.command, again.on_dependents) == ("destroy", "cascade")
    assert again.title == "svc plan --destroy --on-dependents cascade main.pkl"
    assert "is damaged" in error(json.dumps({**saved.to_json(), "OnDependents": "cascade"}))  # an apply's plan
    assert "is damaged" in error(json.dumps({**destroy.to_json(), "OnDependents": None}))


def error_missing(path: Path) -> str:
    with pytest.raises(CliError) as raised:
        read_plan(path)
    return str(raised.value)


@pytest.mark.parametrize("changes", [[u for u in PLAN.ResourceUpdates or [] if u.Operation == "create"][:1],
                                     PLAN.ResourceUpdates], ids=["creates", "every-operation"])
def test_a_plan_off_a_terminal_is_what_rich_prints(changes: list[object], monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from svc.cli import output, plan_render

    monkeypatch.setenv("COLUMNS", "40")
    for variable in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(variable, raising=False)
    simulation = SimulationView(ChangesRequired=True, Command=msgspec.structs.replace(PLAN, ResourceUpdates=changes))
    printed = []
    for plain in (True, False):  # written directly where it can be, then by Rich's styled text
        monkeypatch.setattr(plan_render, "console", output.LazyConsole())
        if not plain:
            monkeypatch.setattr(plan_render, "plain_line", lambda *_: None)
        plan_render.render_plan(simulation, "svc apply main.pkl")
        printed.append(capsys.readouterr().out)
        if plain:  # soft-wrapped lines (→ and ± too) are written as they are: Rich's console is not even made
            assert plan_render.console._rich is None
    assert printed[0] == printed[1]
    assert "+ create  FAKE::Test::Item c (stack app)" in printed[0]
