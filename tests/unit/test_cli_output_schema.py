"""Every command's machine document is JSON unless ``--output-schema yaml`` asks otherwise (issue 28 item 9)."""

from __future__ import annotations

from typing import Any

import typer

from svc.cli.lazy import fully_loaded
from svc.cli.main import app
from svc.cli.output import Schema, yaml_text


def commands(command: Any, path: str) -> list[tuple[str, Any]]:
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += commands(fully_loaded(sub), f"{path} {name}")
    return found


def test_every_command_with_machine_output_defaults_to_json() -> None:
    defaults = {path: param.default for path, command in commands(fully_loaded(typer.main.get_command(app)), "svc")
                for param in command.params if param.name == "output_schema"}

    assert len(defaults) > 20 and "svc cancel" in defaults and "svc apply" in defaults
    assert {path: default for path, default in defaults.items() if default not in (Schema.json, "json")} == {}


def test_yaml_is_the_text_pure_python_pyyaml_writes() -> None:
    import yaml

    document = {"Resources": [{"Label": "a", "Properties": {"Name": "café", "Long": "x " * 60, "Lines": "a\nb\n",
                                                              "Quoted": "yes", "Empty": {}, "None": [], "N": 1.5e16}}],
                "Stacks": [{"Label": "s", "Description": None}]}
    assert yaml_text(document) == yaml.safe_dump(document, indent=2, sort_keys=False).rstrip("\n")
