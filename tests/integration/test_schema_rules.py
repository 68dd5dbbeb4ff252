"""Every rule of the svc schema (seed 001), through real Pkl: the derived descriptor, and the
failing inputs with their exact messages. Each forma declares its own resource classes."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc.forma import FormaError, evaluate_forma, pkl_text
from svc.model import values

HEAD = """
extends "@svc/forma.pkl"
import "@svc/svc.pkl"

"""

PLACEMENT = """
  new svc.Stack { label = "s" }
  new svc.Target { label = "t"; namespace = "TEST" }
"""


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # errors name files relative to the working directory


def forma(write_pkl, body: str, resources: str, name: str = "main.pkl") -> Path:
    return write_pkl(name, HEAD + body + "\nforma {\n" + PLACEMENT + resources + "\n}\n")


def line_of(path: Path, text: str) -> int:
    """The line of ``text`` in the file: where an error about that resource must point."""
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def schema_of(path: Path, index: int = 0):
    return evaluate_forma(path).resources[index].schema_


def error_of(path: Path) -> str:
    with pytest.raises(FormaError) as caught:
        evaluate_forma(path)
    return str(caught.value)


THING = """
@svc.ResourceHint { type = "TEST::Box::Thing"; identifier = "$.Id" }
class Thing extends svc.Resource {
  @svc.FieldHint {} name: String
  @svc.FieldHint {} size: Int?
  @svc.FieldHint { required = true } owner: String?
  @svc.FieldHint {} count: Int = 1
  untracked: String?
}
"""


def test_required_is_inferred_from_non_nullable_types(write_pkl) -> None:
    path = forma(write_pkl, THING, 'new Thing { label = "a"; name = "n"; owner = "o" }')
    hints = schema_of(path).hints
    assert hints["name"].required is True  # non-nullable, no required = true
    assert hints["size"].required is False  # nullable
    assert hints["owner"].required is True  # nullable but required = true
    assert hints["count"].required is True  # non-nullable with a default


def test_a_missing_required_field_names_resource_field_and_line(write_pkl) -> None:
    path = forma(write_pkl, THING, 'new Thing { label = "a"; owner = "o" }')
    assert error_of(path) == (f'main.pkl:{line_of(path, "new Thing")}: '
                              'resource "a" (TEST::Box::Thing): required field `name` is not set')


def test_required_true_on_a_nullable_field_rejects_null(write_pkl) -> None:
    path = forma(write_pkl, THING, 'new Thing { label = "a"; name = "n" }')
    assert error_of(path) == (f'main.pkl:{line_of(path, "new Thing")}: '
                              'resource "a" (TEST::Box::Thing): required field `owner` is not set')


def test_only_annotated_properties_are_tracked(write_pkl) -> None:
    path = forma(write_pkl, THING, 'new Thing { label = "a"; name = "n"; owner = "o"; untracked = "u" }')
    resource = evaluate_forma(path).resources[0]
    assert resource.schema_.fields == ("name", "size", "owner", "count")
    assert "untracked" not in resource.schema_.hints
    assert resource.properties == {"name": "n", "owner": "o", "count": 1}


SECRETS = """
typealias Secret = String | svc.SecretValue
@svc.ResourceHint { type = "TEST::Box::Vault" identifier = "$.Id" }
class Vault extends svc.Resource {
  @svc.FieldHint {} plain: String?
  @svc.FieldHint {} secret: String | svc.SecretValue
  @svc.FieldHint {} nullable: (String | svc.SecretValue)?
  @svc.FieldHint {} reordered: (svc.SecretValue | Int | String)?
  @svc.FieldHint {} aliased: Secret?
  @svc.FieldHint {} value: (String | svc.Value)?
}
"""


def test_opaque_is_derived_from_secret_value_types(write_pkl) -> None:
    path = forma(write_pkl, SECRETS.replace('"TEST::Box::Vault" identifier', '"TEST::Box::Vault"; identifier'),
                 'new Vault { label = "v"; secret = "s" }')
    opaque = {key: hint.opaque for key, hint in schema_of(path).hints.items()}
    assert opaque == {"plain": False, "secret": True, "nullable": True, "reordered": True, "aliased": True,
                      "value": False}


DEEP_SECRETS = """
typealias Secret = String | svc.SecretValue
class Login extends svc.SubResource { user: String; password: Secret?; @svc.FieldHint { outputField = "k" } key: Secret? }
@svc.SubResourceHint { outputKeyTransformation = (n) -> n.capitalize() }
class Db extends svc.SubResource { host: String; password: String | svc.SecretValue; login: Login? }
class Folder extends svc.SubResource { name: String; token: (svc.SecretValue | String)?; children: Listing<Folder>?
  links: Mapping<String, Folder>? }
