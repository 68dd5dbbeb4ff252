"""The CLI reads the agent's answers as models (attributes), decoded once at the client boundary: no module of
``svc.cli`` beyond it looks a PascalCase wire key up in a dict (``answer["State"]``, ``command.get("Mode")``),
where a renamed field would fail only at run time."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import svc.cli

CLI = Path(svc.cli.__file__).parent
# The boundary: the HTTP client (and the HTTP it speaks: header names), the endpoints that decode their answers,
# the decoder, and the error bodies (``{"error": Type, "data": {…}}``, whose data is free-form per error type).
BOUNDARY = {"http.py", "client.py", "agent_api.py", "answers.py", "agent_errors.py"}
_WIRE_KEY = re.compile(r"[A-Z][A-Za-z0-9]*")


def wire_key_lookups(source: str) -> list[tuple[int, str]]:
    """(line, key) of each ``x["Key"]`` and ``x.get("Key"…)`` with a PascalCase string key; not in an environment
    (``environ["HOME"]``, ``os.environ.get("PYTHONUTF8")``), whose variables are no wire keys."""
    found = []
    for node in ast.walk(ast.parse(source)):
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript):
            key, looked_up = node.slice, node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args):
            key, looked_up = node.args[0], node.func.value
        if (isinstance(key, ast.Constant) and isinstance(key.value, str) and _WIRE_KEY.fullmatch(key.value)
                and _name(looked_up) != "environ"):
            found.append((node.lineno, key.value))
    return found


def _name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def test_the_check_sees_both_kinds_of_lookup() -> None:
    assert wire_key_lookups('a["State"]\nb.get("Mode")\nc["state"]\nd.get("x")\ne[0]\nf.g["ID"]\n'
                            'environ["HOME"]\nos.environ.get("PYTHONUTF8")') == [(1, "State"), (2, "Mode"), (6, "ID")]


def test_no_cli_module_beyond_the_boundary_looks_up_wire_keys() -> None:
    modules = sorted(CLI.glob("*.py"))
    assert {path.name for path in modules} >= BOUNDARY  # a renamed boundary module must not widen the check's gap
    offending = {path.name: lookups for path in modules if path.name not in BOUNDARY
                 if (lookups := wire_key_lookups(path.read_text()))}
    assert offending == {}
