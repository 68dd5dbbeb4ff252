"""``svc plan`` and saved plans through the real CLI and a real agent running FAKE (issue 28, items 1 and 2).

The plan is a diff: creates list what they set, updates each change as old → new (a multi-line value as a
unified diff, a secret as ``(sensitive)``), a replace its create-only change, a delete what goes, then Terraform's
summary line; ``--detailed-exitcode`` answers 0, 2 or 1. ``svc plan -o FILE`` saves the plan (its secrets sealed by
the agent, never in clear) and ``svc apply FILE`` applies exactly it, or nothing when the inventory moved since;
the interactive ``svc apply`` likewise runs the plan it showed or nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from support.fake_world import World
from support.processes import run_svc_on_terminal

IMPORTS = ("@fake/app/vault.pkl",)


def item(label: str, value: str, token: str | None = None) -> str:
    token_line = f'; token = "{token}"' if token else ""
    return f'new item.Item {{ label = "{label}"; value = "{value}"{token_line} }}\n'


def vault(password: str) -> str:
    return f'new vault.Vault {{ label = "vault"; name = "app"; database {{ host = "h"; password = "{password}" }} }}\n'


def plan_lines(output: str) -> list[str]:
    """The plan's lines after its title."""
    lines = output.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("svc plan "))
    return lines[start + 1:]


def test_plan_shows_each_change_as_a_diff_and_its_exit_code_says_whether_anything_would_change(world: World) -> None:
    base = world.forma(item("a", "one\\ntwo\\nthree", "t") + item("b", "x") + item("d", "d1", "t") + vault("pw-1a2b"),
                       imports=IMPORTS)
    assert world.apply(base).returncode == 0
    calls = len(world.cloud.calls())
    changed = world.forma(item("a", "one\\n2\\nthree", "t") + item("c", "y") + item("d", "d1", "t2")
                          + vault("pw-3c4d"), imports=IMPORTS)

    planned = world.svc("plan", str(changed), "--detailed-exitcode")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert plan_lines(planned.stdout) == [
        "~ update  FAKE::App::Vault vault (stack app)",
        "    /Database/Password: (sensitive) → (sensitive)",
        "~ update  FAKE::Test::Item a (stack app)",
        "    /Value:",
        "      @@ -1,3 +1,3 @@",
        "       one",
        "      -two",
        "      +2",
        "       three",
        "- delete  FAKE::Test::Item b (stack app): not in the forma (reconcile)",
        '    /Value: "x"',
        "+ create  FAKE::Test::Item c (stack app)",
        '    /Value: "y"',
        "± replace FAKE::Test::Item d (stack app): create-only field(s) changed: Token",
        '    /Token: "t" → "t2"',
        "Plan: 2 to add, 2 to change, 2 to destroy.",
    ]
    assert "pw-" not in planned.stdout + planned.stderr
    assert len(world.cloud.calls()) == calls  # planning changed nothing

    machine = world.svc("plan", str(changed), "--output-consumer", "machine")
    assert machine.returncode == 0 and "pw-" not in machine.stdout
    assert json.loads(machine.stdout)["Fingerprint"]["resource app/FAKE::Test::Item/a"].startswith("update:")

    assert world.apply(changed).returncode == 0
    unchanged = world.svc("plan", str(changed), "--detailed-exitcode")
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "No changes: the resources already match the forma." in unchanged.stdout
    refused = world.svc("plan", "--mode", "patch", str(world.forma(item("z", "z"), name="other.pkl", stacks=("new",))),
                        "--detailed-exitcode")
    assert refused.returncode == 1 and refused.stderr.startswith("Error: plan refused by the agent (PatchRejected)")