class Plain extends svc.SubResource { name: String; children: Listing<Plain>? }
@svc.ResourceHint { type = "TEST::Box::Deep"; identifier = "$.Id" }
class Deep extends svc.Resource {
  @svc.FieldHint {} top: Secret?
  @svc.FieldHint {} db: Db?
  @svc.FieldHint {} logins: Listing<Login>?
  @svc.FieldHint {} byName: Mapping<String, Login>?
  @svc.FieldHint {} nested: Mapping<String, Listing<Login>>?
  @svc.FieldHint {} env: Mapping<String, Secret>?
  @svc.FieldHint {} tokens: Listing<String | svc.SecretValue>?
  @svc.FieldHint {} root: Folder?
  @svc.FieldHint {} tree: Plain?
  @svc.FieldHint {} names: Listing<String>?
}
"""


def test_opaque_paths_reach_secrets_at_any_depth(write_pkl) -> None:
    path = forma(write_pkl, DEEP_SECRETS, 'new Deep { label = "d" }')
    schema = schema_of(path)
    assert sorted(schema.opaque_paths) == sorted([
        "top", "db.Password", "db.Login.password", "db.Login.k", "logins.password", "logins.k",
        "byName.*.password", "byName.*.k", "nested.*.password", "nested.*.k", "env.*", "tokens",
        "root.token", "root.children=root", "root.links.*=root",  # a self-referencing sub-resource
    ])  # and none for ``tree``: its cycle holds no secret
    opaque = sorted(key for key, hint in schema.hints.items() if hint.opaque)
    assert opaque == sorted(["top", "db.Password", "db.Login.password", "db.Login.k", "logins.password", "logins.k",
                             "byName.password", "byName.k", "nested.password", "nested.k", "env", "tokens",
                             "root.token"])


def test_a_secret_value_says_opaque_unless_its_field_is_typed_secret(write_pkl) -> None:
    # In a field typed secret a SecretValue renders its own visibility ("Clear" unless marked), as the original
    # product does; anywhere else "Opaque", so that it stays secret. At the top, in a sub-resource, in a
    # listing of sub-resources and in a mapping.
    body = DEEP_SECRETS.replace("@svc.FieldHint {} names: Listing<String>?",
                                "@svc.FieldHint {} names: Listing<String|svc.Value>?\n  @svc.FieldHint {} note: Any") \
        .replace("class Plain extends svc.SubResource { name: String;", "class Plain extends svc.SubResource { name: Any;")
    secret = 'new svc.SecretValue { value = "s" }'
    path = forma(write_pkl, body, f"""new Deep {{ label = "d"; top = {secret}; note = {secret}
    names {{ {secret} }}
    db {{ host = "h"; password = {secret}; login {{ user = "u"; password = {secret} }} }}
    tree {{ name = {secret} }}
    logins {{ new {{ user = "u"; password = {secret} }} }}
    env {{ ["k"] = {secret} }} }}""")
    props = evaluate_forma(path).resources[0].properties

    def visibility(value: dict) -> str:
        return value["$visibility"]

    assert visibility(props["top"]) == "Clear" and visibility(props["env"]["k"]) == "Clear"
    assert visibility(props["db"]["Password"]) == "Clear" and visibility(props["db"]["Login"]["password"]) == "Clear"
    assert visibility(props["logins"][0]["password"]) == "Clear"
    assert visibility(props["note"]) == "Opaque" and visibility(props["names"][0]) == "Opaque"
    assert visibility(props["tree"]["name"]) == "Opaque"


NESTED = """
@svc.SubResourceHint { outputKeyTransformation = (n) -> n.toUpperCase() }
class Inner extends svc.SubResource { @svc.FieldHint { createOnly = true } depth: Int; note: String? }
class Node extends svc.SubResource { name: String; children: Listing<Node>?; inner: Inner? }
@svc.ResourceHint { type = "TEST::Box::Tree"; identifier = "$.Id" }
class Tree extends svc.Resource {
  @svc.FieldHint {} root: Node?
  @svc.FieldHint {} items: Listing<Inner>?
}
"""


def test_sub_resource_hints_have_dotted_keys_through_listings_nesting_and_cycles(write_pkl) -> None:
    path = forma(write_pkl, NESTED, 'new Tree { label = "t"; root { name = "r"; inner { depth = 1 } } }')
    schema = schema_of(path)
    # As the original product lists them: the resource's own fields, then each sub-resource's (its own
    # fields, then its sub-resources'), under dotted keys; Fields are the keys of Hints.
    assert list(schema.hints) == [
        "root", "items", "root.name", "root.children", "root.inner", "root.inner.DEPTH", "root.inner.NOTE",
        "items.DEPTH", "items.NOTE",
    ]
    assert schema.fields == tuple(schema.hints)
    assert schema.hints["items.DEPTH"].create_only and schema.hints["items.DEPTH"].required
    assert not schema.hints["root.inner.NOTE"].required
    props = evaluate_forma(path).resources[0].properties
    assert props == {"root": {"name": "r", "inner": {"DEPTH": 1}}}


SUBS = """
class Port extends svc.SubResource { port: Int; note: String?; @svc.FieldHint { required = true } proto: String? }
class Node extends svc.SubResource { name: String; children: Listing<Node>?; ports: Mapping<String, Port>? }
@svc.ResourceHint { type = "TEST::Box::Wall"; identifier = "$.Id" }
class Wall extends svc.Resource {
  @svc.FieldHint {} rules: Listing<Port>?
  @svc.FieldHint {} root: Node?
  @svc.FieldHint {} main: Port?
}
"""


@pytest.mark.parametrize(("resource", "path"), [
    # A sub-resource's non-nullable field, and its nullable field marked required.
    ('main { proto = "tcp" }', "main.port"),
    ('main { port = 1 }', "main.proto"),
    # In a Listing<SubResource>: the element's index, as Pkl subscripts it.
    ('rules { new { port = 1; proto = "tcp" } new { proto = "udp" } }', "rules[1].port"),
    # Through nested and self-referencing sub-resources, and a Mapping of them.
    ('root { name = "r"; children { new { name = "a" } new { children { new { name = "c" } } } } }',
     "root.children[1].name"),
    ('root { name = "r"; children { new { name = "a"; ports { ["ssh"] { port = 22; proto = "tcp" } ["web"] { port = 80 } } } } }',
     'root.children[0].ports["web"].proto'),
])
def test_a_missing_required_field_in_a_sub_resource_names_its_path(write_pkl, resource: str, path: str) -> None:
    forma_path = forma(write_pkl, SUBS, f'new Wall {{\n    label = "w"\n    {resource}\n  }}')
    assert error_of(forma_path) == (f'main.pkl:{line_of(forma_path, "new Wall")}: '
                                    f'resource "w" (TEST::Box::Wall): required field `{path}` is not set')


def test_a_sub_resource_of_a_subclass_renders_and_checks_its_own_fields(write_pkl) -> None:
    # A property's declared sub-resource class is looked up once for all its values; a value of a subclass
    # still has its own fields, rendered and checked, beside values of the declared class.
    body = """
