"""A forma evaluated in a Pkl evaluator kept from the evaluation before (``svc.pkl.kept_evaluators``): each edit of
the forma is evaluated, an edit of any other module it is made of gets a new evaluator, and errors name the forma's
file as ever (real Pkl, the real packages)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from svc.forma import FormaError, evaluate_forma
from svc.forma.evaluation_cache import EvaluationCache
from svc.pkl.projects import environment_for
from svc.pkl.server import PklServer

FORMA = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"
import "names.pkl"

forma {
  new svc.Stack { label = "site" }
  new svc.Target { label = "home"; config = new lcl.Config { root = "/tmp/svc-kept-evaluators" } }
  new fs.File { label = "index"; path = names.index; content = "CONTENT" }
}
"""


@pytest.fixture
def created(home: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The evaluators Pkl creates from here on (the cache of evaluations in the isolated ``home``)."""
    found: list[int] = []
    create = PklServer._create_evaluator

    def counted(server: PklServer, *args: Any) -> int:
        found.append(create(server, *args))
        return found[-1]

    monkeypatch.setattr(PklServer, "_create_evaluator", counted)
    return found


def rendered(path: Path) -> tuple[str, str]:
    [index] = evaluate_forma(path).resources
    return index.properties["Path"], index.properties["Content"]


def test_each_edit_of_the_forma_is_evaluated_in_the_evaluator_of_the_one_before(write_pkl, created: list[int]) -> None:
    write_pkl("names.pkl", 'index = "index.html"\n')
    forma = write_pkl("main.pkl", FORMA.replace("CONTENT", "warm"))
    rendered(forma)
    forma.write_text(FORMA.replace("CONTENT", "warmer"))  # the first kept the descriptors: other properties
    rendered(forma)
    before = len(created)
    for content in ("one", "two", "three"):
        forma.write_text(FORMA.replace("CONTENT", content))
        assert rendered(forma) == ("index.html", content)
    assert len(created) == before


def test_an_edit_of_a_module_the_forma_imports_gets_a_new_evaluator(write_pkl, created: list[int]) -> None:
    names = write_pkl("names.pkl", 'index = "index.html"\n')
    forma = write_pkl("main.pkl", FORMA.replace("CONTENT", "a"))
    rendered(forma)
    forma.write_text(FORMA.replace("CONTENT", "b"))
    rendered(forma)
    before = len(created)
    names.write_text('index = "other.html"\n')
    forma.write_text(FORMA.replace("CONTENT", "c"))
    assert rendered(forma) == ("other.html", "c")
    assert len(created) == before + 1


def test_an_error_names_the_formas_file_and_line(write_pkl, created: list[int]) -> None:
    write_pkl("names.pkl", 'index = "index.html"\n')
    forma = write_pkl("main.pkl", FORMA.replace("CONTENT", "a"))
    rendered(forma)
    forma.write_text(FORMA.replace("CONTENT", "b"))
    rendered(forma)
    before = len(created)
    forma.write_text(FORMA.replace('"CONTENT"', "42"))
    with pytest.raises(FormaError) as raised:
        rendered(forma)
    assert len(created) == before + 1  # the kept evaluator's error is the last word of a new one
    assert f"{forma}:10" in str(raised.value) and "svc-evaluation" not in str(raised.value)


def test_a_forma_another_of_its_modules_imports_is_never_evaluated_in_a_kept_evaluator(write_pkl, home: Path) -> None:
    """Pkl would load the forma from its file for the module that imports it, and keep that copy for good."""
    names = write_pkl("names.pkl", 'index = "index.html"\n')
    forma = write_pkl("main.pkl", FORMA)
    properties = {"$cmd": "apply", "$mode": "reconcile"}
    project = environment_for(forma).project
    sources = EvaluationCache(forma, properties).sources(project)
    assert sources is not None and sources.evaluator_key is not None and sources.forma_text == forma.read_text()
    names.write_text('import "main.pkl"\nindex = "index.html"\n')
    sources = EvaluationCache(forma, properties).sources(project)
    assert sources is not None and sources.evaluator_key is None
