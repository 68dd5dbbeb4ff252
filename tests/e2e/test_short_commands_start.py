"""``svc inventory`` and ``svc command list`` against a real agent import only what they need (issue 28 item 10):
the CLI config is evaluated by Pkl (or kept from the last command), the answer read over HTTP and shown, without
the agent's stack, the forma evaluator or the libraries of Pkl's libext:/tfvars: readers. The CPU figures are
``bench/cli_start.py``'s."""

from __future__ import annotations

import os

import pytest

from support.cli_start import HEAVY, imported, loaded_modules
from support.fake_world import World


@pytest.mark.parametrize("args", [["inventory"], ["inventory", "--output-consumer", "machine"],
                                  ["command", "list"], ["command", "list", "--output-consumer", "machine"]])
def test_short_commands_import_no_heavy_module(world: World, args: list[str]) -> None:
    world.apply(world.forma('new item.Item { label = "one"; value = "v" }\n'))

    modules = loaded_modules(*args, "--config", str(world.agent.config))

    assert {"svc.cli.http", "svc.config.loader"} <= modules  # it read the config (Pkl's, or kept) and asked the agent
    assert imported(modules, HEAVY) == []


@pytest.mark.parametrize("command", [["plan"], ["apply", "--yes", "--wait"], ["destroy", "--yes", "--wait"]])
def test_a_forma_command_imports_no_yaml_no_pydantic_and_no_agent_stack(world: World, command: list[str]) -> None:
    """A plan, an apply or a destroy needs the forma evaluator (it evaluates one) but not YAML, which only
    ``--output-schema yaml`` prints, nor pydantic (the answers are msgspec structs, the forma goes as Pkl rendered
    it), nor anything of the agent's; off a terminal, not Rich either (its plan, lines and end are plain)."""
    forma = world.forma('new item.Item { label = "one"; value = "v" }\n')
    no_terminal = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}

    modules = loaded_modules(*command, str(forma), "--config", str(world.agent.config), env=no_terminal)

    assert {"svc.forma.evaluate", "svc.cli.client"} <= modules
    assert imported(modules, ("yaml", "pydantic", "rich", "sqlalchemy", "starlette", "uvicorn", "svc.engine",
                              "svc.datastore")) == []