open class Base extends svc.SubResource { port: Int }
class Wide extends Base { wide: String; extra: String? }
@svc.ResourceHint { type = "TEST::Box::Rack"; identifier = "$.Id" }
class Rack extends svc.Resource {
  @svc.FieldHint {} items: Listing<Base>?
  @svc.FieldHint {} one: Base?
}
"""
    items = 'items { new Base { port = 1 } new Wide { port = 2; wide = "w"; extra = "e" } new Base { port = 3 } }'
    props = evaluate_forma(forma(write_pkl, body, f'new Rack {{ label = "r"; {items} }}')).resources[0].properties
    assert props == {"items": [{"port": 1}, {"port": 2, "wide": "w", "extra": "e"}, {"port": 3}]}
    missing = forma(write_pkl, body, 'new Rack { label = "r"; items { new Base { port = 1 } new Wide { port = 2 } } }')
    assert error_of(missing).endswith('resource "r" (TEST::Box::Rack): required field `items[1].wide` is not set')


def test_complete_sub_resources_pass_and_optional_ones_may_be_left_out(write_pkl) -> None:
    path = forma(write_pkl, SUBS, 'new Wall { label = "w"; rules { new { port = 1; proto = "tcp" } } }\n'
                                  '  new Wall { label = "empty" }')
    resources = evaluate_forma(path).resources
    assert resources[0].properties == {"rules": [{"port": 1, "proto": "tcp"}]}
    assert resources[1].properties == {}


DUPLICATES = """
@svc.ResourceHint { type = "TEST::Box::Dup"; identifier = "$.Id" }
class Dup extends svc.Resource { @svc.FieldHint {} size: Int? }
@svc.ResourceHint { type = "TEST::Box::Other"; identifier = "$.Id" }
class Other extends svc.Resource {}
"""


@pytest.mark.parametrize("copies", [
    # Equal in every member: still the second one is named.
    ['new Dup { label = "a" } // first', 'new Dup { label = "b" }', 'new Dup { label = "a" } // second',
     'new Dup { label = "a" } // third'],
    ['new Dup { label = "a"; size = 1 } // first', 'new Other { label = "a" }', 'new Dup { // second\n    label = "a"\n  }'],
])
def test_a_duplicate_label_is_reported_at_the_resource_that_repeats_it(write_pkl, copies: list[str]) -> None:
    path = forma(write_pkl, DUPLICATES, "\n  ".join(copies))
    assert error_of(path) == (f'main.pkl:{line_of(path, "// second")}: resource "a" '
                              '(TEST::Box::Dup): label "a" is already used by another resource of this type')


def test_the_earliest_repeat_is_reported_first(write_pkl) -> None:
    resources = ('new Dup { label = "b" }\n  new Dup { label = "a" }\n  new Dup { label = "a" } // repeat\n'
                 '  new Dup { label = "b" }')
    path = forma(write_pkl, DUPLICATES, resources)
    assert error_of(path) == (f'main.pkl:{line_of(path, "// repeat")}: resource "a" (TEST::Box::Dup): '
                              'label "a" is already used by another resource of this type')


@pytest.mark.parametrize(("element", "message"), [
    ('new svc.Stack { label = "s" }', 'stack "s" is already declared in this forma'),
    ('new svc.Target { label = "t"; namespace = "TEST" }', 'target "t" is already declared in this forma'),
])
def test_a_repeated_stack_or_target_is_reported_at_the_repeat(write_pkl, element: str, message: str) -> None:
    path = forma(write_pkl, DUPLICATES, f"{element} // repeat")
    assert error_of(path) == f'main.pkl:{line_of(path, "// repeat")}: {message}'


PARENTS = """
@svc.ResourceHint {
  type = "TEST::Box::Both"; identifier = "$.Id"; parent = "TEST::Box::Thing"
  parentRefs = new svc.ParentRef { parentProperty = "Id"; childProperty = "ThingId" }
  listParam = new svc.ListProperty { parentProperty = "Id"; listParameter = "ListedBy" }
}
class Both extends svc.Resource {}
@svc.ResourceHint {
  type = "TEST::Box::Legacy"; identifier = "$.Id"
  listParam = List(new svc.ListProperty { parentProperty = "Id"; listParameter = "ThingId" },
                   new svc.ListProperty { parentProperty = "Zone"; listParameter = "ZoneName" })
}
class Legacy extends svc.Resource {}
"""


def test_parent_refs_win_over_list_param_and_list_param_alone_is_mapped(write_pkl) -> None:
    path = forma(write_pkl, PARENTS, 'new Both { label = "b" }\n  new Legacy { label = "l" }')
    both, legacy = schema_of(path, 0), schema_of(path, 1)
    assert [m.to_json() for m in both.parent_mappings] == [{"parentProperty": "Id", "childProperty": "ThingId"}]
    assert both.parent == "TEST::Box::Thing"
    assert [m.to_json() for m in legacy.parent_mappings] == [
        {"parentProperty": "Id", "childProperty": "ThingId"},
        {"parentProperty": "Zone", "childProperty": "ZoneName"},
    ]
    assert legacy.parent == ""


@pytest.mark.parametrize("bad", ["Thing", "TEST::Thing", "TEST::Box::", "::Box::Thing", "TEST::Box::Thing::X"])
def test_the_type_must_be_namespace_service_resource(write_pkl, bad: str) -> None:
    body = f'@svc.ResourceHint {{ type = "{bad}"; identifier = "$.Id" }}\nclass Bad extends svc.Resource {{}}\n'
    path = forma(write_pkl, body, 'new Bad { label = "x" }')
    assert error_of(path) == f'main.pkl:{line_of(path, "new Bad")}: resource "x": type "{bad}" is not NAMESPACE::SERVICE::RESOURCE'


def test_format_accepts_only_empty_and_json(write_pkl) -> None:
    body = ('@svc.ResourceHint { type = "TEST::Box::Doc"; identifier = "$.Id" }\n'
            'class Doc extends svc.Resource {\n  @svc.FieldHint { format = "yaml" }\n  body: String?\n}\n')
    path = forma(write_pkl, body, 'new Doc { label = "d" }')
    message = error_of(path)
    assert message.startswith(f"main.pkl:{line_of(path, 'format = ')}: Expected value of type `\"\"|\"json\"`, but got `\"yaml\"`.")
    ok = body.replace('"yaml"', '"json"')
    assert schema_of(forma(write_pkl, ok, 'new Doc { label = "d"; body = "{}" }', "ok.pkl")).hints["body"].format == "json"


EDGES = """
@svc.ResourceHint { type = "TEST::Box::Edge"; identifier = "$.Id" }
class Edge extends svc.Resource {
  @svc.FieldHint { attachesTo = true } legacy: String?
  @svc.FieldHint { edgeKind = "attachesTo" } modern: String?
  @svc.FieldHint { edgeKind = "runtimeDependency" } runtime: String?
  @svc.FieldHint {} plain: String?
}
"""


def test_attaches_to_true_equals_edge_kind_attaches_to(write_pkl) -> None:
    hints = schema_of(forma(write_pkl, EDGES, 'new Edge { label = "e" }')).hints
    # Rendered as given, as the original product does (AttachesTo true only where it was set); both read
    # as the edge kind attachesTo.
    assert (hints["legacy"].edge_kind, hints["legacy"].attaches_to) == ("default", True)
    assert (hints["modern"].edge_kind, hints["modern"].attaches_to) == ("attachesTo", False)
    assert hints["legacy"].kind == hints["modern"].kind == "attachesTo"
    assert (hints["runtime"].kind, hints["runtime"].attaches_to) == ("runtimeDependency", False)
    assert (hints["plain"].edge_kind, hints["plain"].attaches_to) == ("default", False)


def test_attaches_to_conflicting_with_runtime_dependency_is_refused(write_pkl) -> None:
    body = EDGES.replace("{ attachesTo = true }", '{ attachesTo = true; edgeKind = "runtimeDependency" }')
    path = forma(write_pkl, body, 'new Edge { label = "e" }')
    message = error_of(path)
    assert message.startswith(f'main.pkl:{line_of(path, "new Edge")}: TEST::Box::Edge field `legacy`: attachesTo = true conflicts with '
                              'edgeKind = "runtimeDependency" (file://')


def test_entity_set_needs_an_index_field(write_pkl) -> None:
    body = ('@svc.ResourceHint { type = "TEST::Box::Tags"; identifier = "$.Id" }\n'
            'class Tags extends svc.Resource {\n  @svc.FieldHint { updateMethod = "EntitySet" }\n  tags: Listing<String>?\n}\n')
    path = forma(write_pkl, body, 'new Tags { label = "t" }')
    message = error_of(path)
    assert message.startswith(f'main.pkl:{line_of(path, "new Tags")}: TEST::Box::Tags field `tags`: updateMethod "EntitySet" needs indexField')


def test_output_key_transformation_and_output_shaping(write_pkl) -> None:
    body = """
