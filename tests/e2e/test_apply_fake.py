"""The engine end to end (issue 5's acceptance list): a real agent process running the FAKE plugin, driven by
the real ``svc`` CLI; what happened is read back from the FAKE cloud's own file and from the inventory."""

from __future__ import annotations

import json
from typing import Any

import httpx

from support.fake_world import NET_AND_SUBNET, World, chain, submit, wait_running
from support.processes import run_svc, run_svc_on_terminal

# -- create, update, replace --------------------------------------------------------------------------------

def test_create_in_dependency_order(world: World) -> None:
    result = world.apply(world.forma(NET_AND_SUBNET + chain("a", "b", "c")))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "succeeded" in result.stdout
    creates = [call["type"] for call in world.cloud.calls("create")]
    assert creates.index("FAKE::Net::Network") < creates.index("FAKE::Net::Subnet")
    [(net_id, _)] = world.cloud_labels("FAKE::Net::Network").items()
    [(_, subnet)] = world.cloud_labels("FAKE::Net::Subnet").items()
    assert subnet["properties"]["NetworkId"] == net_id  # the reference resolved at execution time
    items = world.cloud_labels("FAKE::Test::Item")
    by_value = {item["properties"]["Value"]: (native_id, item["properties"]) for native_id, item in items.items()}
    assert by_value["v-b"][1]["Ref"] == by_value["v-a"][0] and by_value["v-c"][1]["Ref"] == by_value["v-b"][0]
    inventory = world.inventory()
    assert set(inventory) == {"net", "sub", "a", "b", "c"}
    assert inventory["net"]["NativeID"] == net_id and all(r.get("Managed") for r in inventory.values())
    again = world.apply(world.forma(NET_AND_SUBNET + chain("a", "b", "c")))
    assert again.returncode == 0 and "No changes needed" in again.stdout


def test_update_in_place_and_replace_on_a_create_only_change(world: World) -> None:
    assert world.apply(world.forma(chain("a"))).returncode == 0
    [original] = world.cloud_labels("FAKE::Test::Item")
    updated = world.apply(world.forma(chain("a", value="w")))
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert world.cloud_labels("FAKE::Test::Item")[original]["properties"]["Value"] == "w-a"  # same native id
    assert [call["op"] for call in world.cloud.calls() if call["op"] in ("create", "delete")] == ["create"]

    plan = world.svc("apply", "--mode", "reconcile", str(world.forma(chain("a", value="w", token="t2"))),
                     "--simulate", "--output-consumer", "machine")
    assert plan.returncode == 0, plan.stderr
    operations = {u["Operation"] for u in json.loads(plan.stdout)["Command"]["ResourceUpdates"]}
    assert "replace" in operations or operations == {"delete", "create"}
    human = world.svc("apply", "--mode", "reconcile", str(world.forma(chain("a", value="w", token="t2"))),
                      "--simulate")
    row = next(line for line in human.stdout.splitlines() if "FAKE::Test::Item" in line)
    assert "± replace" in row and "create-only field(s) changed: Token" in row
    assert '    /Token: "t" → "t2"' in human.stdout.splitlines()
    assert "Plan: 1 to add, 0 to change, 1 to destroy." in human.stdout
    replaced = world.apply(world.forma(chain("a", value="w", token="t2")))
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    [(new_id, item)] = world.cloud_labels("FAKE::Test::Item").items()
    assert new_id != original and item["properties"]["Token"] == "t2"
    assert world.inventory()["a"]["NativeID"] == new_id


# -- reconcile vs patch, simulate, drift ----------------------------------------------------------------------

