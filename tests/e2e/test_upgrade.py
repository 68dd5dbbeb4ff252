"""``svc upgrade --version V``: real wheels of two versions, a fresh virtualenv, pip."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OLD, NEW = "97.0.0", "97.0.1"  # versions no index serves, so only --find-links can provide them


def build_wheel(version: str, workdir: Path, wheels: Path) -> None:
    source = workdir / f"svc-{version}"
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    (source / "src" / "svc" / "_version.py").write_text(f'__version__ = "{version}"\n')
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(source)],
                   check=True)


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("upgrade")
    wheels = work / "wheels"
    for version in (OLD, NEW):
        build_wheel(version, work, wheels)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                    str(next(wheels.glob(f"svc-{OLD}-*.whl")))], check=True)
    return venv, wheels


def svc(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "svc"), *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_upgrade_and_downgrade_between_two_wheels(environment: tuple[Path, Path]) -> None:
    venv, wheels = environment
    assert svc(venv, "--version").stdout.strip() == f"svc version {OLD}"

    upgraded = svc(venv, "upgrade", "--version", NEW, "--find-links", str(wheels))
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"svc {NEW} is installed." in upgraded.stdout
    assert svc(venv, "--version").stdout.strip() == f"svc version {NEW}"

    back = svc(venv, "upgrade", "--version", OLD, "--find-links", str(wheels))
    assert back.returncode == 0, back.stderr
    assert svc(venv, "--version").stdout.strip() == f"svc version {OLD}"


@pytest.mark.slow
def test_upgrade_to_a_version_that_does_not_exist(environment: tuple[Path, Path], tmp_path: Path) -> None:
    venv, wheels = environment
    empty_index = tmp_path / "index"
    empty_index.mkdir()
    result = svc(venv, "upgrade", "--version", "97.9.9", "--index-url", empty_index.as_uri(),
                 "--find-links", str(wheels))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: svc 97.9.9 was not found in the package index; check the version, "
        "or pass --index-url / --find-links where that release is published")
    assert svc(venv, "--version").stdout.strip() == f"svc version {OLD}"
