"""JSON Schema nodes of a registry schema as Pkl types, and the sub-resource classes they need.

One :class:`ModuleShapes` per resource type walks its properties: a definition (or inline object) with
properties becomes an ``svc.SubResource`` class; a map (``additionalProperties``/``patternProperties``) a
``Mapping<String, …>``; an object without properties a JSON document; ``oneOf``/``anyOf``/``allOf`` of
objects one class with every variant's properties, of other shapes their union. Hints that a registry
schema gives by path below a property (``/properties/A/B`` is createOnly) specialise the class at that
path, so a definition shared by two properties keeps its own hints in each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from svc_plugin_aws_gen import naming, pkl_literals
from svc_plugin_aws_gen.registry import JsonSchema, TypeSchema

# Flags a schema sets by path: the hint each gives a field.
CREATE_ONLY, WRITE_ONLY, READ_ONLY = "createOnly", "writeOnly", "readOnly"

# A write-only string under one of these names is a secret: typed `String|svc.SecretValue`, hashed at rest.
_SECRET_NAME = re.compile(r"password|passphrase|secret(?!arn|name|id)"
                          r"|(?<!client)token(?!s?(arn|name|id|type|validity|url))"
                          r"|privatekey|credentials?$|authkey|apikey", re.IGNORECASE)
# The most hint keys (dotted paths) a field's sub-resources may add to a type's descriptor. svc lists a hint
# for every path through the sub-resource classes, so a deep document (a QuickSight dashboard's definition:
# millions of paths) would make a descriptor of tens of megabytes; such a field is an untyped document.
PATH_BUDGET = 200
# A key property that makes an unordered array of objects an EntitySet (compared element by element).
_KEY_NAMES = ("Key", "Name", "Id")

Overrides = dict[tuple[str, ...], frozenset[str]]


@dataclass(frozen=True)
class Shape:
    """A Pkl type expression and what it implies for the field's hint."""

    expr: str
    update_method: str | None = None
    index_field: str | None = None
    json: bool = False
    string: bool = False  # a plain string: a reference may stand for it
    sub_class: str | None = None  # the sub-resource class it holds, directly or in a collection


@dataclass
class PklField:
    wire: str
    name: str
    shape: Shape
    nullable: bool
    hints: dict[str, str]
    tracked: bool = True  # a resource's read-only properties are readable (`.res`), not tracked
    doc: str = ""

    @property
    def type_text(self) -> str:
        expr = self.shape.expr
        if self.nullable:
            return f"({expr})?" if "|" in expr and not _wrapped(expr) else f"{expr}?"
        return expr


@dataclass
class PklClass:
    name: str
    doc: str
    fields: list[PklField] = field(default_factory=list)


def _wrapped(expr: str) -> bool:
    """Whether ``expr`` is one parenthesised group (so ``?`` applies to all of it)."""
    if not (expr.startswith("(") and expr.endswith(")")):
        return False
    depth = 0
    for index, char in enumerate(expr):
        depth += char == "("
        depth -= char == ")"
        if depth == 0 and index < len(expr) - 1:
            return False
    return True


def _below(overrides: Overrides, step: str) -> Overrides:
    """The overrides under one property (or one array/map level, ``*``) of the current object."""
    below: Overrides = {}
    for path, flags in overrides.items():
        if path and path[0] == step and len(path) > 1:
            below[path[1:]] = below.get(path[1:], frozenset()) | flags
    return below


def _through_collection(overrides: Overrides) -> Overrides:
    """Paths go on through array items and map values with a ``*`` step, or (in some schemas) without one."""
    starred = _below(overrides, "*")
    plain = {path: flags for path, flags in overrides.items() if path and path[0] != "*"}
    return {**plain, **starred}


def _flags_at(overrides: Overrides, step: str) -> frozenset[str]:
    return overrides.get((step,), frozenset())


def _is_secret(wire: str, node: JsonSchema) -> bool:
    return bool(_SECRET_NAME.search(wire)) and node.get("type") == "string" and "enum" not in node


