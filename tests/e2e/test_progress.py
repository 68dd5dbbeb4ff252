"""Following a command through the real CLI (issue 28 items 4 and 5): piped, one line per finished resource, a
summary and the duration, never the table again; on a terminal (a pseudo-terminal driven by pexpect), one header
line with counts by state, elapsed time and an ETA, the failures pinned with their messages, rows in natural
order; ``svc command status ID --follow`` re-attaches to a running command, from another process or after
Ctrl-C, and ends with its result and exit code."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess

import pexpect

from support.fake_world import ENV, World, submit, wait_running
from support.processes import SVC

LABELS = [f"f{n}" for n in range(1, 13)]
FINISHED = r"12 of 12 resource updates finished \(11 Success, 1 Failed\)"
DURATION = re.compile(r"^Duration: ([0-9.]+s|[0-9]+ms|[0-9]+[hm][0-9]+[ms])$", re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def items(world: World) -> str:
    """Twelve independent items, written out of natural order."""
    body = "".join(f'new item.Item {{ label = "{label}"; value = "v-{label}"; token = "t" }}\n'
                   for label in sorted(LABELS))
    return str(world.forma(body))


def plain(text: str) -> str:
    return ANSI.sub("", text)


def assert_line_stream(out: str, command_id: str) -> None:
    """One line per finished resource, then the summary, the outcome and, last, the duration."""
    for label in LABELS:
        state = "Failed" if label == "f3" else "Success"
        assert len(re.findall(rf"^{state}: create FAKE::Test::Item {label} \(stack app\)", out, re.MULTILINE)) == 1, out
    assert "Failed: create FAKE::Test::Item f3 (stack app): AccessDenied" in out, out
    assert len(re.findall(rf"^apply \(reconcile\) {command_id} Failed: {FINISHED}$", out, re.MULTILINE)) == 1, out
    assert not re.search(r"^Change\s+Type", out, re.MULTILINE), out  # the table is not printed again
    assert out.rstrip("\n").splitlines()[-2].startswith(f"apply {command_id} ended Failed."), out
    assert DURATION.search(out.rstrip("\n").splitlines()[-1]), out


def test_piped_apply_prints_a_line_per_finished_resource_a_summary_and_the_duration(world: World) -> None:
    world.cloud.set_knob("fail", {"code": "AccessDenied", "labels": ["f3"]})
    result = world.apply(items(world))
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    command_id = re.search(r"Command (\S+) started on the agent", out)[1]
    assert_line_stream(out[out.index("started on the agent"):], command_id)


def test_command_status_follow_re_attaches_from_another_process(world: World) -> None:
    world.cloud.set_knob("fail", {"code": "AccessDenied", "labels": ["f3"]})
    world.cloud.set_knob("hang", {"labels": ["f12"]})
    command_id = submit(world, items(world))  # machine mode: answers with the id at once
    wait_running(world, command_id, "f12")
    env = {**os.environ, **ENV}
    machine = subprocess.Popen([SVC, "command", "status", "--follow", "--output-consumer", "machine", "--config",
                                str(world.agent.config)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    human = subprocess.Popen([SVC, "command", "status", command_id, "--follow", "--config", str(world.agent.config)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert world.command(command_id)["State"] == "InProgress"  # followed while it runs
        world.cloud.clear_knobs("hang")
        out, err = human.communicate(timeout=120)
        document, machine_err = machine.communicate(timeout=120)
    finally:
        for process in (machine, human):
            if process.poll() is None:
                process.kill()
    assert human.returncode == 1, out + err  # as apply --wait's: the command failed
    assert_line_stream(out, command_id)
    assert machine.returncode == 1, machine_err
    [followed] = json.loads(document)["Commands"]  # the latest command of this client, once it ended
    assert (followed["CommandId"], followed["State"]) == (command_id, "Failed")

    again = world.svc("command", "status", "--follow")  # this client's latest, ended: at once to the same end
    assert again.returncode == 1 and DURATION.search(again.stdout), again.stdout + again.stderr
    unknown = world.svc("command", "status", "2ZnoSuchCommand", "--follow")
    assert unknown.returncode == 1
    assert unknown.stderr == ("Error: command not found: 2ZnoSuchCommand; list the recent ones with: "
                              "svc command list\n"), unknown.stderr


def _terminal(world: World, *args: str) -> pexpect.spawn:
    """``svc`` on a terminal of its own, as a user's shell starts it: with Ctrl-C's signal at its default even when
    the suite itself was started in the background (where a shell without job control ignores SIGINT, which its
    children would inherit)."""
    return pexpect.spawn(SVC, [*args, "--config", str(world.agent.config)], encoding="utf-8", timeout=90,
                         dimensions=(50, 220), env={**os.environ, "COLUMNS": "220", "LINES": "50", "TERM": "xterm"},
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _live_frame(terminal: pexpect.spawn) -> str:
    """Waits for a frame showing f12 still running after the eleven others ended, and returns the screen text
    since the previous match."""
    terminal.expect(r"11 of 12 done \(10 Success,\s*1 Failed\),\s*1 InProgress; [0-9.ms]+ elapsed, ETA")
    terminal.expect(r"f12\s")  # and its rows
    return plain(terminal.before + terminal.after)


def _assert_live_view(frame: str) -> None:
    assert "Failed: create FAKE::Test::Item f3 (stack app): AccessDenied" in frame, frame  # pinned, with its message
    header = frame.rindex("Change")
    table = frame[header:]
    assert "Attempt" not in table[:200], table  # nothing was retried
    rows = [label for label in re.findall(r"\b(f\d+)\s", table) if label != "f3"]
    assert rows[:11] == [label for label in LABELS if label != "f3"], table  # natural order: f2 before f10


def test_terminal_view_then_ctrl_c_then_follow_again(world: World) -> None:
    world.cloud.set_knob("fail", {"code": "AccessDenied", "labels": ["f3"]})
    world.cloud.set_knob("hang", {"labels": ["f12"]})
    applying = _terminal(world, "apply", items(world), "--yes")
    try:
        _assert_live_view(_live_frame(applying))
        applying.sendintr()  # Ctrl-C: stops following, not the command
        applying.expect(r"follow it again with: svc command status (\S+) --follow")
        command_id = applying.match[1]
        applying.expect(pexpect.EOF)
    finally:
        applying.close(force=True)
    assert applying.exitstatus in (1, 130)
    assert world.command(command_id)["State"] == "InProgress"

    following = _terminal(world, "command", "status", command_id, "--follow")
    try:
        _assert_live_view(_live_frame(following))
        world.cloud.clear_knobs("hang")
        following.expect(rf"apply \(reconcile\) {command_id} Failed: {FINISHED}")
        following.expect(pexpect.EOF)
        end = plain(following.before)
    finally:
        following.close(force=True)
    assert following.exitstatus == 1
    lines = [line for line in end.splitlines() if line.strip()]
    assert lines[0].startswith("Failed: create FAKE::Test::Item f3 (stack app): AccessDenied"), end  # the failures
    assert lines[1].startswith(f"apply {command_id} ended Failed."), end
    assert DURATION.search(lines[-1]) and len(lines) == 3, end  # and not the table again