class UpperHint extends svc.ResourceHint { outputKeyTransformation = (n) -> n.capitalize() }
@UpperHint { type = "TEST::Box::Shape"; identifier = "$.Id" }
class Shape extends svc.Resource {
  @svc.FieldHint { outputField = "custom_key" } renamed: String?
  @svc.FieldHint { outputTransformation = svc.transform.toString; outputCondition = (v) -> v > 1 } size: Int?
  @svc.FieldHint { outputTransformation = svc.transform.capitalizeKeys } tags: Mapping<String, String>?
  @svc.FieldHint {} lowerCase: String?
}
"""
    resources = ('new Shape { label = "a"; renamed = "r"; size = 5; tags { ["k"] = "v" }; lowerCase = "x" }\n'
                 '  new Shape { label = "b"; size = 1 }')
    result = evaluate_forma(forma(write_pkl, body, resources))
    assert result.resources[0].schema_.fields == ("custom_key", "Size", "Tags", "LowerCase")
    assert result.resources[0].properties == {"custom_key": "r", "Size": "5", "Tags": {"K": "v"}, "LowerCase": "x"}
    assert result.resources[1].properties == {"Size": 1}  # the condition is false: the raw value


def test_a_references_property_is_its_wire_key(write_pkl) -> None:
    # `res` names each property by its wire key (the hint's outputField, else the class's transformation),
    # worked out only for the member a reference reads.
    body = """
