"""Writing Pkl source: identifiers, string literals (with interpolations), numbers.

Pure. Used by ``svc extract`` to turn stored resources back into a forma a person reads and edits,
so strings stay readable: multi-line text becomes a ``\"\"\"`` block, JSON-like text a ``#"…"#``
literal, and only what must be escaped is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

# The language's keywords and the words it reserves: neither may name a property without backticks.
KEYWORDS = frozenset("""
    abstract amends as case class const delete else extends external false fixed for function hidden if
    import in is let local module new nothing null open out outer override protected read record super
    switch this throw trace true typealias unknown vararg when
""".split())

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Expr(str):
    """Pkl source text that goes into a string as an interpolation (``\\(…)``), not as characters."""


def identifier(name: str) -> str:
    """``name`` as a property name: as it is when it may be, else between backticks."""
    if _IDENTIFIER.fullmatch(name) and name not in KEYWORDS:
        return name
    return "`" + name.replace("`", "") + "`"


def is_plain_identifier(name: str) -> bool:
    return bool(_IDENTIFIER.fullmatch(name)) and name not in KEYWORDS


def camel_identifier(text: str, fallback: str = "resource") -> str:
    """A lowerCamelCase identifier made of the letters and digits of ``text`` (``web-bucket`` → ``webBucket``)."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", text) if w]
    if not words:
        return fallback
    name = words[0][0].lower() + words[0][1:] + "".join(w[0].upper() + w[1:] for w in words[1:])
    if not name[0].isalpha():
        name = fallback[0] + name
    return name if name not in KEYWORDS else name + "_"


def _escape(text: str, *, multiline: bool) -> str:
    out = text.replace("\\", "\\\\")
    if multiline:
        out = out.replace('"""', '""\\"').replace("\t", "\\t").replace("\r", "\\r")
    else:
        out = out.replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return _CONTROL.sub(lambda m: f"\\u{{{ord(m.group()):X}}}", out)


def _raw_ok(text: str) -> bool:
    """Whether ``#"text"#`` reads the same as the text: quotes inside, nothing escaped."""
    return '"' in text and "\\" not in text and '"#' not in text and "\n" not in text and "\t" not in text \
        and not _CONTROL.search(text) and "\r" not in text


def string(parts: str | Sequence[str], indent: str = "") -> str:
    """A string literal of ``parts``: text, and :class:`Expr` interpolations. Text with line breaks
    becomes a multi-line literal whose lines are indented by ``indent`` plus two spaces."""
    if isinstance(parts, str):
        parts = [parts]
    text_only = "".join(p for p in parts if not isinstance(p, Expr))
    if "\n" in text_only.rstrip("\n") and "\r" not in text_only:  # a single line with its line break stays one
        inner = indent + "  "
        body = "".join(f"\\({p})" if isinstance(p, Expr) else _escape(p, multiline=True) for p in parts)
        lines = [(inner + line) if line else "" for line in body.split("\n")]
        return '"""\n' + "\n".join(lines) + "\n" + inner + '"""'
    if not any(isinstance(p, Expr) for p in parts) and _raw_ok(text_only):
        return '#"' + text_only + '"#'
    return '"' + "".join(f"\\({p})" if isinstance(p, Expr) else _escape(p, multiline=False) for p in parts) + '"'


def number(value: int | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    return text if any(c in text for c in ".eE") else text + ".0"


def duration(seconds: int) -> str:
    """Whole seconds as a Pkl duration in the largest unit that divides them (``5.min``, ``2.h``)."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}.{unit}"
    return f"{seconds}.s"
