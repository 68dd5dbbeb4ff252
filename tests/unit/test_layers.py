"""The layer contract of DESIGN.md "Architecture" holds: ``lint-imports`` checks ``[tool.importlinter]``.

The contracts (in ``pyproject.toml``): the layers from the CLI down to ``svc.model``, where nothing imports up;
the CLI imports none of the agent's insides; the planner is pure; the model needs no SQL, HTTP or CLI
library.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]


def test_the_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=_REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
