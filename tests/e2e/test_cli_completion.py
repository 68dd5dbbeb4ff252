"""Shell completion: Typer's own ``--install-completion`` / ``--show-completion``, driven through the real
console script and the environment variables a shell's completion function sets."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support.processes import SVC, run_svc


def from_bash(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``svc`` started by bash, as a user types it: Typer finds the shell from its parent process. (``bash -c``
    with one command would replace itself by it, leaving svc the child of whatever started bash.)"""
    env = {**os.environ, **({"HOME": str(home)} if home else {})}
    return subprocess.run(["bash", "-c", " ".join([SVC, *args]) + "; exit $?"], capture_output=True, text=True,
                          env=env, timeout=120)


def test_show_completion_prints_the_script_for_the_shell() -> None:
    result = from_bash("--show-completion")
    assert result.returncode == 0, result.stderr
    assert "_SVC_COMPLETE=complete_bash" in result.stdout and "complete -o default -F" in result.stdout


def test_the_completion_function_completes_commands_and_subcommands() -> None:
    commands = run_svc(env={"_SVC_COMPLETE": "complete_bash", "COMP_WORDS": "svc inv", "COMP_CWORD": "1"})
    assert commands.stdout.split() == ["inventory"], commands.stdout + commands.stderr
    subcommands = run_svc(env={"_SVC_COMPLETE": "complete_bash", "COMP_WORDS": "svc inventory re",
                               "COMP_CWORD": "2"})
    assert subcommands.stdout.split() == ["resources"], subcommands.stdout + subcommands.stderr


def test_install_completion_writes_the_script_where_the_shell_reads_it(tmp_path: Path) -> None:
    result = from_bash("--install-completion", home=tmp_path)
    assert result.returncode == 0, result.stderr
    script = tmp_path / ".bash_completions" / "svc.sh"
    assert "_SVC_COMPLETE" in script.read_text()
    assert str(script) in (tmp_path / ".bashrc").read_text()