def test_reconcile_deletes_what_the_forma_dropped_and_patch_does_not(world: World) -> None:
    assert world.apply(world.forma(chain("a") + chain("b"))).returncode == 0
    assert world.apply(world.forma(chain("a", value="p")), "patch").returncode == 0
    assert set(world.inventory()) == {"a", "b"}
    assert len(world.cloud_labels("FAKE::Test::Item")) == 2
    result = world.apply(world.forma(chain("a", value="p")), "reconcile", "--force")
    assert result.returncode == 0, result.stdout + result.stderr
    assert set(world.inventory()) == {"a"}
    [item] = world.cloud_labels("FAKE::Test::Item").values()
    assert item["properties"]["Value"] == "p-a"


def test_simulate_changes_nothing(world: World) -> None:
    path = world.forma(NET_AND_SUBNET)
    human = world.svc("apply", "--mode", "reconcile", str(path), "--simulate")
    assert human.returncode == 0, human.stderr
    assert "+ create" in human.stdout and "Simulation only: nothing was changed." in human.stdout
    machine = world.svc("apply", "--mode", "reconcile", str(path), "--simulate", "--output-consumer", "machine")
    simulation = json.loads(machine.stdout)
    assert simulation["ChangesRequired"] is True
    assert sorted(u["ResourceLabel"] for u in simulation["Command"]["ResourceUpdates"]) == ["net", "sub"]
    assert world.cloud.resources() == {} and world.cloud.calls("create") == []
    assert world.stats()["Commands"] == {} and world.stats()["Resources"] == {}


