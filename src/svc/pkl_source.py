"""What a Pkl module's text says it depends on, read without Pkl: the checks that decide whether an evaluation may
be kept (``svc.forma.module_files``, ``svc.config.cli_cache``), which err on the side of evaluating again."""

from __future__ import annotations

import re

# Whatever reads a resource: read(…), read?(…), read*(…), also with the name in backticks.
READ = re.compile(r"\bread`?[?*]?`?\s*\(")
# A read of a literal prop: URI (a CLI property: the properties given to the evaluation decide its value).
PROP_READ = re.compile(r'\bread`?\??`?\s*\(\s*"prop:')
# Every import, amends or extends followed by a string (a module's URI; a class's `extends Base` is not).
IMPORT_KEYWORD = re.compile(r'\b(?:import\*?|amends|extends)\s*\(?\s*#*"')
