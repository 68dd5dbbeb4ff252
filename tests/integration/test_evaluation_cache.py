"""A forma's evaluation kept between commands: used while every file it came from is unchanged, never for a forma
that reads the environment or holds a secret (real Pkl, the real packages)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from svc.forma import evaluate, evaluate_forma, render_forma
from svc.forma.evaluation_cache import EvaluationCache
from svc.pkl.server import PklServer, stop_shared_server

HEAD = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"
import "names.pkl"
"""
BODY = """
forma {
  new svc.Stack { label = "site" }
  new svc.Target { label = "home"; config = new lcl.Config { root = "/tmp/svc-evaluation-cache" } }
  new fs.File { label = "index"; path = names.index; content = "hello" }
}
"""
FORMA = HEAD + BODY


@pytest.fixture
def renders(home: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The formas Pkl evaluated, in order (the cache lives in the isolated ``home``)."""
    rendered: list[Path] = []
    render = evaluate._render

    def counted(path: Path, *args: Any) -> dict[str, Any]:
        rendered.append(path)
        return render(path, *args)

    monkeypatch.setattr(evaluate, "_render", counted)
    return rendered


@pytest.fixture
def forma(write_pkl) -> Path:
    write_pkl("names.pkl", 'index = "index.html"\n')
    return write_pkl("main.pkl", FORMA)


def index_path(path: Path, **flags: str) -> str:
    [index] = evaluate_forma(path, flags=flags).resources
    return index.properties["Path"]


def test_an_unchanged_forma_is_evaluated_once(forma: Path, renders: list[Path]) -> None:
    first = evaluate_forma(forma)
    assert evaluate_forma(forma).to_json() == first.to_json()
    assert len(renders) == 1
    # No module of this forma reads the command: its evaluation serves every command.
    assert evaluate_forma(forma, command="apply").to_json() == first.to_json()
    evaluate_forma(forma, command="destroy")
    assert len(renders) == 1
    # Another mode or property value is another evaluation.
    evaluate_forma(forma, mode="patch")
    evaluate_forma(forma, flags={"owner": "me"})
    assert len(renders) == 3
    evaluate_forma(forma, command="apply", flags={"owner": "me"})
    assert len(renders) == 3


@pytest.mark.parametrize("names", [
    'import "@svc/svc.pkl"\nindex = "\\(svc.cmd()).html"\n',
    'index = "\\(read?("prop:$cmd")).html"\n',
    'import "@svc/svc.pkl"\nlocal which = "$" + "cmd"\nindex = "\\(svc.flag(which)).html"\n',
    'import "@svc/svc.pkl"\nlocal p = new svc.Prop { flag = List("$", "cmd").join("") }\nindex = "\\(p.value).html"\n',
], ids=["svc.cmd", "prop-read", "computed-flag", "computed-prop-flag"])
def test_a_forma_that_may_read_the_command_is_evaluated_for_each_command(write_pkl, renders: list[Path],
                                                                         names: str) -> None:
    """A module the forma imports reads the command, by name or through a computed property name: each command
    gets its own evaluation, and its own value."""
    write_pkl("names.pkl", names)
    path = write_pkl("main.pkl", FORMA)
    assert index_path(path) == "eval.html"
    [index] = evaluate_forma(path, command="destroy").resources
    assert index.properties["Path"] == "destroy.html"
    assert len(renders) == 2
    evaluate_forma(path, command="destroy")
    assert len(renders) == 2


def test_a_forma_edited_to_read_the_command_is_no_longer_served_to_every_command(forma: Path,
                                                                                renders: list[Path]) -> None:
    assert index_path(forma) == "index.html"
    names = forma.with_name("names.pkl")
    names.write_text('import "@svc/svc.pkl"\nindex = "\\(svc.cmd()).html"\n')
    [index] = evaluate_forma(forma, command="apply").resources
    assert index.properties["Path"] == "apply.html"
    assert index_path(forma) == "eval.html"
    names.write_text('index = "index.html"\n')  # back as it was: the first evaluation serves again
    [index] = evaluate_forma(forma, command="apply").resources
    assert index.properties["Path"] == "index.html"
    assert len(renders) == 3


def test_what_the_caller_does_meanwhile_starts_only_when_pkl_evaluates(forma: Path, renders: list[Path]) -> None:
    """``meanwhile`` (a command connecting to its agent) begins just before Pkl's evaluation, and never for a kept
    one, where there is nothing to wait for."""
    calls: list[int] = []

    def meanwhile() -> None:
        calls.append(len(renders))

    render_forma(forma, meanwhile=meanwhile)
    assert calls == [0] and len(renders) == 1
    render_forma(forma, meanwhile=meanwhile)
    assert calls == [0] and len(renders) == 1


def test_pkl_starts_before_the_lookup_for_a_forma_edited_since_its_evaluation_was_kept(
        forma: Path, renders: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A forma edited after its evaluation was kept will be evaluated: its Pkl server starts before the lookup and the
    files' hashing, to boot meanwhile. An unchanged one starts none."""
    started: list[int] = []
    start = PklServer.start

    def counted(server: PklServer) -> None:
        started.append(len(renders))
        start(server)

    monkeypatch.setattr(PklServer, "start", counted)
    render_forma(forma)  # nothing kept yet
    assert started == [0] and len(renders) == 1
    stop_shared_server()
    render_forma(forma)
    assert started == [0] and len(renders) == 1
    kept = EvaluationCache(forma, {"$cmd": "eval", "$mode": "reconcile"}).any_command_path.stat()
    forma.write_text(FORMA.replace('content = "hello"', 'content = "hi"'))
    os.utime(forma, ns=(kept.st_atime_ns, kept.st_mtime_ns + 1_000_000))
    render_forma(forma)
    assert started == [0, 1] and len(renders) == 2


def test_a_forma_edited_since_its_evaluation_was_kept_is_not_looked_up(
        forma: Path, renders: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Its kept evaluation cannot serve: it is not read (for 40 AWS types half a megabyte, to find out)."""
    looked: list[int] = []
    lookup = EvaluationCache.lookup

    def counted(cache: EvaluationCache) -> dict | None:
        looked.append(len(renders))
        return lookup(cache)

    monkeypatch.setattr(EvaluationCache, "lookup", counted)
    render_forma(forma)
    render_forma(forma)
    assert looked == [1] and len(renders) == 1  # nothing was kept before the first; the second was served
    kept = EvaluationCache(forma, {"$cmd": "eval", "$mode": "reconcile"}).any_command_path.stat()
    forma.write_text(FORMA.replace('content = "hello"', 'content = "hi"'))
    os.utime(forma, ns=(kept.st_atime_ns, kept.st_mtime_ns + 1_000_000))
    assert index_path(forma) == "index.html"
    assert looked == [1] and len(renders) == 2

def test_an_edit_of_the_forma_or_of_a_module_it_imports_is_evaluated(forma: Path, renders: list[Path]) -> None:
    assert index_path(forma) == "index.html"
    forma.write_text(FORMA.replace('content = "hello"', 'content = "hi"'))
    [index] = evaluate_forma(forma).resources
    assert index.properties["Content"] == "hi"
    # Same size, same modification time: the content is what is compared.
    names = forma.with_name("names.pkl")
    stat = names.stat()
    names.write_text('index = "INDEX.html"\n')
    os.utime(names, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert index_path(forma) == "INDEX.html"
    assert len(renders) == 3


def test_a_forma_that_reads_the_environment_is_evaluated_every_time(write_pkl, renders: list[Path],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    write_pkl("names.pkl", 'index = read("env:INDEX_NAME")\n')
    path = write_pkl("main.pkl", FORMA)
    monkeypatch.setenv("INDEX_NAME", "a.html")
    assert index_path(path) == "a.html"
    monkeypatch.setenv("INDEX_NAME", "b.html")
    assert index_path(path) == "b.html"
    assert len(renders) == 2
    cache = EvaluationCache(path, {"$cmd": "eval", "$mode": "reconcile"})
    assert not cache.path.exists() and not cache.any_command_path.exists()


def test_a_glob_import_is_evaluated_every_time(write_pkl, renders: list[Path]) -> None:
    write_pkl("names.pkl", 'index = "index.html"\n')
    write_pkl("parts/a.pkl", "x = 1\n")
    path = write_pkl("main.pkl", HEAD + 'import* "parts/*.pkl" as parts\n' + BODY)
    evaluate_forma(path)
    write_pkl("parts/b.pkl", "x = 2\n")  # found by the glob: no file the first evaluation read has changed
    evaluate_forma(path)
    assert len(renders) == 2


LOGIN = """
@svc.ResourceHint { type = "TEST::Box::Login"; identifier = "$.user" }
local class Login extends svc.Resource {
  @svc.FieldHint {} user: String
  @svc.FieldHint {} password: (String | svc.SecretValue)?
  @svc.FieldHint {} note: (String | svc.SecretValue)?
}
"""


@pytest.mark.parametrize("field", ['password = "hunter2"', 'note = svc.value("hunter2").opaque'],
                         ids=["opaque-field", "opaque-value"])
def test_a_forma_with_a_secret_is_never_written_to_the_cache(write_pkl, renders: list[Path], home: Path,
                                                             field: str) -> None:
    write_pkl("names.pkl", 'index = "index.html"\n')
    login = f'  new Login {{ label = "admin"; user = "admin"; {field} }}\n}}\n'
    path = write_pkl("main.pkl", HEAD + LOGIN + BODY.rstrip().removesuffix("}") + login)
    for _ in range(2):
        evaluate_forma(path)
    assert len(renders) == 2
    kept = [file for file in (home / ".cache").rglob("*") if file.is_file()]
    assert not any(b"hunter2" in file.read_bytes() for file in kept)
    # The same forma without the secret is kept.
    write_pkl("main.pkl", HEAD + LOGIN + BODY.rstrip().removesuffix("}") +
              '  new Login { label = "admin"; user = "admin" }\n}\n')
    evaluate_forma(path)
    evaluate_forma(path)
    assert len(renders) == 3


def test_the_cache_can_be_turned_off_and_a_broken_entry_is_no_entry(forma: Path, renders: list[Path],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    evaluate_forma(forma)
    cache = EvaluationCache(forma, {"$cmd": "eval", "$mode": "reconcile"})
    assert cache.lookup() is not None  # waits for the entry's write
    entry = cache.any_command_path
    assert entry.is_file() and oct(entry.stat().st_mode & 0o777) == "0o600"
    monkeypatch.setenv("SVC_EVALUATION_CACHE", "off")
    evaluate_forma(forma)
    monkeypatch.delenv("SVC_EVALUATION_CACHE")
    entry.write_text('{"Format": 1, "Inputs": [')
    assert index_path(forma) == "index.html"
    assert len(renders) == 3
    evaluate_forma(forma)  # the broken entry was replaced
    assert len(renders) == 3


def test_an_edit_while_pkl_evaluates_is_not_hidden_by_the_kept_evaluation(forma: Path, renders: list[Path],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    render = evaluate._render

    def edited_meanwhile(path: Path, *args: Any) -> dict[str, Any]:
        document = render(path, *args)  # what Pkl read: "hello"
        path.write_text(FORMA.replace('content = "hello"', 'content = "hi"'))
        return document

    monkeypatch.setattr(evaluate, "_render", edited_meanwhile)
    [index] = evaluate_forma(forma).resources
    assert index.properties["Content"] == "hello"
    monkeypatch.setattr(evaluate, "_render", render)
    [index] = evaluate_forma(forma).resources
    assert index.properties["Content"] == "hi"


def test_the_evaluation_is_kept_while_the_command_goes_on(forma: Path, renders: list[Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    store = EvaluationCache.store

    def slow_store(self: EvaluationCache, *args: Any) -> None:
        assert release.wait(timeout=30)
        store(self, *args)

    monkeypatch.setattr(EvaluationCache, "store", slow_store)
    first = render_forma(forma)  # returns with its entry still being written
    cache = EvaluationCache(forma, {"$cmd": "eval", "$mode": "reconcile"})
    assert not cache.any_command_path.exists()
    release.set()
    assert render_forma(forma).document == first.document  # the lookup waited for the write
    assert len(renders) == 1


ENDS_LIKE_A_WORKER = """\
import atexit, os, sys, time
from pathlib import Path

from svc.forma import render_forma
from svc.forma.evaluation_cache import EvaluationCache

store = EvaluationCache.store


def slow_store(self, *args):
    time.sleep(0.5)  # still writing when the command is over
    store(self, *args)


EvaluationCache.store = slow_store
render_forma(Path(sys.argv[1]))
atexit._run_exitfuncs()  # what a CLI server's worker (svc.cli.worker) does before os._exit
os._exit(0)
"""


def test_a_process_that_ends_with_os_exit_after_its_exit_handlers_still_keeps_its_evaluation(
        forma: Path, home: Path) -> None:
    ended = subprocess.run([sys.executable, "-c", ENDS_LIKE_A_WORKER, str(forma)], capture_output=True, text=True,
                           timeout=120)
    assert ended.returncode == 0, ended.stderr
    kept = EvaluationCache(forma, {"$cmd": "eval", "$mode": "reconcile"}).any_command_path
    assert kept.exists()
    assert not [left for left in kept.parent.iterdir() if left.name.endswith(".tmp")]
