"""Evaluating a forma once, its property flags given as the command line's raw arguments.

A forma declares its CLI properties (the flags ``--<flag>``) and reads their values (``prop:<flag>``): the
command line is parsed against the declarations, and the forma is evaluated with the parsed values. Reading the
declarations first costs a second evaluation of the whole module (Pkl parses it again: a tenth of the time of a
forma of 10,000 resources). So the forma is evaluated once with the values as the arguments read plainly
(``--name value``, ``--name=value``, ``--flag``, ``--no-flag``), and the arguments are then parsed against the
declarations that evaluation rendered. When the parse gives those very values, which it does for any
well-formed command line, that evaluation is the one a parse beforehand would have led to. Otherwise (a value
the parser writes another way, ``--ratio 2`` as ``2.0``; an argument the parser refuses) the parser's values
lead to a second evaluation, or its error is raised, as when the declarations were read first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from svc.forma.errors import FormaError
from svc.forma.evaluate import RenderedForma, forma_properties, render_forma
from svc.model.forma_document import Property

# The CLI's parser of property flags: the declared properties and the arguments in, the ``prop:`` values of the
# flags the arguments give out (the values the forma does not get from its own defaults).
FlagParser = Callable[[Mapping[str, Property], Sequence[str]], dict[str, str]]


def read_flags(args: Sequence[str]) -> dict[str, str]:
    """The flag values ``args`` give, read without the declarations: ``--name value`` and ``--name=value`` give
    the value, a ``--flag`` followed by nothing or by another option gives ``true``, ``--no-flag`` ``false``."""
    flags: dict[str, str] = {}
    rest = list(args)
    while rest:
        name, given, value = rest.pop(0).removeprefix("--").partition("=")
        if not given and rest and not rest[0].startswith("--"):
            value = rest.pop(0)
        elif not given:
            name, value = (name[3:], "false") if name.startswith("no-") else (name, "true")
        flags[name] = value
    return flags


def evaluate_with_arguments(path: Path, args: Sequence[str], parse: FlagParser, *, command: str, mode: str,
                            meanwhile: Callable[[], object] | None = None) -> RenderedForma:
    """The forma at ``path`` evaluated with the property flags that ``parse`` reads in ``args``: once, unless
    the arguments read plainly are not what ``parse`` makes of them. ``meanwhile``: as for ``render_forma``."""
    read = read_flags(args)
    try:
        forma = render_forma(path, command=command, mode=mode, flags=read, meanwhile=meanwhile)
    except FormaError:
        # The arguments' own error comes first (a required flag left out may be what made the forma fail), from
        # the declarations alone, which render even when the rest of the forma does not.
        parsed = parse(forma_properties(path), args)
        if parsed == read:
            raise
    else:
        parsed = parse(forma.properties, args)
        if parsed == read:
            return forma
    return render_forma(path, command=command, mode=mode, flags=parsed, meanwhile=meanwhile)
