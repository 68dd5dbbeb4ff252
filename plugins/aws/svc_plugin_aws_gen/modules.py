"""One registry type as one Pkl module: its resource class, its hints and its sub-resource classes.

The mapping (seed 001's hints): ``primaryIdentifier`` → ``identifier`` (a compound one as ``$.A|$.B``: the
native id is the values joined by ``|``, in that order, as Cloud Control writes it); ``createOnlyProperties``
→ ``createOnly``; ``writeOnlyProperties`` → ``writeOnly``; ``readOnlyProperties`` → a property without a
hint (readable through ``.res``, never sent); ``required`` → non-nullable; ``tagging`` → ``aws.Tags``
compared by ``Key``; a ``list`` handler → discoverable, with ``parent``/``listParam`` when it needs a
parent's property; descriptions → doc comments.
"""

from __future__ import annotations

from svc_plugin_aws_gen import naming, pkl_literals
from svc_plugin_aws_gen.registry import PINNED_CFN_LINT, TypeSchema
from svc_plugin_aws_gen.relations import ParentRelation
from svc_plugin_aws_gen.shapes import (
    CREATE_ONLY,
    READ_ONLY,
    WRITE_ONLY,
    ModuleShapes,
    Overrides,
    PklClass,
    Shape,
    bound_paths,
)

HEADER = (f"// Generated from the CloudFormation registry schemas of cfn-lint {PINNED_CFN_LINT} by "
          "`python -m svc_plugin_aws_gen generate`: do not edit.\n")


def _overrides(schema: TypeSchema) -> Overrides:
    flags: dict[tuple[str, ...], set[str]] = {}
    for key, flag in (("createOnlyProperties", CREATE_ONLY), ("writeOnlyProperties", WRITE_ONLY),
                      ("readOnlyProperties", READ_ONLY)):
        for path in schema.paths(key):
            flags.setdefault(tuple(path), set()).add(flag)
    return {path: frozenset(found) for path, found in flags.items()}


def identifier(schema: TypeSchema) -> str:
    return "|".join("$." + ".".join(step for step in path if step != "*")
                    for path in schema.paths("primaryIdentifier"))


def _tag_property(schema: TypeSchema) -> str | None:
    """The tag property, when it is CloudFormation's list of ``{Key, Value}``."""
    tagging = schema.raw.get("tagging") or {}
    if tagging.get("taggable") is False:
        return None
    wire = (tagging.get("tagProperty") or "/properties/Tags").removeprefix("/properties/")
    node = schema.properties.get(wire)
    if not isinstance(node, dict) or node.get("type") != "array" or not isinstance(node.get("items"), dict):
        return None
    item = schema.resolve(node["items"])[1]
    keys = set(item.get("properties") or {})
    return wire if {"Key", "Value"} <= keys else None


def _class_name(schema: TypeSchema) -> str:
    return naming.class_name(schema.resource)


def _hint_body(hints: dict[str, str]) -> str:
    return "{ " + "; ".join(f"{k} = {v}" for k, v in hints.items()) + " }" if hints else "{}"


def _wire_keys(fields, indent: str) -> str:
    irregular = [(f.name, f.wire) for f in fields if f.name[:1].upper() + f.name[1:] != f.wire]
    if not irregular:
        return ""
    entries = "".join(f"{indent}  [{pkl_literals.string(n)}] = {pkl_literals.string(w)}\n" for n, w in irregular)
    return f"{indent}wireKeys {{\n{entries}{indent}}}\n"


def _render_fields(pkl_class: PklClass, *, resource: bool) -> str:
    out: list[str] = []
    for f in pkl_class.fields:
        text = pkl_literals.doc_comment(f.doc, "  ")
        if resource and f.tracked or not resource and f.hints:
            text += f"  @svc.FieldHint {_hint_body(f.hints)}\n"
        text += f"  {naming.quoted(f.name)}: {f.type_text}\n"
        out.append(text)
    return "\n".join(out)


def _listed_res(pkl_class: PklClass) -> str:
    """The class's own ``res``, one member per property, each built when read (``svc.resolvableOfProperty``):
    the reflective ``res`` of ``svc.Resource`` builds one for every property of every resource another one
    refers to, most of evaluating a forma of references to types with dozens of properties. The class is
    closed, so no subclass can declare a property this does not list."""
    members = "".join(f"    {naming.quoted(f.name)} = svc.resolvableOfProperty(outer, {pkl_literals.string(f.name)})\n"
                      for f in pkl_class.fields)
    return f"\n  hidden res: Dynamic = new Dynamic {{\n{members}  }}\n"


def _render_sub_resource(pkl_class: PklClass) -> str:
    wire_keys = _wire_keys(pkl_class.fields, "  ")
    annotation = f"@aws.SubResourceHint {{\n{wire_keys}}}\n" if wire_keys else "@aws.SubResourceHint\n"
    body = _render_fields(pkl_class, resource=False)
    return (pkl_literals.doc_comment(pkl_class.doc) + annotation
            + f"class {pkl_class.name} extends svc.SubResource {{\n{body}}}\n")


def _resource_hint(schema: TypeSchema, relation: ParentRelation | None, fields) -> str:
    lines = [f"  type = {pkl_literals.string(schema.name)}",
             f"  identifier = {pkl_literals.string(identifier(schema))}"]
    if not schema.listable or (relation is not None and not relation.parent):
        lines.append("  discoverable = false")
    if relation is not None and relation.parent:
        lines.append(f"  parent = {pkl_literals.string(relation.parent)}")
        items = [f"new svc.ListProperty {{ parentProperty = {pkl_literals.string(p.parent_property)}; "
                 f"listParameter = {pkl_literals.string(p.list_parameter)} }}" for p in relation.parameters]
        lines.append(f"  listParam = {items[0]}" if len(items) == 1 else f"  listParam = List({', '.join(items)})")
    return "@aws.ResourceHint {\n" + "\n".join(lines) + "\n" + _wire_keys(fields, "  ") + "}\n"


def render_module(schema: TypeSchema, relation: ParentRelation | None) -> str:
    """The Pkl module of one registry type."""
    class_name = _class_name(schema)
    shapes = ModuleShapes(schema, class_name)
    overrides = _overrides(schema)
    required = set(schema.raw.get("required") or ())
    fields = shapes.fields(schema.properties, required, overrides, class_name, top_level=True)
    tags = _tag_property(schema)
    for f in fields:
        if f.wire == tags and f.tracked:
            f.shape = Shape("aws.Tags")
            f.hints = {k: v for k, v in f.hints.items() if k not in ("updateMethod", "indexField")}
            f.hints |= {"updateMethod": '"EntitySet"', "indexField": '"Key"'}
    bound_paths(shapes.classes, fields)
    resource = PklClass(class_name, pkl_literals.doc_text(schema.raw.get("description")), fields)
    module_name = ".".join(naming.quoted(step)
                           for step in ["aws", *naming.module_path(schema.name).removesuffix(".pkl").split("/")])
    parts = [
        HEADER + pkl_literals.doc_comment(f"`{schema.name}`") + f"module {module_name}\n\n"
        'import "@svc/svc.pkl"\nimport "../aws.pkl"\n',
        pkl_literals.doc_comment(resource.doc) + _resource_hint(schema, relation, fields)
        + f"class {class_name} extends svc.Resource {{\n{_render_fields(resource, resource=True)}"
        f"{_listed_res(resource)}}}\n",
        *(_render_sub_resource(c) for c in shapes.classes.values()),
    ]
    return "\n".join(parts)
