"""The agent limits glibc's malloc arenas (``svc.agent.allocator``) unless ``MALLOC_ARENA_MAX`` is set."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from svc.agent import allocator


class _Libc:
    def __init__(self, calls: list[tuple[int, int]]) -> None:
        self.calls = calls

    @property
    def mallopt(self) -> Any:
        calls = self.calls

        class _Function:
            argtypes: tuple[Any, ...] = ()

            def __call__(self, option: int, value: int) -> int:
                calls.append((option, value))
                return 1

        return _Function()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's setting")
@pytest.mark.parametrize(("environment", "expected"), [({}, [(-8, allocator.ARENAS)]), ({"MALLOC_ARENA_MAX": "4"}, [])])
def test_the_arenas_are_limited_unless_the_environment_says(monkeypatch: pytest.MonkeyPatch,
                                                            environment: dict[str, str],
                                                            expected: list[tuple[int, int]]) -> None:
    calls: list[tuple[int, int]] = []
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda _name: _Libc(calls))
    allocator.limit_arenas()
    assert calls == expected


def test_a_c_library_without_mallopt_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda _name: object())
    allocator.limit_arenas()  # no AttributeError
