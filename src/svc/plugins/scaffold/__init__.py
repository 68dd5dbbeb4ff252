"""``svc plugin init NAME``: a new plugin distribution, ``svc-plugin-<name>``, that works as it is made.

It is written from ``template/``: every ``*.tmpl`` file, with ``{{name}}`` (the plugin's name), ``{{NAMESPACE}}``
(its namespace, the name in upper case) and ``{{svc_version}}`` (the svc it is made with) filled in; ``package/``
becomes the plugin's package, ``svc_plugin_<name>/``, and ``__name__`` in a file name the plugin's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from svc._version import __version__
from svc.plugins.installed import installed_plugins

TEMPLATE = Path(__file__).parent / "template"
_NAME = re.compile(r"[a-z][a-z0-9]{0,31}")
# Names a forma could not tell apart from what it imports beside the plugin's own module.
_RESERVED = frozenset({"svc", "records", "pkl"})


class ScaffoldError(ValueError):
    """The name or the destination cannot be used; nothing was written."""


@dataclass(frozen=True)
class Plugin:
    name: str

    @property
    def namespace(self) -> str:
        return self.name.upper()

    @property
    def distribution(self) -> str:
        return f"svc-plugin-{self.name}"

    @property
    def package(self) -> str:
        return f"svc_plugin_{self.name}"

    def fill(self, text: str) -> str:
        release = re.match(r"\d+\.\d+\.\d+", __version__)
        values = {"name": self.name, "NAMESPACE": self.namespace,
                  "svc_version": release.group() if release else "0.1.0"}
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        return text


def plugin_named(name: str, *, force: bool = False) -> Plugin:
    """The plugin ``name`` makes; a name that cannot be one, or (unless ``force``) whose namespace an installed
    plugin has, is refused."""
    if not _NAME.fullmatch(name):
        raise ScaffoldError(f"{name!r} is not a plugin name: use lowercase letters and digits, starting with a "
                            "letter, at most 32 (e.g. notes: namespace NOTES, distribution svc-plugin-notes)")
    if name in _RESERVED:
        raise ScaffoldError(f"{name!r} is reserved ({', '.join(sorted(_RESERVED))}): choose another name")
    plugin = Plugin(name)
    if not force and any(found.namespace.upper() == plugin.namespace for found in installed_plugins()):
        raise ScaffoldError(f"a plugin with namespace {plugin.namespace} is already installed: choose another name "
                            "(or --force)")
    return plugin


def scaffold(name: str, destination: Path | None = None, *, force: bool = False) -> tuple[Plugin, Path, list[Path]]:
    """Writes the distribution of plugin ``name`` into ``destination`` (default ``./svc-plugin-<name>``), which must
    not exist or be empty unless ``force`` (then the scaffold's files overwrite theirs); the files written."""
    plugin = plugin_named(name, force=force)
    root = destination if destination is not None else Path(plugin.distribution)
    if root.exists() and not root.is_dir():
        raise ScaffoldError(f"{root} exists and is not a directory")
    if root.is_dir() and any(root.iterdir()) and not force:
        raise ScaffoldError(f"{root} is not empty: choose another directory, or pass --force to write over it")
    written = []
    for source in sorted(TEMPLATE.rglob("*.tmpl")):
        relative = source.relative_to(TEMPLATE).with_suffix("")  # drops .tmpl
        parts = [plugin.package if part == "package" else part.replace("__name__", plugin.name)
                 for part in relative.parts]
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(plugin.fill(source.read_text()))
        written.append(target)
    return plugin, root, written
