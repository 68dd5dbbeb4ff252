"""Pkl source text for literals: strings, regular expressions, doc comments and constrained scalar types."""

from __future__ import annotations

import functools
import re

from svc_plugin_aws_gen.registry import JsonSchema

# The regular-expression syntax that JSON Schema (ECMAScript) and Pkl (Java) read alike: a pattern using
# anything else (lookbehind, named groups, Unicode classes, nested classes, …) gives no constraint.
_ESCAPE = r"\\[dDwWsStnr.\\/\-^$*+?()\[\]{}|]"  # a class shorthand or an escaped mark
_PORTABLE_REGEX = re.compile(rf"(?:[^\\\[(]|{_ESCAPE}|\((?!\?)|\[(?:[^\\\[\]&]|{_ESCAPE})*\])*")


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _printable(char: str, fence: str = "") -> str:
    """``char``, or the Unicode escape a string delimited by ``fence`` reads (``\\u{0}``, ``\\#u{0}``) for one
    that is not printable: raw, NUL and DEL made a generated module a binary file to git and to every text tool."""
    return char if char.isprintable() else f"\\{fence}u{{{ord(char):X}}}"


def string(value: str) -> str:
    """A Pkl string literal."""
    return '"' + "".join(_ESCAPES.get(char) or _printable(char) for char in value) + '"'


@functools.cache  # the registry repeats its patterns; compiling each once keeps the generator quick
def regex(pattern: str) -> str | None:
    """``Regex(#"…"#)`` for a pattern Pkl reads as JSON Schema does, else None."""
    if "\n" in pattern or not _PORTABLE_REGEX.fullmatch(pattern):
        return None
    try:
        re.compile(pattern)
    except re.error:
        return None
    pounds = 1
    while f'"{"#" * pounds}' in pattern or f'\\{"#" * pounds}' in pattern:
        pounds += 1
    fence = "#" * pounds
    # The registry's ``[^\u0000-\u007F]`` decodes to NUL and DEL: escaped, Pkl reads the same pattern.
    return f'Regex({fence}"{"".join(_printable(char, fence) for char in pattern)}"{fence})'


def string_type(node: JsonSchema) -> str:
    """``String`` with the schema's length and pattern (JSON Schema's pattern matches anywhere: ``contains``)."""
    constraints: list[str] = []
    low, high = node.get("minLength"), node.get("maxLength")
    if isinstance(low, int) and isinstance(high, int) and (low or high):
        constraints.append(f"length.isBetween({low}, {high})")
    elif isinstance(low, int) and low > 0:
        constraints.append(f"length >= {low}")
    elif isinstance(high, int):
        constraints.append(f"length <= {high}")
    pattern = node.get("pattern")
    if isinstance(pattern, str) and pattern not in ("", ".*", "^.*$"):
        compiled = regex(pattern)
        if compiled is not None:
            constraints.append(f"contains({compiled})")
    return f"String({', '.join(constraints)})" if constraints else "String"


def int_type(node: JsonSchema) -> str:
    low, high = node.get("minimum"), node.get("maximum")
    low = low if isinstance(low, int) and not isinstance(low, bool) else None
    high = high if isinstance(high, int) and not isinstance(high, bool) else None
    if low is not None and high is not None:
        return f"Int(isBetween({low}, {high}))"
    if low is not None:
        return f"Int(this >= {low})"
    if high is not None:
        return f"Int(this <= {high})"
    return "Int"


def doc_text(description: object) -> str:
    """A description as doc-comment text: trimmed lines, no trailing blanks."""
    if not isinstance(description, str):
        return ""
    lines = [line.rstrip() for line in description.replace("\r\n", "\n").replace("\r", "\n").strip().split("\n")]
    return "\n".join(lines)


def doc_comment(text: str, indent: str = "") -> str:
    if not text:
        return ""
    return "".join(f"{indent}///{' ' + line if line else ''}\n" for line in text.split("\n"))
