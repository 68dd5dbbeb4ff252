"""Pkl evaluators kept from one evaluation to the next, so that Pkl's module cache serves what did not change.

A new evaluator parses and checks every module an evaluation imports: for a small forma, svc's schema modules and
the plugins' are most of Pkl's work (a forma of 10 resources: ~30 ms in a warm ``pkl server``, ~8 ms in an
evaluator that has loaded them before). An evaluator caches each module by its URI for its whole life, so it may
only be used again for an evaluation whose modules are all as they were when it loaded them, apart from the
evaluated module itself, which is given as text under a URI never used before (``evaluated_uri``): the caller says
so with a key (``EvaluationRequest.reuse_key``) naming everything else the result depends on.

Each evaluation leaves its module in the evaluator's cache, so an evaluator is retired after ``MAX_USES``
evaluations or one whose answer was larger than ``MAX_KEPT_ANSWER`` (a large forma's objects stay with its
module; its evaluation is long enough that the modules' loading matters little); at most ``MAX_KEPT`` are kept,
the least recently used retired first. One whose evaluation failed is retired too, and the evaluation run again in
a new one, whose answer stands: a kept evaluator is never why a forma fails. The table travels with a lent server
(``svc.pkl.server.Lendable``) from one borrower to the next.
"""

from __future__ import annotations

import marshal
from itertools import islice

MAX_KEPT = 8
MAX_USES = 64
MAX_KEPT_ANSWER = 1024 * 1024  # bytes of an evaluation's answer, as Pkl sent it
_URI_MARK = "?svc-evaluation="


def evaluated_uri(module_uri: str, request_id: int) -> str:
    """The URI a kept evaluator evaluates ``module_uri`` under: one its cache has never seen (request ids are
    never used twice on one server), whose relative imports resolve as the module's own."""
    return f"{module_uri}{_URI_MARK}{request_id}"


def plain_uri(text: str, evaluated: str, module_uri: str) -> str:
    """``text`` (an error message) with the URI the module was evaluated under written as its own."""
    return text.replace(evaluated, module_uri)


class KeptEvaluators:
    """Evaluator ids of one ``pkl server`` process by key, least recently used first, with how often each has
    been used."""

    def __init__(self, kept: dict[str, tuple[int, int]] | None = None) -> None:
        self._kept: dict[str, tuple[int, int]] = dict(kept or {})

    def take(self, key: str) -> tuple[int, int] | None:
        """The evaluator kept for ``key`` and its uses so far, out of the table while it is used."""
        return self._kept.pop(key, None)

    def keep(self, key: str, evaluator_id: int, uses: int) -> list[int]:
        """Keeps the evaluator for ``key`` after its ``uses``-th use; the ids of those to close now (itself when
        it is spent, the least recently used when the table is full)."""
        if uses >= MAX_USES:
            return [evaluator_id]
        self._kept[key] = (evaluator_id, uses)
        excess = len(self._kept) - MAX_KEPT
        retired = list(islice(self._kept, max(excess, 0)))
        return [self._kept.pop(name)[0] for name in retired]

    def ids(self) -> list[int]:
        """The kept evaluators' ids, least recently used first."""
        return [evaluator_id for evaluator_id, _ in self._kept.values()]

    def to_bytes(self) -> bytes:
        return marshal.dumps(self._kept)

    @classmethod
    def from_bytes(cls, data: bytes) -> KeptEvaluators:
        """The table ``to_bytes`` wrote; raises ValueError for anything else."""
        try:
            kept = marshal.loads(data)
        except (EOFError, TypeError) as exc:
            raise ValueError("not a table of kept evaluators") from exc
        if not (isinstance(kept, dict) and all(
                isinstance(key, str) and isinstance(value, tuple) and len(value) == 2
                and all(isinstance(number, int) for number in value) for key, value in kept.items())):
            raise ValueError("not a table of kept evaluators")
        return cls(kept)
