"""The CLI's direct table printer writes exactly what Rich prints for the same table, and hands anything
it cannot reproduce to Rich."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rich.table import Table
from rich.text import Text

from svc.cli import tables
from svc.cli.output import console
from svc.cli.tables import print_table

HEADERS = ("Change", "Type", "Label", "Details")
ROWS: list[list[str | Text]] = [
    [Text("+ create", style="green"), "FAKE::Test::Item", "c0-0", ""],
    [Text("~ update", style="yellow"), "FAKE::Test::Item", "a-much-longer-label-than-the-header", "set /Value = 2"],
    [Text("± replace", style="magenta"), "LOCAL::FS::File", "ünïcødé-日本", "create-only /Path changed\nset /A = 1"],
    ["- delete", "", "x", "one\ntwo\nthree"],
]


def _table(rows: list[list[str | Text]], **style: object) -> Table:
    table = Table(box=None, pad_edge=False, **style)  # type: ignore[arg-type]
    for header in HEADERS:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def _printed(rows: list[list[str | Text]], *, direct: bool, **style: object) -> str:
    with console.capture() as captured:
        if direct:
            print_table(_table(rows, **style))
        else:
            console.print(_table(rows, **style))
    return captured.get()


@pytest.fixture
def wide() -> Iterator[None]:
    width = console.width
    console.width = 160
    yield
    console.width = width


@pytest.mark.parametrize("rows", [ROWS, ROWS[:1], [], [r for r in ROWS if "\n" not in str(r[3])]])
def test_the_direct_text_is_what_rich_prints(rows: list[list[str | Text]], wide: None) -> None:
    assert console.color_system is None  # pytest's output is not a terminal
    assert tables._plain(_table(rows), console.width) is not None  # the direct path is taken
    assert _printed(rows, direct=True) == _printed(rows, direct=False)


def test_a_table_wider_than_the_console_is_wrapped_by_rich() -> None:
    assert tables._plain(_table(ROWS), 60) is None
    assert _printed(ROWS, direct=True) == _printed(ROWS, direct=False)


@pytest.mark.parametrize("cell", ["[bold]markup[/bold]", "an :thumbs_up: code", "tab\there", " edge ", "x" * 500,
                                  "blank\n\nline"])
def test_cells_only_rich_can_lay_out_go_through_rich(cell: str, wide: None) -> None:
    rows = [*ROWS, ["+ create", "FAKE::Test::Item", cell, ""]]
    assert tables._plain(_table(rows), console.width) is None
    assert _printed(rows, direct=True) == _printed(rows, direct=False)


@pytest.mark.parametrize("style", [{"title": "T"}, {"show_header": False}, {"show_lines": True}, {"expand": True}])
def test_other_table_styles_go_through_rich(style: dict[str, object], wide: None) -> None:
    assert tables._plain(_table(ROWS, **style), console.width) is None
    assert _printed(ROWS, direct=True, **style) == _printed(ROWS, direct=False, **style)
