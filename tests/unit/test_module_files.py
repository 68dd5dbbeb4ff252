"""The files a module is made of, read from its text; and, strictly, whether its value depends on them alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc import jsontext
from svc.forma.module_files import ModuleFiles, Package
from svc.forma.module_scans import ModuleScans


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "base.pkl").write_text('import "pkl:json"\nx = read?("prop:$cmd") ?? "eval"\n')
    (tmp_path / "lib.pkl").write_text('import "@pkg/base.pkl"\ny = 1\n')
    return tmp_path


def closure(tree: Path, text: str, *, strict: bool = True) -> list[str] | None:
    (tree / "main.pkl").write_text(text)
    files = ModuleFiles({"pkg": Package("projectpackage://x/pkg@1#/", tree / "pkg")}, strict=strict)
    found = files.closure(tree / "main.pkl")
    return None if found is None else [Path(path).relative_to(tree).as_posix() for path in found]


def test_the_scans_of_the_modules_imported_are_kept_not_the_one_edited(tree: Path) -> None:
    (tree / "main.pkl").write_text('import "lib.pkl"\n')
    scans = ModuleScans(tree / "module-scans.json")
    files = ModuleFiles({"pkg": Package("projectpackage://x/pkg@1#/", tree / "pkg")}, scans=scans)
    assert files.closure(tree / "main.pkl") is not None
    scans.save()
    kept = set(jsontext.loads((tree / "module-scans.json").read_bytes())["Scans"])
    assert kept == {files.read[str(tree / name)][1] for name in ("lib.pkl", "pkg/base.pkl")}


def test_imports_are_followed_through_files_and_packages(tree: Path) -> None:
    text = 'amends "@pkg/base.pkl"\nimport "lib.pkl"\nlocal z = import("lib.pkl")\n'
    assert closure(tree, text) == ["lib.pkl", "main.pkl", "pkg/base.pkl"]


@pytest.mark.parametrize("text", [
    '/// Amend it: `amends "@pkg/base.pkl"`; read a value with `read("env:HOME")` (a doc comment)\nx = 1\n',
    '// import* "*.pkl" in a comment\nx = read("prop:name")\n',
    'x = read?( "prop:name" )\n',
])
def test_a_module_that_depends_on_its_files_alone_passes(tree: Path, text: str) -> None:
    assert closure(tree, text) == ["main.pkl"]


@pytest.mark.parametrize("text", [
    'x = read("env:HOME")\n',
    'x = read?("file:/etc/hostname")\n',
    'x = read*("env:*")\n',
    'local name = "prop:x"\nx = read(name)\n',
    'import* "parts/*.pkl" as parts\n',
    'x = 1; import "lib.pkl"\n',  # not where an import clause is read
    'import #"lib.pkl"#\n',
    'import "https://example.invalid/m.pkl"\n',
    'import "@elsewhere/m.pkl"\n',
    'import "missing.pkl"\n',
    'x = 1 // a trailing comment reads like read("env:X")\n',
])
def test_anything_else_is_refused(tree: Path, text: str) -> None:
    assert closure(tree, text) is None


def test_an_imported_module_that_reads_refuses_the_whole(tree: Path) -> None:
    (tree / "lib.pkl").write_text('y = read("env:HOME")\n')
    assert closure(tree, 'import "lib.pkl"\n') is None
    assert closure(tree, 'import "lib.pkl"\n', strict=False) == ["lib.pkl", "main.pkl"]


def test_the_keyword_first_patterns_match_where_their_word_boundary_forms_do() -> None:
    """The patterns start with their keyword, for speed; each matches exactly where ``\\b`` before it would."""
    import random
    import re

    from svc.config import cli_cache
    from svc.forma import module_scans
    from svc.pkl_source import IMPORT_KEYWORD, PROP_READ, READ

    reference = {
        READ: r"\bread`?[?*]?`?\s*\(",
        PROP_READ: r'\bread`?\??`?\s*\(\s*"prop:',
        IMPORT_KEYWORD: r'\b(?:import\*?|amends|extends)\s*\(?\s*#*"',
        module_scans._EXPRESSION: r'\bimport\*?\(\s*"([^"]*)"\s*\)',
        module_scans._GLOB: r"\bimport\*",
        cli_cache._TARGET: r'\b(?:import\*?|amends|extends)\s*\(?\s*"([^"\\]*)"',
    }
    pieces = ["read", "import", "amends", "extends", "*", "?", "`", "(", ")", '"', "#", " ", "\n", "prop:", "x", "_",
              "1", "é"]
    texts = ['x = read("prop:a")', 'aread("prop:a")', "_import*", '(amends "a")', "é" + 'extends "b"']
    randomly = random.Random(30)
    texts += ["".join(randomly.choice(pieces) for _ in range(14)) for _ in range(4000)]
    for pattern, word_boundary in reference.items():
        slow = re.compile(word_boundary)
        for text in texts:
            assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in slow.finditer(text)], text
