"""How Pkl's errors become forma errors: locations, one-line validation messages, no values."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc.forma.errors import Frame, frames, from_pkl_error
from svc.pkl import PklError

VALIDATION = """–– Pkl Error ––
resource "b" (T::S::R): required field `size` is not set

120 | throw("...")
      ^^^^^
at svc.forma#checkFields (projectpackage://pkg.svc.invalid/svc@0.1.0#/forma.pkl)

12 | new R {
     ^^^^^
at main#forma[#3] (file:///work/app/main.pkl)
"""

TYPE_ERROR = """–– Pkl Error ––
Expected value of type `Int`, but got a different `String`.
Value: "s3cr3t"

5 | size: Int
          ^^^
at fixture#R.size (projectpackage://pkg.svc.invalid/plugins/fixture@1.0.0#/r.pkl)

9 |   size = read("env:PW")
             ^^^^^^^^^^^^^
at main#forma[#1].size (file:///work/app/main.pkl, line 9)

40 | let (v = r.getProperty(t.name))
     ^^^^^^^^
at svc.forma#checkFields (projectpackage://pkg.svc.invalid/svc@0.1.0#/forma.pkl)
"""


@pytest.fixture(autouse=True)
def in_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path("/"))


def test_frames_are_read_innermost_first() -> None:
    assert frames(str(PklError(TYPE_ERROR))) == [
        Frame("projectpackage://pkg.svc.invalid/plugins/fixture@1.0.0#/r.pkl", 5),
        Frame("file:///work/app/main.pkl", 9),
        Frame("projectpackage://pkg.svc.invalid/svc@0.1.0#/forma.pkl", 40),
    ]


def test_svc_validation_errors_are_one_line_at_the_users_file() -> None:
    assert str(from_pkl_error(PklError(VALIDATION))) == (
        'work/app/main.pkl:12: resource "b" (T::S::R): required field `size` is not set')


def test_other_errors_keep_pkls_message_without_values_or_svc_frames() -> None:
    message = str(from_pkl_error(PklError(TYPE_ERROR)))
    assert message.startswith("work/app/main.pkl:9: Expected value of type `Int`, but got a different `String`.")
    assert "s3cr3t" not in message
    assert "at fixture#R.size" in message and "svc.forma#checkFields" not in message
