"""What evaluating a forma costs, in the shapes that show it: each resource class's descriptor is rendered and
parsed once, however many resources the class has."""

from __future__ import annotations

from svc.forma import evaluate_forma
from svc.forma.evaluate import evaluate_document

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
