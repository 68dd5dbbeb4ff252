"""What evaluating a forma costs, in the shapes that show it: each resource class's descriptor is rendered and
parsed once, however many resources the class has, and derived once for a class of svc's packages, then kept;
the CLI evaluates a forma once, flags and all."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from svc.cli.main import main
from svc.forma import evaluate_forma
from svc.forma.descriptor_cache import CACHED_CLASSES, DescriptorCache
from svc.forma.errors import FormaError
from svc.forma.evaluate import evaluate_document
from svc.pkl import Conversation, PklServer, slices
from svc.pkl.projects import environment_for

FORMA = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"

@svc.ResourceHint { type = "TEST::Box::Note"; identifier = "$.text" }
local open class Note extends svc.Resource {
  @svc.FieldHint {} text: String
}

/// A note with one more tracked field: the same resource type (its hint is inherited), another descriptor.
local class StampedNote extends Note {
  @svc.FieldHint { createOnly = true } stamp: String?
}

forma {
  new svc.Stack { label = "site" }
  new svc.Target { label = "home"; config = new lcl.Config { root = "/tmp/svc-forma-evaluation" } }
  new fs.Directory { label = "d"; path = "d" }
  for (n in IntSeq(1, 5)) {
    new fs.File { label = "f\\(n)"; path = "d/f\\(n).txt"; content = "\\(n)" }
  }
  new Note { label = "plain"; text = "a note" }
  new StampedNote { label = "stamped"; text = "a stamped note"; stamp = "2024" }
}
"""


def test_each_resource_class_has_one_descriptor_in_the_pkl_output(write_pkl) -> None:
    document = evaluate_document(write_pkl("main.pkl", FORMA), {"$cmd": "eval", "$mode": "reconcile"})
    schemas, resources = document["Schemas"], document["Resources"]
    # Directory, File, Note, StampedNote: four classes, eight resources.
    assert len(schemas) == 4 and len(resources) == 8
    assert not any("Schema" in r for r in resources)
    by_label = {r["Label"]: schemas[r["SchemaIndex"]] for r in resources}
    assert by_label["d"]["Fields"] == ["Path", "Mode"]
    assert all(by_label[f"f{n}"]["Fields"] == ["Path", "Content", "Mode"] for n in range(1, 6))
    # Keyed by class, not by type: the subclass has the note's type but a field of its own.
    assert by_label["plain"]["Fields"] == ["text"]
    assert by_label["stamped"]["Fields"] == ["text", "stamp"]
    assert by_label["stamped"]["Hints"]["stamp"]["CreateOnly"] is True


def test_the_resources_of_a_class_share_one_validated_descriptor(write_pkl) -> None:
    forma = evaluate_forma(write_pkl("main.pkl", FORMA))
    resources = {r.label: r for r in forma.resources}
    files = [resources[f"f{n}"] for n in range(1, 6)]
    assert all(f.schema_ is files[0].schema_ for f in files)
    assert resources["stamped"].type == resources["plain"].type
    assert resources["stamped"].schema_ != resources["plain"].schema_
    # What the agent receives is unchanged: every resource carries its descriptor in full.
    rendered = {r["Label"]: r for r in forma.to_json()["Resources"]}
    assert rendered["f3"]["Schema"] == files[0].schema_.to_json()
    assert rendered["stamped"]["Schema"]["Fields"] == ["text", "stamp"]
    assert rendered["d"]["Schema"]["Identifier"] == "$.Path"


# trace() logs each time Pkl evaluates it (a Log message of the pkl server, logged by svc.pkl), and the
# properties are read by every evaluation of the forma: the number of traces is the number of evaluations.
COUNTED = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"

properties {
  greeting = new svc.Prop { flag = "greeting"; default = trace("counted: Hello") }
  ratio = new svc.Prop { flag = "ratio"; default = 0.5 }
  owner = new svc.Prop { flag = "owner" }
}