class ModuleShapes:
    """The Pkl classes one resource type's module declares, built from its schema."""

    def __init__(self, schema: TypeSchema, resource_class: str) -> None:
        self.schema = schema
        self.resource_class = resource_class
        self.classes: dict[str, PklClass] = {}
        self._by_key: dict[tuple[str, tuple], str] = {}
        self._taken = {resource_class} | naming.RESERVED_CLASS_NAMES

    # -- classes --------------------------------------------------------------------------------------

    def _claim(self, wanted: str) -> str:
        name, counter = wanted, 2
        while name in self._taken:
            name, counter = f"{wanted}{counter}", counter + 1
        self._taken.add(name)
        return name

    def object_class(self, key: tuple[str, tuple], wanted: str, node: JsonSchema, overrides: Overrides,
                     extra: list[JsonSchema]) -> str:
        """The class for an object node (with the properties of ``extra`` variants merged in)."""
        if key in self._by_key:
            return self._by_key[key]
        name = self._claim(wanted)
        self._by_key[key] = name
        pkl_class = PklClass(name, pkl_literals.doc_text(node.get("description")))
        self.classes[name] = pkl_class
        properties: dict[str, JsonSchema] = {}
        required = set(node.get("required") or ()) if not extra else set()
        for variant in (node, *extra):
            for wire, sub in (self._resolved_object(variant).get("properties") or {}).items():
                properties.setdefault(wire, sub)
        pkl_class.fields = self.fields(properties, required, overrides, name, top_level=False)
        return name

    def _resolved_object(self, node: JsonSchema) -> JsonSchema:
        return self.schema.resolve(node)[1] if "$ref" in node else node

    # -- fields ---------------------------------------------------------------------------------------

    def fields(self, properties: dict[str, JsonSchema], required: set[str], overrides: Overrides, owner: str,
               *, top_level: bool) -> list[PklField]:
        result: list[PklField] = []
        used: set[str] = set()
        for wire in sorted(properties):
            node = properties[wire]
            if not isinstance(node, dict):
                continue
            name = naming.resource_member_name(wire) if top_level else naming.property_name(wire)
            while name in used:
                name += "_"
            used.add(name)
            flags = _flags_at(overrides, wire)
            shape = self.shape(node, owner + naming.class_name(wire), _below(overrides, wire))
            secret = WRITE_ONLY in flags and _is_secret(wire, self._resolved_object(node))
            if secret:
                shape = Shape("String | svc.SecretValue | svc.Resolvable", string=True)
            elif shape.string:  # a reference to another resource's property may stand for any string
                shape = Shape(f"{shape.expr} | svc.Resolvable", string=True)
            hints = self._hints(flags, shape, node)
            read_only = READ_ONLY in flags
            result.append(PklField(
                wire=wire, name=name, shape=shape,
                nullable=read_only or wire not in required,
                hints=hints,
                tracked=not (top_level and read_only),
                doc=pkl_literals.doc_text(node.get("description")),
            ))
        return result

    @staticmethod
    def _hints(flags: frozenset[str], shape: Shape, node: JsonSchema) -> dict[str, str]:
        hints: dict[str, str] = {}
        if CREATE_ONLY in flags:
            hints["createOnly"] = "true"
        if WRITE_ONLY in flags:
            hints["writeOnly"] = "true"
        if "default" in node or READ_ONLY in flags:
            # The provider sets it when the forma does not (a read-only one below a settable property too).
            hints["hasProviderDefault"] = "true"
        if shape.update_method:
            hints["updateMethod"] = pkl_literals.string(shape.update_method)
        if shape.index_field:
            hints["indexField"] = pkl_literals.string(shape.index_field)
        if shape.json:
            hints["format"] = '"json"'
            hints["outputTransformation"] = "aws.jsonObject"
        return hints

    # -- types ----------------------------------------------------------------------------------------

    def shape(self, node: JsonSchema, wanted: str, overrides: Overrides, visiting: frozenset[str] = frozenset()
              ) -> Shape:
        definition, resolved = self.schema.resolve(node)
        if definition is not None:
            if definition in visiting:
                return Shape("Any")
            if self._has_properties(resolved) or self._object_variants(resolved):
                key = (definition, tuple(sorted(overrides.items())))
                wanted_name = naming.class_name(definition) if not overrides else wanted
                name = self.object_class(key, wanted_name, resolved, overrides, self._object_variants(resolved))
                return Shape(name, sub_class=name)
            return self.shape(resolved, wanted, overrides, visiting | {definition})
        node = resolved
        variants = self._object_variants(node)
        if self._has_properties(node) or variants:
            key = (f"inline:{wanted}", tuple(sorted(overrides.items())))
            name = self.object_class(key, wanted, node, overrides, variants)
            return Shape(name, sub_class=name)
        alternatives = [v for v in (node.get("oneOf") or node.get("anyOf") or ()) if self._has_shape(v)]
        if alternatives and "type" not in node:
            return self._union([self.shape(v, wanted, overrides, visiting) for v in alternatives])
        kind = node.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"]
            if "object" in kinds and len(kinds) <= 2 and set(kinds) <= {"object", "string"}:
                return Shape("aws.JsonDocument", json=True)
            if len(kinds) == 1:
                return self.shape({**node, "type": kinds[0]}, wanted, overrides, visiting)
            if set(kinds) & {"array", "object"}:
                return Shape("Any")
            return self._union([self.shape({**node, "type": k}, wanted, overrides, visiting) for k in kinds])
        if kind == "string":
            return self._string(node)
        if kind == "integer":
            return Shape(pkl_literals.int_type(node))
        if kind == "number":
            return Shape("Number")
        if kind == "boolean":
            return Shape("Boolean")
        if kind == "array":
            return self._array(node, wanted, overrides, visiting)
        if kind == "object" or "patternProperties" in node or isinstance(node.get("additionalProperties"), dict):
            values = [v for v in (node.get("patternProperties") or {}).values() if isinstance(v, dict)]
            if isinstance(node.get("additionalProperties"), dict):
                values.append(node["additionalProperties"])
            if values:
                inner = self._union([self.shape(v, wanted + "Value", _through_collection(overrides), visiting)
                                     for v in values])
                value = f"{inner.expr} | svc.Resolvable" if inner.string else inner.expr  # as for list elements
                return Shape(f"Mapping<String, {value}>", sub_class=inner.sub_class)
            return Shape("aws.JsonDocument", json=True)
        return Shape("Any")

    def _has_properties(self, node: JsonSchema) -> bool:
        return bool(node.get("properties")) and node.get("type") in (None, "object")

    def _has_shape(self, node: JsonSchema) -> bool:
        return any(key in node for key in ("type", "$ref", "properties", "oneOf", "anyOf", "allOf", "enum"))

    def _object_variants(self, node: JsonSchema) -> list[JsonSchema]:
        """The variants of a ``oneOf``/``anyOf``/``allOf`` whose every shaped variant is an object with properties."""
        variants = [v for key in ("oneOf", "anyOf", "allOf") for v in node.get(key) or () if isinstance(v, dict)]
        shaped = [v for v in variants if self._has_shape(v)]
        objects = [v for v in shaped if self._has_properties(self._resolved_object(v))]
        return objects if shaped and len(objects) == len(shaped) else []

    @staticmethod
    def _union(shapes: list[Shape]) -> Shape:
        exprs: list[str] = []
        for shape in shapes:
            if shape.expr not in exprs:
                exprs.append(shape.expr)
        if len(exprs) == 1:
            return shapes[0]
        if "Any" in exprs:
            return Shape("Any")
        return Shape(" | ".join(f"({e})" if "|" in e and not _wrapped(e) else e for e in exprs),
                     string=any(s.string for s in shapes),
                     sub_class=next((s.sub_class for s in shapes if s.sub_class), None))

    def _string(self, node: JsonSchema) -> Shape:
        enum = node.get("enum")
        if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
            return Shape(" | ".join(pkl_literals.string(v) for v in sorted(set(enum))), string=True)
        return Shape(pkl_literals.string_type(node), string=True)

    def _array(self, node: JsonSchema, wanted: str, overrides: Overrides, visiting: frozenset[str]) -> Shape:
        items = node.get("items")
        if isinstance(items, list):  # a tuple schema: its elements may differ
            items = {"anyOf": items}
        item = (self.shape(items, self._item_name(wanted), _through_collection(overrides), visiting)
                if isinstance(items, dict) and self._has_shape(items) else Shape("Any"))
        # A reference to another resource's property may stand for any string element (a subnet id in a list).
        expr = f"Listing<{item.expr} | svc.Resolvable>" if item.string else f"Listing<{item.expr}>"
        if node.get("insertionOrder", True) is not False:
            return Shape(expr, update_method="Array", sub_class=item.sub_class)
        key = self._entity_key(items) if isinstance(items, dict) else None
        if key is not None:
            return Shape(expr, update_method="EntitySet", index_field=key, sub_class=item.sub_class)
        return Shape(expr, update_method="Set", sub_class=item.sub_class)

    @staticmethod
    def _item_name(wanted: str) -> str:
        return wanted[:-1] if wanted.endswith("s") and not wanted.endswith("ss") else wanted + "Item"

    def _entity_key(self, items: JsonSchema) -> str | None:
        """The property that identifies an unordered array's objects: a required ``Key``, ``Name`` or ``Id``
        (``PolicyName``, ``RuleId`` …), when exactly one of its required properties is such a key."""
        resolved = self._resolved_object(items)
        if not self._has_properties(resolved):
            return None
        required = [r for r in resolved.get("required") or () if r in resolved["properties"]]
        keys = [r for r in required if any(r == k or r.endswith(k) for k in _KEY_NAMES)]
        if len(keys) != 1:
            return None
        key_node = self._resolved_object(resolved["properties"][keys[0]])
        return keys[0] if key_node.get("type") in ("string", "integer") else None