def test_a_saved_plan_is_applied_exactly_and_never_holds_a_secret_in_clear(world: World) -> None:
    assert world.apply(world.forma(item("a", "v1") + vault("pw-old-5e6f"), imports=IMPORTS)).returncode == 0
    saved = world.directory / "plan.out"
    made = world.svc("plan", "-o", str(saved), str(world.forma(item("a", "v2") + item("c", "y") + vault("pw-new-7a8b"),
                                                                imports=IMPORTS)))
    assert made.returncode == 0, made.stdout + made.stderr
    assert f"Saved the plan to {saved}. Apply exactly it with: svc apply {saved}" in made.stdout
    text = saved.read_text()
    assert "pw-new-7a8b" not in text and "pw-old-5e6f" not in text and '"$sealed"' in text
    plan = json.loads(text)
    planned = sorted((u["ResourceLabel"], u["Operation"]) for u in plan["Plan"]["Command"]["ResourceUpdates"])
    assert planned == [("a", "update"), ("c", "create"), ("vault", "update")]
    calls = len(world.cloud.calls())
    (world.directory / "main.pkl").write_text("// the forma may change or go: the plan holds what it said\n")

    applied = world.svc("apply", str(saved), "--yes", "--wait", "--output-consumer", "machine")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    [command] = json.loads(applied.stdout)["Commands"]  # as svc command status ID prints it
    assert command["State"] == "Success"
    assert sorted((u["ResourceLabel"], u["Operation"]) for u in command["ResourceUpdates"]) == planned
    assert len(world.cloud.calls()) > calls
    [cloud_vault] = world.cloud_labels("FAKE::App::Vault").values()
    assert cloud_vault["properties"]["Database"]["Password"] == "pw-new-7a8b"  # the sealed secret reached the cloud
    values = {item["properties"]["Value"] for item in world.cloud_labels("FAKE::Test::Item").values()}
    assert values == {"v2", "y"}
    again = world.svc("apply", str(saved))  # the plan is used up: what it starts from has moved (to its end)
    assert again.returncode == 1 and "(PlanChanged)" in again.stderr


def test_a_stale_saved_plan_is_refused_and_changes_nothing(world: World) -> None:
    assert world.apply(world.forma(item("a", "v1") + item("b", "x"))).returncode == 0
    saved = world.directory / "plan.out"
    assert world.svc("plan", "-o", str(saved), str(world.forma(item("a", "v2") + item("b", "x")))).returncode == 0
    # Someone else applies another forma of the stack, changing a (which the plan updates), between the plan and its
    # apply: no drift for the reconcile gate (it is the stack's last reconcile), yet not what the plan starts from.
    assert world.apply(world.forma(item("a", "v9") + item("b", "x"), name="theirs.pkl")).returncode == 0
    calls = len(world.cloud.calls())
    refused = world.svc("apply", str(saved), "--wait")
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "Error: apply refused by the agent (PlanChanged): the inventory changed since this plan was made, so the "
        "agent plans otherwise now: resource app/FAKE::Test::Item/a (planned update, now from or to another state); "
        "nothing was changed: make the plan again (svc plan -o FILE FORMA)"]
    assert len(world.cloud.calls()) == calls
    assert {item["properties"]["Value"] for item in world.cloud_labels("FAKE::Test::Item").values()} == {"v9", "x"}

    # A resource added to the stack meanwhile: the reconcile the plan saved now also deletes it.
    assert world.svc("plan", "-o", str(saved), str(world.forma(item("a", "v2") + item("b", "x")))).returncode == 0
    assert world.apply(world.forma(item("a", "v9") + item("b", "x") + item("e", "e"), name="theirs.pkl")).returncode == 0
    refused = world.svc("apply", str(saved))
    assert refused.returncode == 1 and "resource app/FAKE::Test::Item/e (not planned, now delete)" in refused.stderr
    assert set(world.inventory()) == {"a", "b", "e"}


def test_a_file_that_is_not_a_saved_plan_is_a_one_line_error(world: World) -> None:
    garbage = world.directory / "plan.out"
    garbage.write_text("this is not a plan\n")
    result = world.svc("apply", str(garbage), "--yes")
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"Error: {garbage} is not a plan that svc plan -o wrote; svc apply takes a forma")
    assert world.svc("plan", "-o", str(garbage), str(world.forma(item("a", "v1")))).returncode == 0
    flagged = world.svc("apply", str(garbage), "--mode", "patch")
    assert flagged.returncode == 1 and len(flagged.stderr.splitlines()) == 1
    assert "--mode: a saved plan is applied as it was made" in flagged.stderr
    assert world.cloud.resources() == {}


