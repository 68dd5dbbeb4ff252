"""What a Pkl module's text says (its imports, whether its value depends on its files alone, whether it may read
the command), kept by the text's digest from one command to the next (``svc.forma.module_scans``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from svc import jsontext
from svc.forma import module_scans
from svc.forma.module_scans import ModuleScan, ModuleScans, scan

TEXT = b'amends "@svc/forma.pkl"\nimport "names.pkl"\nx = read("prop:size")\n'


def test_a_scan_says_what_the_text_imports_and_reads() -> None:
    assert scan(TEXT.decode()) == ModuleScan(("@svc/forma.pkl", "names.pkl"), files_alone=True,
                                             may_read_command=False)
    assert not scan('x = read("env:HOME")\n').files_alone
    assert not scan('import* "*.pkl"\n').files_alone
    assert scan("x = svc.cmd()\n").may_read_command


def test_a_scan_kept_serves_the_next_command_and_an_edit_is_scanned_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "module-scans.json"
    first = ModuleScans(path)
    digest, found = first.of(TEXT)
    assert digest == hashlib.sha256(TEXT).hexdigest()
    first.save()

    def no_scan(text: str) -> ModuleScan:
        raise AssertionError(f"scanned again: {text!r}")

    monkeypatch.setattr(module_scans, "scan", no_scan)
    assert ModuleScans(path).of(TEXT) == (digest, found)
    with pytest.raises(AssertionError, match="scanned again"):
        ModuleScans(path).of(TEXT + b"y = 1\n")


@pytest.mark.parametrize("kept", [b"", b"not json", b'{"Format": 1, "Scans": []}', b'{"Format": 2, "Scans": {}}',
                                  b'{"Format": 1, "Scans": {"DIGEST": [["a"], "yes", false]}}'])
def test_anything_unreadable_is_nothing_kept(tmp_path: Path, kept: bytes) -> None:
    path = tmp_path / "module-scans.json"
    path.write_bytes(kept.replace(b"DIGEST", hashlib.sha256(TEXT).hexdigest().encode()))
    assert ModuleScans(path).of(TEXT)[1] == scan(TEXT.decode())


def test_the_latest_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module_scans, "MAX_KEPT", 2)
    path = tmp_path / "module-scans.json"
    scans = ModuleScans(path)
    digests = [scans.of(f"x = {n}\n".encode())[0] for n in range(3)]
    scans.save()
    assert list(jsontext.loads(path.read_bytes())["Scans"]) == digests[1:]
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_scan_not_to_keep_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "module-scans.json"
    scans = ModuleScans(path)
    assert scans.of(TEXT, keep=False)[1] == scan(TEXT.decode())
    scans.save()
    assert not path.exists()