# A field too deep to type: any value (CloudFormation's PascalCase keys), compared as a whole.
UNTYPED = Shape("Any", update_method="Atomic")
UNTYPED_NOTE = ("Too deep to type here: written as a Pkl object or mapping with CloudFormation's keys, "
                "compared as a whole.")


def _class_names(expr: str, classes: dict[str, PklClass]) -> list[str]:
    return [word for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expr) if word in classes]


def bound_paths(classes: dict[str, PklClass], roots: list[PklField]) -> None:
    """Makes each field whose sub-resources would add more than :data:`PATH_BUDGET` hint keys untyped, from the
    innermost classes out; the classes no field uses any more are dropped."""
    sizes: dict[str, int] = {}

    def size(name: str, visiting: frozenset[str]) -> int:
        if name in sizes:
            return sizes[name]
        total = 0
        for f in classes[name].fields:
            total += 1 + limit(f, visiting | {name})
        sizes[name] = total
        return total

    def limit(f: PklField, visiting: frozenset[str]) -> int:
        sub = f.shape.sub_class
        if sub is None or sub in visiting:
            return 0
        below = size(sub, visiting)
        if below > PATH_BUDGET:
            f.shape = UNTYPED
            f.hints = {k: v for k, v in f.hints.items() if k not in ("updateMethod", "indexField")}
            f.hints["updateMethod"] = '"Atomic"'
            f.doc = (f.doc + "\n\n" if f.doc else "") + UNTYPED_NOTE
            return 0
        return below

    for f in roots:
        limit(f, frozenset())
    used: set[str] = set()
    pending = [name for f in roots for name in _class_names(f.shape.expr, classes)]
    while pending:
        name = pending.pop()
        if name not in used:
            used.add(name)
            pending.extend(n for f in classes[name].fields for n in _class_names(f.shape.expr, classes))
    for name in [n for n in classes if n not in used]:
        del classes[name]
