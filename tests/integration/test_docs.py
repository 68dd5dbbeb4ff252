"""The docs cannot drift from the product: every Pkl block of README.md and docs/ evaluates through svc's own
evaluation, JSON blocks parse, every block says what it is, links lead somewhere, and the README stays a front
door. The command blocks run in ``tests/e2e/test_docs_commands.py``; the conventions are in ``support.docs``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from support.docs import LANGUAGES, REPO, Block, all_blocks, indented_code, pages
from svc.config.loader import load_config
from svc.forma.evaluate import evaluate_forma

# Blocks that cannot run in a test (a real AWS account, a container build, a foreground agent). Raise it only with
# a reason in the block's info string; lower it when one becomes testable.
MAX_UNTESTED = 16
README_MAX_LINES = 160

BLOCKS = all_blocks()
PKL = [b for b in BLOCKS if b.language == "pkl" and b.untested is None]


def _kind(block: Block) -> str:
    head = re.search(r'^(amends|extends)\s+"([^"]+)"', block.text, re.MULTILINE)
    if head is None:
        return "fragment"
    return {"@svc/forma.pkl": "forma", "svc:/Config.pkl": "config"}.get(head.group(2), "other")


@pytest.mark.parametrize("block", PKL, ids=[b.where for b in PKL])
def test_pkl_block_evaluates(block: Block, tmp_path: Path, home: Path) -> None:
    kind = _kind(block)
    assert kind in ("forma", "config"), (
        f"{block.where}: a pkl block is a whole forma (amends \"@svc/forma.pkl\") or config (amends \"svc:/Config.pkl\"); "
        "write it out in full, or mark it no-test with a reason")
    path = tmp_path / block.attributes.get("file", "example.pkl")
    path.write_text(block.text, encoding="utf-8")
    if kind == "forma":
        evaluate_forma(path)
    else:
        load_config(path)


def test_json_blocks_parse() -> None:
    for block in (b for b in BLOCKS if b.language == "json" and b.untested is None):
        try:
            json.loads(block.text)
        except json.JSONDecodeError as exc:
            pytest.fail(f"{block.where}: not JSON: {exc}")


def test_every_block_says_what_it_is_and_untested_ones_why() -> None:
    for block in BLOCKS:
        assert block.language in LANGUAGES, f"{block.where}: info string {block.language!r}; use one of {LANGUAGES}"
        if block.untested is not None:
            assert block.untested, f"{block.where}: no-test needs a reason (```{block.language} no-test: why)"
    untested = [b.where for b in BLOCKS if b.untested is not None]
    assert len(untested) <= MAX_UNTESTED, f"{len(untested)} untested blocks (at most {MAX_UNTESTED}): {untested}"
    for page in pages():
        assert not indented_code(page), f"{page}: indented code at lines {indented_code(page)}; fence it"


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as dashes."""
    found = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower().replace("`", "")
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_links_between_pages_lead_somewhere() -> None:
    for page in [*pages(), "docs/cli.md"]:
        source = REPO / page
        for target in _LINK.findall(source.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            path = (source.parent / file).resolve() if file else source
            assert path.exists(), f"{page}: link to {target}: no such file"
            if anchor and path.suffix == ".md":
                assert anchor in _anchors(path), f"{page}: link to {target}: no such heading"


def test_the_readme_is_a_front_door() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    quick_start = next(b for b in BLOCKS if b.page == "README.md" and b.language == "sh")
    # The guide's two commands, first: run the main job on the embedded default; run the tests.
    commands = [line.split("#")[0].strip() for line in quick_start.text.splitlines() if line.strip()]
    assert commands == ["scripts/quickstart.sh", "scripts/test.sh"]
    for command in commands:
        assert (REPO / command).is_file()
