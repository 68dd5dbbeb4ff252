"""Printing the CLI's borderless tables: Rich's layout, written directly when nothing needs Rich.

Rich measures, wraps and pads every cell of a table through its renderables: 2-5 ms a row, so the plan and
the final table of a 10,000-resource apply took tens of seconds to print. When the console emits no styles
(not a terminal: logs, pipes, CI) and the table fits the console's width unwrapped, the text Rich would
print is simple (each cell left-aligned to its column's widest line, columns two spaces apart, the lines
of a multi-line cell beside blanks), and ``print_table`` writes exactly that. Anything else (colours, a
table to wrap, another table style, markup or emoji codes or control characters in a cell) goes through
Rich as before.
"""

from __future__ import annotations

import functools
import re

from rich.cells import cell_len
from rich.emoji import Emoji
from rich.table import Table
from rich.text import Text

from svc.cli.output import console

# What Rich would interpret or transform in a plain string cell: markup, tabs, control codes (and emoji codes,
# which only Rich's own table of names tells from e.g. ``AWS::S3::Bucket``).
_NOT_PLAIN = re.compile(r"[\[\t\x00-\x09\x0b-\x1f\x7f]")


def print_table(table: Table) -> None:
    """``console.print(table)`` for a ``Table(box=None, pad_edge=False)`` of text cells."""
    plain = _plain(table, console.width) if console.color_system is None else None
    if plain is None:
        console.print(table)
    else:
        console.out(plain, highlight=False)


def _laid_out_simply(table: Table) -> bool:
    """The table has the one style ``_plain`` reproduces."""
    return (table.box is None and not table.pad_edge and table.padding == (0, 1, 0, 1) and table.show_header
            and not (table.show_footer or table.title or table.caption or table.expand or table.collapse_padding
                     or table.width or table.min_width or table.leading or table.show_lines or table.row_styles)
            and all(column.justify == "left" and column.width is None and column.min_width is None
                    and column.max_width is None and column.ratio is None for column in table.columns))


def _lines(cell: object) -> tuple[tuple[str, ...], int] | None:
    """A cell's lines as Rich prints them unwrapped and their width, or None when only Rich knows."""
    if isinstance(cell, Text):
        if cell.justify not in (None, "default", "left"):
            return None
        return _text_lines(cell.plain)
    return _text_lines(cell) if isinstance(cell, str) else None


@functools.lru_cache(maxsize=4096)  # types, stacks and operations repeat row after row
def _text_lines(text: str) -> tuple[tuple[str, ...], int] | None:
    if _NOT_PLAIN.search(text) or (":" in text and Emoji.replace(text) != text):
        return None
    lines = tuple(text.split("\n"))
    for line in lines:
        if line != line.strip(" ") or (not line and len(lines) > 1):
            return None  # Rich's wrapping may move or drop edge spaces and blank lines
    return lines, max(_width(line) for line in lines)


def _width(line: str) -> int:
    return len(line) if line.isascii() else cell_len(line)


def _plain(table: Table, width: int) -> str | None:
    """The table as text, or None when only Rich can say how it looks."""
    if not table.columns or not _laid_out_simply(table):
        return None
    widths = [0] * len(table.columns)
    cells: list[list[tuple[str, ...]]] = []  # column → row → lines
    for index, column in enumerate(table.columns):
        laid_out = []
        for cell in (column.header, *column.cells):
            found = _lines(cell)
            if found is None:
                return None
            laid_out.append(found[0])
            widths[index] = max(widths[index], found[1])
        cells.append(laid_out)
    if 0 in widths or sum(widths) + 2 * (len(widths) - 1) > width:
        return None
    out: list[str] = []
    for row in zip(*cells, strict=True):
        if all(len(lines) == 1 for lines in row):
            out.append("  ".join(lines[0] + " " * (widths[column] - _width(lines[0]))
                                 for column, lines in enumerate(row)))
            continue
        for index in range(max(len(lines) for lines in row)):
            parts = [lines[index] if index < len(lines) else "" for lines in row]
            out.append("  ".join(part + " " * (widths[column] - _width(part)) for column, part in enumerate(parts)))
    return "\n".join(out)
