"""The table of Pkl evaluators kept between evaluations (``svc.pkl.kept_evaluators``): which one serves a key, when
one is retired, and the table as it travels from one borrower of a lent Pkl server to the next."""

from __future__ import annotations

import marshal

import pytest

from svc.pkl.kept_evaluators import MAX_KEPT, MAX_USES, KeptEvaluators, evaluated_uri, plain_uri


def test_an_evaluator_is_taken_out_while_used_and_kept_again_after() -> None:
    table = KeptEvaluators()
    assert table.take("a") is None
    assert table.keep("a", 7, 1) == []
    assert table.take("a") == (7, 1)
    assert table.take("a") is None  # in use: no other evaluation gets it meanwhile
    assert table.keep("a", 7, 2) == []
    assert table.ids() == [7]


def test_the_least_recently_used_is_retired_when_the_table_is_full() -> None:
    table = KeptEvaluators()
    for number in range(MAX_KEPT):
        assert table.keep(f"k{number}", number, 1) == []
    table.keep("k0", *table.take("k0") or (0, 1))  # used again: now the most recent
    assert table.keep("new", 100, 1) == [1]
    assert table.ids() == [*range(2, MAX_KEPT), 0, 100]


def test_an_evaluator_used_its_share_of_times_is_retired() -> None:
    table = KeptEvaluators()
    assert table.keep("a", 7, MAX_USES - 1) == []
    evaluator_id, uses = table.take("a") or (0, 0)
    assert table.keep("a", evaluator_id, uses + 1) == [7]
    assert table.ids() == []


def test_the_table_travels_as_bytes_in_its_order() -> None:
    table = KeptEvaluators()
    for key, evaluator_id in (("b", 2), ("a", 1), ("c", 3)):
        table.keep(key, evaluator_id, evaluator_id)
    again = KeptEvaluators.from_bytes(table.to_bytes())
    assert again.ids() == [2, 1, 3] and again.take("a") == (1, 1)


@pytest.mark.parametrize("data", [b"", b"garbage", marshal.dumps([1, 2]), marshal.dumps({"a": 1}),
                                  marshal.dumps({"a": (1, "2")}), marshal.dumps({1: (1, 2)})])
def test_anything_else_is_no_table(data: bytes) -> None:
    with pytest.raises(ValueError):
        KeptEvaluators.from_bytes(data)


def test_the_module_is_evaluated_under_a_new_uri_which_errors_do_not_show() -> None:
    uri = "file:///work/main.pkl"
    evaluated = evaluated_uri(uri, 41)
    assert evaluated != evaluated_uri(uri, 42) and evaluated.startswith(uri)
    assert plain_uri(f"at main#x ({evaluated}, line 3)", evaluated, uri) == f"at main#x ({uri}, line 3)"