forma {
  new svc.Stack { label = "site" }
  new svc.Target { label = "home"; config = new lcl.Config { root = "/tmp/svc-forma-evaluation" } }
  new fs.File { label = "index"; path = "index.html"
    content = "\\(properties.greeting.value) \\(properties.ratio.value) \\(properties.owner.value)" }
}
"""


def svc_eval(path: Path, *flags: str, caplog: pytest.LogCaptureFixture,
             capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any] | str, int]:
    """``svc eval`` in this process: its exit code, the forma JSON (or the error), how many evaluations it took."""
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="svc.pkl"):
        code = main(["eval", str(path), "--output-consumer", "machine", *flags])
    out, err = capsys.readouterr()
    evaluations = sum("counted: Hello" in record.getMessage() for record in caplog.records)
    return code, json.loads(out) if code == 0 else err, evaluations


def content(forma: dict[str, Any]) -> str:
    [index] = forma["Resources"]
    return index["Properties"]["Content"]


def test_the_cli_evaluates_a_forma_once(write_pkl, caplog, capsys) -> None:
    path = write_pkl("main.pkl", COUNTED)
    code, forma, evaluations = svc_eval(path, "--owner", "me", caplog=caplog, capsys=capsys)
    assert (code, evaluations) == (0, 1)
    assert content(forma) == "counted: Hello 0.5 me"
    assert forma["Properties"]["greeting"] == {"Flag": "greeting", "Type": "String", "Default": "counted: Hello",
                                               "Value": "counted: Hello"}
    code, forma, evaluations = svc_eval(path, "--greeting=Hi", "--owner", "you", "--ratio", "1.5",
                                        caplog=caplog, capsys=capsys)
    assert (code, evaluations, content(forma)) == (0, 1, "Hi 1.5 you")


def test_flags_the_parser_reads_otherwise_are_evaluated_again_with_its_values(write_pkl, caplog, capsys) -> None:
    # `--ratio 2` is the Float 2.0 to the parser: the evaluation with "2" is not the one the flags ask for.
    code, forma, evaluations = svc_eval(write_pkl("main.pkl", COUNTED), "--owner", "me", "--ratio", "2",
                                        caplog=caplog, capsys=capsys)
    assert (code, evaluations, content(forma)) == (0, 2, "counted: Hello 2.0 me")


def test_a_missing_required_flag_is_the_error_whatever_the_forma_makes_of_it(write_pkl, caplog, capsys) -> None:
    code, error, _ = svc_eval(write_pkl("main.pkl", COUNTED), caplog=caplog, capsys=capsys)
    assert (code, error) == (1, "Error: Missing option '--owner'.\n")
    failing = COUNTED.replace("\\(properties.owner.value)", "\\(properties.owner.value.length)")
    assert failing != COUNTED
    code, error, _ = svc_eval(write_pkl("main.pkl", failing), caplog=caplog, capsys=capsys)
    assert (code, error) == (1, "Error: Missing option '--owner'.\n")


REFERENCES = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"

local dir = new fs.Directory { label = "d"; path = "d" }
/// Not in the forma, so no stack of its own to complete its references with.
local elsewhere = new fs.Directory { label = "elsewhere"; path = "e" }

forma {
  new svc.Stack { label = "site" }
  new svc.Target { label = "home"; config = new lcl.Config { root = "/tmp/svc-forma-evaluation" } }
  dir
  new fs.File { label = "in"; path = "d/in.txt"; content = dir.res.path }
  new fs.File { label = "out"; path = "out.txt"; content = elsewhere.res.path }
  new fs.File { label = "bare"; path = "bare.txt"; content = new svc.Resolvable { label = "d"; property = "Path" } }
  new fs.File { label = "span"; path = "span.txt"; content = "at \\(new svc.Resolvable { label = "d" })" }
}
"""


def test_a_reference_renders_the_members_it_has_and_its_stack_from_the_forma(write_pkl) -> None:
    """A reference's envelope is a map built in one call (an object converted to a map took a twentieth of
    evaluating a forma of 100,000 chained resources): a member it does not have is left out, not rendered null,
    and the stack of a resource the forma declares is filled in."""
    document = evaluate_document(write_pkl("refs.pkl", REFERENCES), {"$cmd": "eval", "$mode": "reconcile"})
    content = {r["Label"]: r["Properties"]["Content"] for r in document["Resources"] if r["Label"] != "d"}
    envelope = {"$res": True, "$label": "d", "$type": "LOCAL::FS::Directory", "$stack": "site",
                "$property": "Path", "$visibility": "Clear"}
    assert content["in"] == envelope
    assert content["out"] == {key: value for key, value in envelope.items() if key != "$stack"} | {"$label": "elsewhere"}
    assert content["bare"] == {"$res": True, "$label": "d", "$property": "Path", "$visibility": "Clear"}
    prefix, span = content["span"].split("\x1e")
    assert prefix == "at " and json.loads(base64.b64decode(span.rstrip("\x1f"))) == {
        "$res": True, "$label": "d", "$visibility": "Clear"}


