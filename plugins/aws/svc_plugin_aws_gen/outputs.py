"""Everything the generator makes, as file contents by path, and writing or checking them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from svc_plugin_aws_gen import naming, pkl_literals
from svc_plugin_aws_gen.docs import render_types_page
from svc_plugin_aws_gen.handwritten import HAND_WRITTEN
from svc_plugin_aws_gen.modules import HEADER, render_module
from svc_plugin_aws_gen.registry import TypeSchema, load_registry
from svc_plugin_aws_gen.relations import ParentFinder

PLUGIN_ROOT = Path(__file__).resolve().parents[1]  # plugins/aws
REPOSITORY_ROOT = PLUGIN_ROOT.parents[1]
SCHEMA_DIR = PLUGIN_ROOT / "svc_plugin_aws" / "schema"
DISCOVERABLE_MODULE = PLUGIN_ROOT / "svc_plugin_aws" / "discoverable.pkl"
TYPES_PAGE = REPOSITORY_ROOT / "docs" / "aws-types.md"


@dataclass(frozen=True)
class Generated:
    files: dict[Path, str]  # absolute path → content

    def stale(self) -> list[Path]:
        """Generated modules on disk that the generator no longer makes."""
        return sorted(path for path in SCHEMA_DIR.rglob("*.pkl")
                      if path not in self.files and path.read_text(encoding="utf-8").startswith(HEADER))

    def differences(self) -> list[Path]:
        """The files on disk that are not what the generator makes (missing, different or stale)."""
        changed = [path for path, text in sorted(self.files.items())
                   if not path.is_file() or path.read_text(encoding="utf-8") != text]
        return changed + self.stale()

    def write(self) -> None:
        for path in self.stale():
            path.unlink()
        for path, text in sorted(self.files.items()):
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")


def _discoverable_module(types: list[str]) -> str:
    entries = "".join(f"  {pkl_literals.string(t)}\n" for t in types)
    return (HEADER
            + "/// Every type discovery lists (its schema has a list handler, and a child type a parent svc can\n"
            "/// name): the resource types of the manifest's default discovery filters.\n"
            f"module discoverable\n\ntypes: Listing<String> = new {{\n{entries}}}\n")


def generate(schemas: list[TypeSchema] | None = None) -> Generated:
    """The generated files, from ``schemas`` (by default the pinned registry)."""
    # Sorted by name whatever the input's order: the same registry always gives the same bytes.
    covered = sorted((s for s in (schemas if schemas is not None else load_registry()) if s.in_scope),
                     key=lambda s: s.name)
    finder = ParentFinder(covered)
    files: dict[Path, str] = {}
    discoverable: list[str] = []
    for schema in covered:
        relation = finder.relation(schema)
        if schema.listable and (relation is None or relation.parent):
            discoverable.append(schema.name)
        if schema.name not in HAND_WRITTEN:
            files[SCHEMA_DIR / naming.module_path(schema.name)] = render_module(schema, relation)
    files[DISCOVERABLE_MODULE] = _discoverable_module(discoverable)
    files[TYPES_PAGE] = render_types_page(covered, HAND_WRITTEN, frozenset(discoverable))
    return Generated(files)
