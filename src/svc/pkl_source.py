"""What a Pkl module's text says it depends on, read without Pkl: the checks that decide whether an evaluation may
be kept (``svc.forma.module_files``, ``svc.config.cli_cache``), which err on the side of evaluating again."""

from __future__ import annotations

import re

# Each pattern starts with its keyword and checks what comes before it after it (``read(?<!\wread)`` is ``\bread``):
# a pattern that starts with a literal is found by a fast scan for it, one that starts with ``\b`` is tried at
# every position (1 ms against 0.05 for svc.pkl, read on every evaluation a command keeps).
# Whatever reads a resource: read(…), read?(…), read*(…), also with the name in backticks.
READ = re.compile(r"read(?<!\wread)`?[?*]?`?\s*\(")
# A read of a literal prop: URI (a CLI property: the properties given to the evaluation decide its value).
PROP_READ = re.compile(r'read(?<!\wread)`?\??`?\s*\(\s*"prop:')
# Every import, amends or extends followed by a string (a module's URI; a class's `extends Base` is not).
IMPORT_KEYWORD = re.compile(r'(?:import(?<!\wimport)\*?|amends(?<!\wamends)|extends(?<!\wextends))\s*\(?\s*#*"')
_LINE_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


def without_line_comments(text: str) -> str:
    """``text`` without its whole-line comments: documentation that shows an import or a read is neither."""
    return _LINE_COMMENT.sub("", text)


# What may read the command a forma is evaluated for: ``svc.cmd()`` or the name ``$cmd`` itself, and any CLI property
# whose name is not one literal, which could be ``$cmd``: a ``prop:`` URI not read as one literal, a flag named by
# anything but a string literal (``svc.flag(…)``, a ``Prop``'s ``flag``, an ``@svc.Flag``'s ``name``). A typed
# property's own name is an identifier, which a ``$cmd`` in the text would show.
_COMMAND_NAMED = re.compile(r"\$cmd|cmd(?<![\w$]cmd)`?\s*\(")
_PROP_URI = re.compile(r'"prop:')
_LITERAL_PROP_URI = re.compile(r'"prop:[^"\\]*"\s*\)')
_FLAG = re.compile(r"[Ff]lag(?<!\w[Ff]lag)(?!\w)")
_LITERAL = r'"[^"\\]*"'
_LITERAL_FLAG = re.compile(
    rf"flag(?<!\wflag)`?\s*\(\s*{_LITERAL}\s*\)"  # svc.flag("name")
    rf"|flag(?<!\wflag)`?\s*=\s*{_LITERAL}(?=[ \t]*(?:[;}}\n]|//|$))"  # Prop { flag = "name" }
    rf"|Flag(?<!\wFlag)`?\s*\{{\s*name\s*=\s*{_LITERAL}\s*\}}")  # @svc.Flag { name = "name" }


def may_read_command(text: str, *, comments_removed: bool = False) -> bool:
    """Whether the module whose text is ``text`` may read the command it is evaluated for. Errs on the side of
    yes: a mention in a string or in a comment after code is enough. ``comments_removed``: ``text`` is already
    ``without_line_comments`` (4 ms of a 10,000-resource forma's text)."""
    if not comments_removed:
        text = without_line_comments(text)
    return bool(_COMMAND_NAMED.search(text)
                or len(_PROP_URI.findall(text)) != len(_LITERAL_PROP_URI.findall(text))
                or len(_FLAG.findall(text)) != len(_LITERAL_FLAG.findall(text)))
