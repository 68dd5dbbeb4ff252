"""Ids are KSUIDs exactly as the ``ksuid`` package encodes them: time-ordered, 27 base62 characters."""

from __future__ import annotations

import time

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

