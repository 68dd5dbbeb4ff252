"""Every ``sh`` block of README.md and docs/ runs, in order, against one real agent: the quick start's (LOCAL, its
stacks applied), on a free port the CLI reaches through ``SVC_API_URL`` (``localhost:49684`` in a block is rewritten
to that port). Each page runs in a working directory of its own that sees the repository's ``.venv``,
``examples`` and ``scripts``, with the page's ``file=`` Pkl blocks written into it; the tutorial runs last, since it
ends by stopping the agent. Conventions: ``support.docs``."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.docs import REPO, pages
from support.docs import blocks as page_blocks
from support.processes import Agent, isolated_home, on_demand_agent, run_svc

LAST = "docs/tutorial.md"
ORDER = sorted((page for page in pages() if any(b.language == "sh" and b.untested is None
                                                for b in page_blocks(page))), key=lambda page: page == LAST)


@dataclass
class DocsAgent:
    agent: Agent
    home: Path
    base: Path

    def env(self) -> dict[str, str]:
        return {**os.environ, "SVC_API_URL": f"http://localhost:{self.agent.port}", "COLUMNS": "200",
                "PATH": f"{REPO / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture(scope="module")
def docs_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocsAgent]:
    base = tmp_path_factory.mktemp("docs")
    with isolated_home(base) as home:
        home.mkdir(parents=True)
        agent = on_demand_agent(base, "new LOCAL.PluginConfig {}", imports=("LOCAL",)).start()
        try:
            # Where every page starts: the quick start ran (scripts/quickstart.sh applies this forma).
            applied = run_svc("apply", "--mode", "reconcile", str(REPO / "examples" / "quickstart.pkl"), "--config",
                              str(agent.config), "--yes", "--wait")
            assert applied.returncode == 0, applied.stdout + applied.stderr
            yield DocsAgent(agent, home, base)
        finally:
            agent.stop()


def test_every_command_block_runs(docs_agent: DocsAgent) -> None:
    """One test, so that the pages run in this order whatever order pytest picks for tests."""
    ran = 0
    for page in ORDER:
        if page == LAST:  # the other pages' examples left the quick start's stack as the tutorial expects it
            listed = run_svc("inventory", "resources", "--query", "stack:quickstart", "--output-consumer", "machine",
                             env=docs_agent.env())
            assert len(json.loads(listed.stdout)["Resources"]) == 4, listed.stdout + listed.stderr
        ran += run_page(page, docs_agent)
    assert ran >= 10  # the tutorial's walk alone has more: the blocks were found


def run_page(page: str, docs_agent: DocsAgent) -> int:
    workdir = docs_agent.base / page.replace("/", "-")
    workdir.mkdir()
    for name in (".venv", "examples", "scripts"):
        (workdir / name).symlink_to(REPO / name)
    ran = 0
    for block in page_blocks(page):
        if block.language == "pkl" and "file" in block.attributes:
            (workdir / block.attributes["file"]).write_text(block.text, encoding="utf-8")
        if block.language != "sh" or block.untested is not None:
            continue
        script = block.text.replace("localhost:49684", f"localhost:{docs_agent.agent.port}")
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=workdir, env=docs_agent.env(),
                                capture_output=True, text=True, timeout=600)
        expected = int(block.attributes.get("exit", "0"))
        assert result.returncode == expected, (
            f"{block.where} exited {result.returncode}, expected {expected}:\n{script}\n"
            f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
        ran += 1
    return ran
