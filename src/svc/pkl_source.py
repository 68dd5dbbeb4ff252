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
