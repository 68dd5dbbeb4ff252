"""The plugin SDK's idempotency journal on a real directory: what one instance writes another reads (the plugin
process after a restart, or another process at once), entries of the earlier layouts (a file per token, a SQLite
database), a line a crash cut short, pruning, and no file per call."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from svc.plugins import journal as journal_module
from svc.plugins.journal import Journal


def test_an_entry_is_read_back_by_another_journal_on_the_same_directory(tmp_path: Path) -> None:
    writer = Journal("LOCAL", tmp_path)
    writer.begin("tok-1", "Create", "a.txt")
    reader = Journal("LOCAL", tmp_path)  # a plugin process restarted after a crash
    pending = reader.get("tok-1")
    assert pending is not None and (pending["state"], pending["op"], pending["nativeId"]) == ("pending", "Create",
                                                                                              "a.txt")
    writer.finish("tok-1", "Create", "a.txt", {"Status": "Success", "NativeId": "a.txt"}, follow="req-9")
    done = reader.get("tok-1")
    assert done is not None and done["state"] == "done" and done["result"]["NativeId"] == "a.txt"
    assert done["follow"] == "req-9"
    assert reader.get("tok-never") is None
    writer.close()
    reader.close()


def test_calls_add_no_file_per_token(tmp_path: Path) -> None:
    # A file per call cost an inode allocation each, the larger part of a LOCAL file create on ext4.
    journal = Journal("LOCAL", tmp_path)
    threads = [threading.Thread(target=lambda n=n: (journal.begin(f"tok-{n}", "Create", f"f{n}"),
                                                    journal.finish(f"tok-{n}", "Create", f"f{n}", {"n": n})))
               for n in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(journal.get(f"tok-{n}")["result"] == {"n": n} for n in range(200))  # type: ignore[index]
    assert [path.name for path in tmp_path.iterdir()] == [journal_module.LOG]
    journal.close()


def test_an_entry_of_the_file_per_token_layout_is_still_read(tmp_path: Path) -> None:
    # A command that was running when svc was upgraded resumes with a token the earlier version journaled.
    key = journal_module._key("tok-old")
    (tmp_path / f"{key}.json").write_text(json.dumps({"state": "done", "op": "Create", "nativeId": "old",
                                                      "at": 1.0, "result": {"Status": "Success"}}))
    journal = Journal("LOCAL", tmp_path)
    assert journal.get("tok-old") == {"state": "done", "op": "Create", "nativeId": "old", "at": 1.0,
                                      "result": {"Status": "Success"}}
    journal.close()


def test_entries_older_than_the_horizon_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_000_000_000.0]
    monkeypatch.setattr(journal_module.time, "time", lambda: clock[0])
    old_file, recent_file = (tmp_path / f"{journal_module._key(token)}.json" for token in ("tok-a", "tok-b"))
    for path, written in ((old_file, clock[0]), (recent_file, clock[0] + journal_module.KEEP_SECONDS)):
        path.write_text("{}")
        os.utime(path, (written, written))
    journal = Journal("LOCAL", tmp_path)
    journal.begin("tok-old", "Create", "old")
    clock[0] += journal_module.KEEP_SECONDS + journal_module.PRUNE_EVERY_SECONDS
    journal.begin("tok-new", "Create", "new")
    assert journal.get("tok-old") is None and journal.get("tok-new") is not None
    assert not old_file.exists() and recent_file.exists()  # files of the earlier layout age out the same way
    journal.close()


def test_a_line_a_crash_cut_short_is_skipped_and_spoils_no_other_entry(tmp_path: Path) -> None:
    first = Journal("LOCAL", tmp_path)
    first.finish("tok-1", "Create", "a", {"n": 1})
    with open(tmp_path / journal_module.LOG, "ab") as log:  # a process killed in the middle of its write
        log.write(b"\n" + journal_module._key("tok-2").encode() + b' 1.5 {"state": "pen')
    first.finish("tok-3", "Create", "c", {"n": 3})  # appended by a process that knew nothing of it
    reader = Journal("LOCAL", tmp_path)
    assert reader.get("tok-1")["result"] == {"n": 1}  # type: ignore[index]
    assert reader.get("tok-2") is None
    assert reader.get("tok-3")["result"] == {"n": 3}  # type: ignore[index]
    first.close()
    reader.close()


def test_entries_of_the_sqlite_layout_are_read_then_folded_into_the_log(tmp_path: Path) -> None:
    # A command that was running when svc was upgraded resumes with a token the SQLite layout journaled.
    database = sqlite3.connect(tmp_path / journal_module.DATABASE)
    database.execute("CREATE TABLE entries (key TEXT PRIMARY KEY, at REAL NOT NULL, entry TEXT NOT NULL)")
    entry = {"state": "pending", "op": "Delete", "nativeId": "old", "at": 2e9}
    database.execute("INSERT INTO entries VALUES (?, ?, ?)", (journal_module._key("tok-db"), 2e9, json.dumps(entry)))
    database.commit()
    database.close()
    journal = Journal("LOCAL", tmp_path)
    assert journal.get("tok-db") == entry
    journal.close()
    assert not (tmp_path / journal_module.DATABASE).exists()  # the first one alone with the log folded it in
    assert Journal("LOCAL", tmp_path).get("tok-db") == entry


def test_a_process_alone_with_the_log_compacts_it_and_not_while_another_has_it_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_000_000_000.0]
    monkeypatch.setattr(journal_module.time, "time", lambda: clock[0])
    first = Journal("LOCAL", tmp_path)
    first.begin("tok-old", "Create", "old")
    clock[0] += journal_module.KEEP_SECONDS + 1
    second = Journal("LOCAL", tmp_path)
    assert second.get("tok-old") is not None  # the first still has the log open: nothing is rewritten under it
    first.close()
    second.close()
    third = Journal("LOCAL", tmp_path)
    assert third.get("tok-old") is None
    assert journal_module._key("tok-old").encode() not in (tmp_path / journal_module.LOG).read_bytes()
    third.close()


_WRITER = """
import sys
from pathlib import Path
from svc.plugins.journal import Journal
directory, name = Path(sys.argv[1]), sys.argv[2]
for n in range(150):
    journal = Journal("LOCAL", directory)  # opened and closed again and again: each may find itself alone, compact
    journal.begin(f"{name}-{n}", "Create", str(n))
    journal.finish(f"{name}-{n}", "Create", str(n), {"n": n})
    journal.close()
"""


def test_processes_that_journal_and_compact_at_once_lose_no_entry(tmp_path: Path) -> None:
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), f"p{p}"]) for p in range(4)]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0, 0]
    journal = Journal("LOCAL", tmp_path)
    missing = [f"p{p}-{n}" for p in range(4) for n in range(150)
               if (journal.get(f"p{p}-{n}") or {}).get("result") != {"n": n}]
    assert missing == []
    journal.close()