def test_a_package_class_is_derived_once_then_kept_with_the_same_forma_json(write_pkl, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SVC_SCHEMA_CACHE", str(tmp_path / "cache"))
    path = write_pkl("main.pkl", FORMA)
    first = evaluate_forma(path).to_json()
    kept = DescriptorCache.open(environment_for(path).project)
    # LOCAL's File and Directory are kept; the forma's own Note and StampedNote never are.
    assert sorted(key.rpartition("#")[2] for key in kept.offered()) == ["Directory", "File"]
    document = evaluate_document(path, {CACHED_CLASSES: "\n".join(kept.offered())})
    derived = {key.rpartition("#")[2]: schema is not None for key, schema in zip(document["SchemaKeys"],
                                                                                   document["Schemas"], strict=True)}
    assert derived == {"Directory": False, "File": False, "Note": True, "StampedNote": True}
    assert evaluate_forma(path).to_json() == first


LARGE = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl

@svc.ResourceHint { type = "TEST::Box::Note"; identifier = "$.text" }
local class Note extends svc.Resource {
  @svc.FieldHint {} text: String
  @svc.FieldHint {} after: (String | svc.Resolvable)?
}

local function note(n: Int): Note = new Note {
  label = "n\\(n)"
  // A span the forma's rendering cannot read, when asked for: the error then comes while rendering that note.
  text = if (n == BROKEN) "\\u{1E}QUJD\\u{1F}" else "note \\(n)"
  after = if (n > 0) note(n - 1).res.text else null
}

forma {
  new svc.Stack { label = "site" }
  new svc.Target { label = "home"; config = new lcl.Config { root = "/tmp/svc-forma-evaluation" } }
  for (n in IntSeq(0, 4499)) { note(n) }
}
"""


def _asked(monkeypatch: pytest.MonkeyPatch, *, whole: bool = False) -> list[str]:
    """The expressions evaluations ask Pkl from now on (``whole``: a forma's text in one answer, however large)."""
    asked: list[str] = []
    converse = PklServer.converse

    def recorded(self: PklServer, request: Any, conversation: Any) -> Any:
        def recording() -> Conversation[object]:
            steps, value = conversation(), None
            while True:
                try:
                    expression = steps.send(value)
                except StopIteration as stop:
                    return stop.value
                asked.append(expression)
                value = yield expression

        return converse(self, request, recording)

    monkeypatch.setattr(PklServer, "converse", recorded)
    if whole:
        monkeypatch.setattr(slices, "SLICE", 10**9)
    return asked


def test_a_large_forma_comes_from_pkl_in_slices_as_it_would_in_one_piece(write_pkl, monkeypatch) -> None:
    path = write_pkl("main.pkl", LARGE.replace("BROKEN", "-1"))
    properties = {"$cmd": "eval", "$mode": "reconcile"}
    asked = _asked(monkeypatch)
    sliced = evaluate_document(path, properties)
    # The count, the forma without its resources, then 2,000 resources at a time.
    assert len(asked) == 5 and asked[2].endswith("sublist(0, 2000))") and asked[4].endswith("sublist(4000, 4500))")
    monkeypatch.undo()
    asked = _asked(monkeypatch, whole=True)
    assert evaluate_document(path, properties) == sliced and len(asked) == 1
    assert [r["Label"] for r in sliced["Resources"]] == [f"n{n}" for n in range(4500)]
    assert sliced["Resources"][4499]["Properties"]["after"]["$label"] == "n4498"


def test_an_error_while_a_slice_renders_reads_as_it_would_in_one_piece(write_pkl, monkeypatch) -> None:
    path = write_pkl("main.pkl", LARGE.replace("BROKEN", "4321"))
    messages = []
    for whole in (False, True):
        asked = _asked(monkeypatch, whole=whole)
        with pytest.raises(FormaError) as raised:
            evaluate_document(path, {"$cmd": "eval", "$mode": "reconcile"})
        messages.append(str(raised.value))
        assert len(asked) == (1 if whole else 5)  # the third slice failed
        monkeypatch.undo()
    assert messages[0] == messages[1] and "repl:text" not in messages[0]
