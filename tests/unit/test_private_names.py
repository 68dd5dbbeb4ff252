"""No module imports another module's ``_private`` name: a helper that others need is public in the module
that owns it (ruff's PLC2701 lets the modules of one package do it, the case that matters here).
"""

from __future__ import annotations

import ast
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]
_TREES = ("src", "tests", "bench", "scripts", "plugins")


def _private_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            found += [f"{path.relative_to(_REPO)}:{node.lineno}: {alias.name} from {node.module}"
                      for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_module_imports_a_private_name() -> None:
    paths = [path for tree in _TREES for path in (_REPO / tree).rglob("*.py") if ".venv" not in path.parts]
    assert len(paths) > 100
    found = [line for path in paths for line in _private_imports(path)]
    assert not found, "\n".join(found)