def test_reconcile_is_refused_after_an_out_of_band_change_then_forced(world: World) -> None:
    assert world.apply(world.forma(chain("a"))).returncode == 0
    # A patch outside the reconciled forma is an out-of-band change for the next reconcile.
    assert world.apply(world.forma(chain("a", value="patched")), "patch").returncode == 0
    path = world.forma(chain("a"))
    refused = world.apply(path)
    assert refused.returncode == 1
    out = refused.stdout
    # The changed resource with what changed, then both ways out: keep it (extract), or revert it (--force).
    assert "Stack app:" in out and "update  a (FAKE::Test::Item)" in out, out
    assert '/Value: "v-a" → "patched-a"' in out, out  # what the reconcile would undo: reconciled → now
    assert "keep the change:   svc extract --query 'stack:app' <file.pkl>" in out, out
    assert f"revert the change: svc apply --mode reconcile --force {path}" in out, out
    assert refused.stderr == ("Error: reconcile refused: app changed outside this forma since the last reconcile "
                              "(listed above)\n"), refused.stderr
    [item] = world.cloud_labels("FAKE::Test::Item").values()
    assert item["properties"]["Value"] == "patched-a"  # nothing was changed
    forced = world.apply(world.forma(chain("a")), "reconcile", "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    [item] = world.cloud_labels("FAKE::Test::Item").values()
    assert item["properties"]["Value"] == "v-a"


# -- faults ---------------------------------------------------------------------------------------------------

def test_throttling_is_retried_until_success(world: World) -> None:
    world.cloud.set_knob("throttle", {"remaining": 3, "ops": ["create"]})
    result = world.apply(world.forma(chain("a")))
    assert result.returncode == 0, result.stdout + result.stderr
    assert world.cloud.knobs()["throttle"]["remaining"] == 0  # every throttled call was retried
    assert len(world.cloud_labels("FAKE::Test::Item")) == 1 and len(world.cloud.calls("create")) == 1


def test_a_hard_failure_fails_its_dependents_without_running_them(world: World) -> None:
    world.cloud.set_knob("fail", {"code": "AccessDenied", "ops": ["create"], "types": ["FAKE::Net::Network"]})
    result = world.apply(world.forma(NET_AND_SUBNET + chain("x")))
    assert result.returncode == 1
    assert "ended Failed" in result.stdout
    listed = world.svc("command", "status", "--output-consumer", "machine")
    command = json.loads(listed.stdout)["Commands"][0]
    states = {u["ResourceLabel"]: u for u in command["ResourceUpdates"]}
    assert command["State"] == "Failed"
    assert states["net"]["State"] == "Failed" and "AccessDenied" in states["net"]["ErrorMessage"]
    assert states["sub"]["State"] == "Failed"  # never attempted: it needed the network
    assert states["x"]["State"] == "Success"  # independent work goes on
    assert world.cloud_labels("FAKE::Net::Subnet") == {}
    assert "FAKE::Net::Subnet" not in {call["type"] for call in world.cloud.calls()}


# -- cancel, conflicts ----------------------------------------------------------------------------------------

def test_cancel_lets_running_updates_finish_and_skips_the_rest(world: World) -> None:
    world.cloud.set_knob("hang", {"ops": ["create"]})  # a's create runs until the knob is cleared, however slow
    command_id = submit(world, world.forma(chain("a", "b", "c")))  # the CLI and the agent are under load
    wait_running(world, command_id, "a")  # b and c wait for a: they have not started
    canceled = world.svc("cancel", "--query", f"id:{command_id}", "--output-consumer", "machine",
                         "--output-schema", "json")
    assert canceled.returncode == 0, canceled.stderr
    assert json.loads(canceled.stdout)["CommandIds"] == [command_id]
    world.cloud.clear_knobs()  # a's create goes on and finishes
    final = world.wait_terminal(command_id)
    assert final["State"] == "Canceled"
    states = {u["ResourceLabel"]: u["State"] for u in final["ResourceUpdates"]}
    assert states == {"a": "Success", "b": "Canceled", "c": "Canceled"}
    assert len(world.cloud_labels("FAKE::Test::Item")) == 1
    nothing = world.svc("cancel", "--query", f"id:{command_id}")
    assert nothing.returncode == 0 and "No commands to cancel." in nothing.stdout


def test_force_cancel_ends_the_command_at_once(world: World) -> None:
    world.cloud.set_knob("hang", {"ops": ["create"]})
    command_id = submit(world, world.forma(chain("a")))
    wait_running(world, command_id, "a")
    refused = world.svc("cancel", "--force")
    assert refused.returncode == 1 and "pass --yes" in refused.stderr
    forced = world.svc("cancel", "--force", "--yes")
    assert forced.returncode == 0, forced.stderr
    assert f"Canceled command {command_id} (forced)" in forced.stdout
    assert world.wait_terminal(command_id, timeout=5)["State"] == "Canceled"
    world.cloud.clear_knobs()


def test_a_conflicting_apply_is_refused_with_409(world: World) -> None:
    world.cloud.set_knob("hang", {"ops": ["create"]})  # the first command runs until the knob is cleared
    first = submit(world, world.forma(chain("a")))
    wait_running(world, first, "a")
    second = world.apply(world.forma(chain("a", "b")))
    assert second.returncode == 1
    [line] = second.stderr.strip().splitlines()
    assert "(ConflictingCommands)" in line and first in line
    world.cloud.clear_knobs()
    assert world.wait_terminal(first)["State"] == "Success"


# -- destroy --------------------------------------------------------------------------------------------------

def test_destroy_by_file_and_by_query(world: World) -> None:
    app = world.forma(NET_AND_SUBNET, name="app.pkl")
    other = world.forma(chain("k"), name="other.pkl", stacks=("other",))
    assert world.apply(app).returncode == 0 and world.apply(other).returncode == 0
    by_query = world.svc("destroy", "--query", "stack:other", "--yes", "--wait")
    assert by_query.returncode == 0, by_query.stdout + by_query.stderr
    assert set(world.inventory()) == {"net", "sub"} and world.cloud_labels("FAKE::Test::Item") == {}
    simulated = world.svc("destroy", str(app), "--simulate", "--output-consumer", "machine")
    assert {u["Operation"] for u in json.loads(simulated.stdout)["Command"]["ResourceUpdates"]} == {"delete"}
    assert len(world.cloud.resources()) == 2  # the simulation deleted nothing
    by_file = world.svc("destroy", str(app), "--yes", "--wait")
    assert by_file.returncode == 0, by_file.stdout + by_file.stderr
    deletes = [call["type"] for call in world.cloud.calls("delete")]
    assert deletes.index("FAKE::Net::Subnet") < deletes.index("FAKE::Net::Network")  # children first
    assert world.cloud.resources() == {} and world.inventory() == {}
    nothing = world.svc("destroy", str(app), "--yes")
    assert nothing.returncode == 0 and "No resources to destroy" in nothing.stdout


# -- bad input ------------------------------------------------------------------------------------------------

def post_forma(world: World, forma: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{world.api}/commands", headers={"Client-ID": "test"},
                      files={"command": (None, b"apply"), "mode": (None, b"reconcile"),
                             "file": ("forma.json", json.dumps(forma).encode(), "application/json")})


def test_bad_inputs_are_4xx_with_a_clear_message_and_store_nothing(world: World) -> None:
    evaluated = json.loads(run_svc("eval", str(world.forma(chain("a"))), "--output-consumer", "machine").stdout)
    unknown_type = json.loads(json.dumps(evaluated))
    unknown_type["Resources"][0]["Type"] = "FAKE::Nope::Thing"
    response = post_forma(world, unknown_type)
    assert 400 <= response.status_code < 500 and "FAKE::Nope::Thing" in response.text
    unknown_target = json.loads(json.dumps(evaluated))
    unknown_target["Resources"][0]["Target"] = "mars"
    response = post_forma(world, unknown_target)
    assert 400 <= response.status_code < 500 and "mars" in response.text

    missing = world.apply(world.forma('new subnet.Subnet { label = "s"; networkId = "net-1" }'))
    assert missing.returncode == 1
    assert "RequiredFieldMissingOnCreate" in missing.stderr and "Cidr" in missing.stderr
    cycle = world.apply(world.forma("""\
        local a = new item.Item { label = "a"; ref = b.res.id }
        local b = new item.Item { label = "b"; ref = a.res.id }
        a
        b
    """))
    assert cycle.returncode == 1 and "CyclesDetected" in cycle.stderr
    garbage = httpx.post(f"{world.api}/commands", headers={"Client-ID": "test"},
                         files={"command": (None, b"apply"), "mode": (None, b"reconcile"),
                                "file": ("forma.json", b"{oops", "application/json")})
    assert garbage.status_code == 400 and "not valid JSON" in garbage.json()["message"]
    stats = world.stats()
    assert (stats["Commands"], stats["Resources"], stats["Stacks"]) == ({}, {}, 0)
    assert world.cloud.resources() == {} and world.cloud.calls() == []


def test_confirmation_needs_a_terminal_unless_yes(world: World) -> None:
    result = world.svc("apply", "--mode", "reconcile", str(world.forma(chain("a"))))
    assert result.returncode == 1
    assert result.stderr.strip() == ("Error: confirmation needs an interactive terminal; pass --yes to go ahead "
                                     "without asking, or --simulate to only see the plan")
    assert "+ create" in result.stdout  # the plan was shown first
    assert world.cloud.resources() == {}


def run_in_terminal(world: World, *args: str, answer: str) -> tuple[int, str]:
    """The CLI on a pseudo-terminal (so it asks and shows the live view), typing ``answer``."""
    return run_svc_on_terminal(*args, "--config", str(world.agent.config), answer=answer,
                               env={"COLUMNS": "160", "TERM": "xterm"}, timeout=60)


def test_interactive_apply_asks_then_follows_live(world: World) -> None:
    path = world.forma(chain("a", "b"))
    code, output = run_in_terminal(world, "apply", "--mode", "reconcile", str(path), answer="n")
    assert code == 0 and "Apply aborted; nothing was changed." in output
    assert world.cloud.resources() == {}
    code, output = run_in_terminal(world, "apply", "--mode", "reconcile", str(path), answer="y")
    assert code == 0, output
    assert "Apply these changes?" in output and "2 of 2 resource updates finished" in output
    assert "succeeded" in output
    assert len(world.cloud_labels("FAKE::Test::Item")) == 2
