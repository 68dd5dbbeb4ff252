"""The fenced code blocks of README.md and docs/*.md, as the docs tests run them.

Every block has an info string; its first word is the language:

- ``pkl``: a complete Pkl module. A forma (``amends``/``extends "@svc/forma.pkl"``) is evaluated by svc's own forma
  evaluation, an agent or CLI config (``amends "svc:/Config.pkl"``) by svc's config loader
  (``tests/integration/test_docs.py``). ``file=NAME`` also writes it as ``NAME`` into the page's working directory,
  for the page's commands to use.
- ``sh``: commands, run in order with ``bash -euo pipefail`` in the page's working directory against one test agent
  that runs the LOCAL plugin and holds the quick start's stacks (``tests/e2e/test_docs_commands.py``).
  ``exit=N``: the block's expected exit code (default 0).
- ``json``: parsed as JSON.
- ``text``: output or a picture; not run.

``no-test: REASON`` after the language leaves a block out, saying why (a real cloud, a foreground process); the
tests count those blocks, so that they stay few.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GENERATED = {"docs/aws-types.md", "docs/cli.md"}  # written by generators, checked by their own tests
LANGUAGES = {"pkl", "sh", "json", "text"}
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*(.*)$")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository, e.g. "docs/formas.md"
    line: int  # of the opening fence
    language: str
    text: str
    attributes: dict[str, str] = field(default_factory=dict)
    untested: str | None = None  # the reason given with no-test

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[str]:
    """README.md, then every docs page but the generated ones."""
    found = ["README.md", *(f"docs/{p.name}" for p in sorted((REPO / "docs").glob("*.md")))]
    return [page for page in found if page not in GENERATED]


def parse_info(info: str) -> tuple[str, dict[str, str], str | None]:
    language, _, rest = info.strip().partition(" ")
    rest = rest.strip()
    if rest.startswith("no-test"):
        return language, {}, rest.removeprefix("no-test").lstrip(":").strip()
    attributes = dict(item.split("=", 1) for item in rest.split() if "=" in item)
    return language, attributes, None


def blocks(page: str) -> list[Block]:
    found: list[Block] = []
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index].strip())
        if match is None:
            index += 1
            continue
        fence, info = match.groups()
        indent = len(lines[index]) - len(lines[index].lstrip())
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = "\n".join(line[indent:] for line in lines[index + 1:end]) + "\n"
        language, attributes, untested = parse_info(info)
        found.append(Block(page, index + 1, language, body, attributes, untested))
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def indented_code(page: str) -> list[int]:
    """Lines that start an indented (unfenced) code block: every example must be fenced, so that it is run."""
    found: list[int] = []
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    in_fence, previous, paragraph_start = False, "", ""
    for number, line in enumerate(lines, 1):
        if _FENCE.match(line.strip()):
            in_fence = not in_fence
        elif not in_fence and line.startswith("    ") and not previous.strip() and line.strip():
            if not re.match(r"\s*([-*+]|\d+\.)\s", paragraph_start):  # a list item's continuation is no code
                found.append(number)
        if not previous.strip() and line.strip() and not line.startswith(" "):
            paragraph_start = line
        previous = line
    return found