def test_a_destroy_is_planned_saved_and_applied_exactly_like_an_apply(world: World) -> None:
    path = world.forma(item("a", "v1") + item("b", "x") + vault("pw-destroy-9c0d"), imports=IMPORTS)
    assert world.apply(path).returncode == 0
    calls = len(world.cloud.calls())

    planned = world.svc("plan", "--destroy", str(path), "--detailed-exitcode")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    lines = plan_lines(planned.stdout)
    assert "- delete  FAKE::Test::Item a (stack app)" in lines and lines[-1] == "Plan: 0 to add, 0 to change, 3 to destroy."
    assert "pw-destroy" not in planned.stdout
    assert len(world.cloud.calls()) == calls  # planning changed nothing
    wrong = world.svc("plan", "--destroy", "--mode", "patch", str(path))
    assert wrong.returncode == 1 and wrong.stderr.startswith("Error: --mode: how an apply treats the forma")
    wrong = world.svc("plan", "--on-dependents", "cascade", str(path))
    assert wrong.returncode == 1 and "use it with --destroy" in wrong.stderr

    saved = world.directory / "destroy.plan"
    assert world.svc("plan", "--destroy", "-o", str(saved), str(path)).returncode == 0
    text = saved.read_text()
    assert "pw-destroy-9c0d" not in text and '"$sealed"' in text
    assert json.loads(text)["Command"] == "destroy" and json.loads(text)["OnDependents"] == "abort"
    # A resource added to the forma's stack meanwhile is not what the plan deletes, but one it deletes changed:
    # the plan is refused, and nothing is destroyed.
    assert world.apply(world.forma(item("a", "v2") + item("b", "x") + vault("pw-destroy-9c0d"), imports=IMPORTS,
                                   name="theirs.pkl")).returncode == 0
    refused = world.svc("apply", str(saved), "--yes")
    assert refused.returncode == 1 and "(PlanChanged)" in refused.stderr
    assert set(world.inventory()) == {"a", "b", "vault"}

    assert world.svc("plan", "--destroy", "-o", str(saved), str(path)).returncode == 0
    applied = world.svc("apply", str(saved), "--yes", "--wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert f"svc apply {saved} (saved by: svc plan --destroy --on-dependents abort {path})" in applied.stdout
    assert world.inventory() == {} and world.cloud.resources() == {}
    nothing = world.svc("plan", "--destroy", str(path), "--detailed-exitcode")
    assert nothing.returncode == 0 and "No resources to destroy: nothing managed matches the forma." in nothing.stdout


def run_in_terminal(world: World, *args: str, before_answer: Callable[[], Any]) -> tuple[int, str]:
    """The CLI on a pseudo-terminal (so it asks); ``before_answer`` runs once it asks, then it is answered yes."""
    return run_svc_on_terminal(*args, "--config", str(world.agent.config), answer="y",
                               env={"COLUMNS": "200", "TERM": "xterm"}, timeout=90, before_answer=before_answer)


def test_the_interactive_apply_runs_the_plan_it_showed_or_nothing(world: World) -> None:
    assert world.apply(world.forma(item("a", "v1"))).returncode == 0
    path = world.forma(item("a", "v2"), name="next.pkl")

    def someone_else_changes_a() -> None:
        assert world.apply(world.forma(item("a", "v9"), name="theirs.pkl")).returncode == 0

    code, output = run_in_terminal(world, "apply", str(path), before_answer=someone_else_changes_a)
    assert code == 1, output
    assert '/Value: "v1" → "v2"' in output
    assert ("apply refused: the inventory changed since the plan was shown (resource app/FAKE::Test::Item/a "
            "(planned update, now from or to another state)); nothing was changed") in " ".join(output.split())
    assert [item["properties"]["Value"] for item in world.cloud_labels("FAKE::Test::Item").values()] == ["v9"]
