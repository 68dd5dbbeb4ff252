"""``svc --version`` and ``svc --help`` start without importing what no command of theirs needs (issue 28 item 10;
the CPU figures are ``bench/cli_start.py``'s), and the lazy command list says what the commands say.

Each check runs the real CLI entry in a fresh interpreter and reads the modules it imported; the e2e twin
(``tests/e2e/test_short_commands_start.py``) does the same for ``svc inventory`` and ``svc command list`` against an agent.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from support.cli_start import HEAVY, imported, loaded_modules
from svc.cli.lazy import fully_loaded
from svc.cli.main import COMMANDS, app

# For --version and --help, the CLI's client side too.
CLIENT_SIDE = ("httpx", "httpcore", "pydantic", "msgpack", "svc.config", "svc.pkl", "svc.model", "svc.cli.client",
               "svc.cli.agent_api")
ENV = {"PATH": "/usr/bin:/bin"}  # no config, no agent: --help and --version need neither


def _run_probe(probe: str, env: dict[str, str] = ENV) -> subprocess.CompletedProcess[str]:
    """Runs the Python ``probe`` in a fresh interpreter (what it reports, it prints to stderr)."""
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["inventory", "--help"], ["command", "--help"]])
def test_version_and_help_import_no_client_and_no_heavy_module(args: list[str]) -> None:
    modules = loaded_modules(*args, env=ENV)

    assert "typer" in modules  # the probe ran the CLI
    assert imported(modules, HEAVY) == []
    if args[0].startswith("--"):
        assert imported(modules, CLIENT_SIDE) == []


def test_only_the_command_that_runs_is_imported() -> None:
    modules = loaded_modules("inventory", "--help", env=ENV)

    assert "svc.cli.inventory_commands" in modules
    assert imported(modules, ("svc.cli.apply_commands", "svc.cli.plugin_commands", "svc.cli.upgrade",
                              "svc.cli.extract_commands", "svc.cli.deploy_commands")) == []


def test_the_listed_summaries_are_the_commands_own() -> None:
    """``svc --help`` lists the lazy commands by their registered summaries: each is the first paragraph of the
    loaded command's help, as Typer would list it."""
    root = fully_loaded(typer.main.get_command(app))

    for name, lazy in COMMANDS.items():
        assert lazy.summary == root.commands[name].help.split("\n\n")[0].strip(), name


def test_help_lists_the_same_commands_loaded_or_not(capsys: pytest.CaptureFixture[str]) -> None:
    def help_text(command: typer.core.TyperGroup) -> str:
        with pytest.raises(SystemExit):
            command.main(["--help"], prog_name="svc")
        return capsys.readouterr().out

    lazy = help_text(typer.main.get_command(app))
    loaded = help_text(fully_loaded(typer.main.get_command(app)))

    assert lazy == loaded
    assert "inventory" in lazy and "What the agent manages" in lazy


def test_the_console_script_leaves_its_objects_to_the_process_end() -> None:
    """The interpreter's final collection walked every object the imports made, a tenth of a short command's CPU:
    ``run`` freezes them first (exit handlers, which run after it, see them frozen)."""
    probe = ("import atexit, gc, sys\n"
             "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))\n"
             "from svc.cli.main import run\n"
             "sys.argv = ['svc', '--version']\n"
             "run()\n")
    result = _run_probe(probe)

    assert result.returncode == 0 and result.stdout.startswith("svc version"), result.stdout + result.stderr
    assert int(result.stderr.split("frozen")[-1]) > 10_000


def test_the_command_modules_are_imported_with_the_collector_off() -> None:
    """A young collection among the command's imports walked every object the start had made (10 to 20 ms of a
    short command's CPU): ``run`` turns the collector off, and the group turns it back on once the command is
    loaded, with what the imports made frozen."""
    probe = ("import atexit, gc, sys\n"
             "seen = []\n"
             "gc.callbacks.append(lambda phase, info: phase == 'start' and seen.append(gc.get_freeze_count()))\n"
             "atexit.register(lambda: print('state', gc.isenabled(), min(seen, default=1), file=sys.stderr))\n"
             "from svc.cli.main import run\n"
             "gc.set_threshold(100)\n"  # the command's imports would collect many times if they could
             "seen.clear()\n"
             "sys.argv = ['svc', 'inventory', '--help']\n"
             "run()\n")
    result = _run_probe(probe)

    assert result.returncode == 0 and "inventory" in result.stdout, result.stdout + result.stderr
    enabled, least_frozen = result.stderr.split("state")[-1].split()
    assert enabled == "True"  # back on for the command's own work
    assert int(least_frozen) > 10_000  # no collection ran before the imports were frozen


def test_pydantic_looks_for_no_plugins_in_a_command() -> None:
    """Pydantic's plugin scan (every installed distribution's entry points, on the first validation) is 10 to
    15 ms of a short command's CPU: ``run`` turns it off unless the user set ``PYDANTIC_DISABLE_PLUGINS``."""
    probe = ("import atexit, sys\n"
             "import importlib.metadata as metadata\n"
             "scans = []\n"
             "real = metadata.entry_points\n"
             "metadata.entry_points = lambda **kw: scans.append(kw) or real(**kw)\n"
             "def report():\n"
             "    from pydantic import BaseModel\n"
             "    class Probe(BaseModel):\n"
             "        x: int\n"
             "    Probe.model_validate({'x': 1})\n"
             "    print('scans', [s for s in scans if s.get('group') == 'pydantic'], file=sys.stderr)\n"
             "atexit.register(report)\n"
             "from svc.cli.main import run\n"
             "sys.argv = ['svc', '--version']\n"
             "run()\n")
    for env, scanned in ((ENV, "[]"), ({**ENV, "PYDANTIC_DISABLE_PLUGINS": "some-plugin"}, "[{'group': 'pydantic'}]")):
        result = _run_probe(probe, env)

        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stderr.split("scans")[-1].strip() == scanned


def test_the_forma_commands_and_the_cli_config_import_no_pydantic() -> None:
    """A plan, an apply or a destroy reads its config, evaluates the forma and decodes the agent's answers without
    pydantic: importing it and defining svc's models cost a short command ~0.1 s of its ~0.25 s of CPU. The wire
    shapes and the config's cli block are msgspec structs; the forma goes out as Pkl rendered it."""
    probe = ("import sys\n"
             "import svc.cli.apply_commands, svc.cli.plan_commands, svc.cli.plan_render, svc.cli.progress\n"
             "import svc.config.loader, svc.forma.evaluate, svc.forma.arguments\n"
             "print('report', sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'), file=sys.stderr)\n")
    result = _run_probe(probe)

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.split("report")[-1].strip() == "[]"
