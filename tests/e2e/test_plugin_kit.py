"""The plugin kit, as a plugin author meets it: ``svc plugin init`` scaffolds a distribution that works as it is
made (installed with ``pip install -e`` into a throwaway virtualenv that has svc, its own test passes, and so does
``svc plugin test`` on it); a broken handler fails with a report that names the phase; bad names and bad
destinations are one-line errors that write nothing; ``svc plugin test`` refuses what it cannot run.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.processes import run_svc
from support.wheels import Environment, build_svc, throwaway_environment
from svc._version import __version__


@pytest.mark.parametrize(("name", "says"), [
    ("my-plugin", "is not a plugin name"), ("Notes", "is not a plugin name"), ("9lives", "is not a plugin name"),
    ("svc", "is reserved"), ("local", "namespace LOCAL is already installed"),
])
def test_init_refuses_a_bad_name_and_writes_nothing(name: str, says: str, home: Path, tmp_path: Path) -> None:
    result = run_svc("plugin", "init", name, str(tmp_path / "out"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "out").exists()


def test_init_refuses_a_directory_that_is_not_empty_unless_forced(home: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    refused = run_svc("plugin", "init", "notes", str(mine))
    assert refused.returncode == 1 and "is not empty" in refused.stderr and "--force" in refused.stderr, refused.stderr
    assert sorted(path.name for path in mine.iterdir()) == ["notes.txt"]
    forced = run_svc("plugin", "init", "notes", str(mine), "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert (mine / "notes.txt").read_text() == "mine"
    assert (mine / "svc_plugin_notes" / "schema" / "notes.pkl").is_file()
    assert 'NOTES = "svc_plugin_notes"' in (mine / "pyproject.toml").read_text()


def test_test_refuses_what_it_cannot_run(home: Path, tmp_path: Path) -> None:
    unknown = run_svc("plugin", "test", "NOPE")
    assert unknown.returncode == 1 and "'NOPE' is neither an installed plugin" in unknown.stderr, unknown.stderr
    module = subprocess.run([sys.executable, "-m", "svc.plugins.conformance", "NOPE"], capture_output=True, text=True,
                            timeout=120)
    assert module.returncode == 2 and "Error: 'NOPE' is neither an installed plugin" in module.stderr, module.stderr
    no_type = run_svc("plugin", "test", "LOCAL", "--types", "LOCAL::FS::Socket")
    assert no_type.returncode == 1, no_type.stdout + no_type.stderr
    assert "no conformance case for LOCAL::FS::Socket" in no_type.stderr and "LOCAL::FS::File" in no_type.stderr
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[project.entry-points."svc.plugins"]\n'
                                             'NOTYET = "svc_plugin_notyet"\n')
    uninstalled = run_svc("plugin", "test", str(tmp_path))
    assert uninstalled.returncode == 1 and f"pip install -e {tmp_path}" in uninstalled.stderr, uninstalled.stderr


@dataclass(frozen=True)
class Author:
    """A plugin author's environment: svc installed from a wheel, the scaffold installed editable."""

    environment: Environment
    project: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.environment.run(*args)

    def svc(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.environment.svc(*args)


@pytest.fixture(scope="module")
def author(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Author]:
    work = tmp_path_factory.mktemp("plugin-kit")
    wheels = work / "wheels"
    build_svc(__version__, work, wheels)
    environment = throwaway_environment(work)
    [svc_wheel] = wheels.glob("svc-*.whl")
    environment.pip_install("--no-index", str(svc_wheel))
    made = environment.svc("plugin", "init", "notes", str(work / "svc-plugin-notes"))
    assert made.returncode == 0, made.stdout + made.stderr
    environment.pip_install("--no-index", "--no-build-isolation", "-e", str(work / "svc-plugin-notes"))
    yield Author(environment, work / "svc-plugin-notes")


@pytest.mark.slow  # a wheel and a virtualenv, then the kit three times: about three minutes
def test_the_scaffold_passes_its_own_test_and_the_kit(author: Author) -> None:
    python = str(author.environment.venv / "bin" / "python")
    tested = author.run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(author.project / "tests"))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "1 passed" in tested.stdout, tested.stdout

    kit = author.svc("plugin", "test", str(author.project))
    assert kit.returncode == 0, kit.stdout + kit.stderr
    assert "NOTES: every phase passed for 1 type(s)" in kit.stdout, kit.stdout
    for phase in ("create", "update", "replace", "list", "out-of-band delete", "discovery", "extract"):
        assert f"ok       {phase}" in kit.stdout, kit.stdout


@pytest.mark.slow
def test_a_broken_handler_fails_with_a_report_naming_the_phase(author: Author) -> None:
    handler = author.project / "svc_plugin_notes" / "plugin.py"
    working = handler.read_text()
    broken = working.replace("        records.put(native_id, record)\n", "        pass  # forgets the update\n")
    assert broken != working
    handler.write_text(broken)
    try:
        kit = author.svc("plugin", "test", "NOTES", "--types", "notes::store::record")
    finally:
        handler.write_text(working)
    assert kit.returncode == 1, kit.stdout + kit.stderr
    assert "FAILED   update  (read" in kit.stdout, kit.stdout
    assert "NOTES: " in kit.stdout and "phase(s) failed" in kit.stdout, kit.stdout
    assert "NOTES::Store::Record: FAILED update" in kit.stderr, kit.stderr  # the progress line
