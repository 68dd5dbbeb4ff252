"""Whether a module may read the command it is evaluated for (``svc.pkl_source.may_read_command``): what decides
that a forma's kept evaluation serves every command. Wrong in one direction, a command would get another's document;
so every way Pkl code can name the ``$cmd`` property counts, and only literal names of other properties do not."""

from __future__ import annotations

from pathlib import Path

import pytest

import svc
from svc.pkl_source import may_read_command

READS = {
    "svc.cmd": 'x = svc.cmd()',
    "backticks": 'x = svc.`cmd`()',
    "prop-literal": 'x = read?("prop:$cmd")',
    "prop-interpolated": 'x = read?("prop:\\(name)")',
    "prop-concatenated": 'x = read?("prop:" + name)',
    "flag-literal": 'x = svc.flag("$cmd")',
    "flag-computed": 'x = svc.flag(name)',
    "prop-flag-computed": 'p = new svc.Prop { flag = "$" + "cmd" }',
    "prop-flag-variable": 'p = new svc.Prop { flag = name }',
    "annotation-computed": '@svc.Flag { name = which }\nregion: String',
    "typed-property-named": '`$cmd`: String',
    "flag-from-a-map": 'p = Map("flag", name).toTyped(svc.Prop)',
    "comment-after-code": 'x = 1 // set flag',
}
DOES_NOT = {
    "literal-flag": 'x = svc.flag("region")',
    "literal-prop-flag": 'p = new svc.Prop { flag = "region"; default = "eu" }',
    "literal-prop-flag-lines": 'p = new svc.Prop {\n  flag = "region"\n  default = "eu"\n}',
    "literal-annotation": '@svc.Flag { name = "region" }\nregion: String',
    "literal-prop-read": 'x = read?("prop:region")',
    "mode": 'x = svc.mode()',
    "words-that-contain-it": 'bcmdataexports = 1\nfeature_flag = 2\nflags = 3\nmyflag = 4',
    "documentation": '/// a flag: svc.cmd() tells\nx = 1',
}


@pytest.mark.parametrize("text", READS.values(), ids=READS.keys())
def test_what_may_read_the_command(text: str) -> None:
    assert may_read_command(text)


@pytest.mark.parametrize("text", DOES_NOT.values(), ids=DOES_NOT.keys())
def test_what_cannot(text: str) -> None:
    assert not may_read_command(text)


def test_of_svcs_own_modules_only_those_that_serve_the_callers_flags_read_it() -> None:
    """The cache leaves svc's own modules out of the check: they read the command in ``svc.cmd()`` and flag names
    their callers give (``svc.flag``, ``Prop``, typed properties), which the callers' text shows. A new module of
    svc's that reads it otherwise must be looked at. No plugin package's module reads it: an AWS forma is kept for
    every command."""
    assets = Path(svc.__file__).parent / "pkl_assets"
    own = sorted(path.relative_to(assets).as_posix() for path in assets.rglob("*.pkl")
                 if may_read_command(path.read_text()))
    assert own == ["forma.pkl", "svc.pkl"]
    plugins = Path(svc.__file__).parents[2] / "plugins"
    assert not [path for path in plugins.rglob("*.pkl") if may_read_command(path.read_text())]