class UpperHint extends svc.ResourceHint { outputKeyTransformation = (n) -> n.capitalize() }
@UpperHint { type = "TEST::Box::Link"; identifier = "$.Id" }
class Link extends svc.Resource {
  @svc.FieldHint { outputField = "custom_key" } renamed: (String | svc.Resolvable)?
  @svc.FieldHint {} lowerCase: (String | svc.Resolvable)?
  @svc.FieldHint {} items: Listing<String>?
}
"""
    resources = ('local a = new Link { label = "a"; renamed = "r" }\n  a\n'
                 '  new Link { label = "b"; renamed = a.res.lowerCase; lowerCase = a.res.renamed }\n'
                 '  new Link { label = "c"; renamed = a.res.items.at(1) }')
    result = evaluate_forma(forma(write_pkl, body, resources))
    b, c = (resource.properties for resource in result.resources[1:])
    assert (b["custom_key"]["$property"], b["LowerCase"]["$property"]) == ("LowerCase", "custom_key")
    assert c["custom_key"]["$property"] == "Items.1"


def test_schema_query_lists_keys_with_a_flag(write_pkl) -> None:
    path = forma(write_pkl, NESTED, 'new Tree { label = "t" }')
    assert schema_of(path).query("create_only") == ["root.inner.DEPTH", "items.DEPTH"]


def test_a_field_set_from_an_undefined_value_is_not_called_missing(write_pkl) -> None:
    body = THING + "class Names { first: String }\nlocal names: Names = new {}\n"
    path = forma(write_pkl, body, 'new Thing { label = "a"; owner = "o"; name = names.first }')
    # Pkl's own error about the value that is really undefined, not "required field `name` is not set".
    assert error_of(path).startswith(f"main.pkl:{line_of(path, 'class Names')}: "
                                     "Tried to read property `first` but its value is undefined.")


AT_KEYS = ["a:b", "a.b", "a/b", "a b", 'say "hi"', "it's", "back\\slash", "a.\\.b:c", "trailing\\"]
PAIR = """
@svc.ResourceHint { type = "TEST::Box::Pair"; identifier = "$.Id" }
class Pair extends svc.Resource {
  @svc.FieldHint {} labels: Mapping<String, Mapping<String, String>>?
  @svc.FieldHint {} peer: (String | svc.Resolvable)?
}
"""


@pytest.mark.parametrize("keys", [(key, "inner") for key in AT_KEYS] + [("outer", key) for key in AT_KEYS])
def test_at_keys_reach_the_agent_as_the_keys_they_name(write_pkl, keys: tuple[str, str]) -> None:
    # `.at(key)` builds the reference's property path in Pkl; the agent splits it again (`values.split_path`).
    outer, inner = (pkl_text.string(key) for key in keys)
    resources = (f'local a = new Pair {{ label = "a"; labels {{ [{outer}] {{ [{inner}] = "found" }} }} }}\n  a\n'
                 f'  new Pair {{ label = "b"; peer = a.res.labels.at({outer}).at({inner}) }}')
    consumer = evaluate_forma(forma(write_pkl, PAIR, resources)).resources[1]
    path = consumer.properties["peer"]["$property"]
    decoys = {key: {k: "other" for k in AT_KEYS} for key in [*AT_KEYS, "outer"]}
    document = {"labels": {**decoys, keys[0]: {**decoys[keys[0]], keys[1]: "found"}}}
    assert values.get_path(document, path) == "found"
    assert values.split_path(path) == ["labels", *keys]
