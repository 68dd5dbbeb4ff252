"""Ids are KSUIDs exactly as the ``ksuid`` package encodes them: time-ordered, 27 base62 characters."""

from __future__ import annotations

import os
import time

import pytest
from ksuid import Ksuid

from svc.ids import new_id


def test_new_ids_are_ksuids_of_now() -> None:
    before = int(time.time())
    ids = [new_id() for _ in range(500)]
    after = int(time.time())
    assert len(set(ids)) == len(ids)
    for text in ids:
        assert len(text) == 27 and text.isalnum()
        parsed = Ksuid.from_base62(text)
        assert str(parsed) == text  # the package encodes the same bytes to the same text
        assert before <= int(parsed.datetime.timestamp()) <= after



@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_mint_its_parents_next_id() -> None:
    new_id()  # the parent holds a batch of random bytes now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, new_id().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.waitpid(pid, 0)
    assert child != new_id()
    assert len(child) == 27
