"""The plugins installed through the agent (``POST /plugins/install``), remembered across restarts.

The agent config enables plugins by naming them in ``agent.resourcePlugins``; one installed through the API is
not named there, yet it must still run after a restart, as it did before. So its namespace is written to a small
file next to the engine's key, and the composition root enables the namespaces listed there that the config does
not mention (the config's own setting, ``enabled = false`` included, wins). Written whole and renamed into
place, so a crash leaves the old list or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE_NAME = "plugins-installed.json"


class InstalledByAgent:
    def __init__(self, path: Path) -> None:
        self.path = path

    def namespaces(self) -> list[str]:
        try:
            listed = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except ValueError as error:
            raise ValueError(f"{self.path} is not a JSON list of plugin namespaces ({error}); fix or delete it "
                             "(its plugins then run only when agent.resourcePlugins names them)") from error
        return [str(namespace) for namespace in listed]

    def add(self, namespace: str) -> None:
        listed = self.namespaces()
        if namespace.upper() not in {name.upper() for name in listed}:
            self._write(sorted([*listed, namespace]))

    def remove(self, namespace: str) -> None:
        listed = self.namespaces()
        kept = [name for name in listed if name.upper() != namespace.upper()]
        if kept != listed:
            self._write(kept)

    def _write(self, namespaces: list[str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staged = self.path.with_name(self.path.name + ".new")
        staged.write_text(json.dumps(namespaces) + "\n")
        os.replace(staged, self.path)
