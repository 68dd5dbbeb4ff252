"""``svc extract``'s generator: the agent's resources (a forma in the wire format) → a Pkl forma.

Pure: the forma JSON of ``GET /api/v1/resources`` and the plugins' :class:`Catalog` in, Pkl text out.
The text is written as a person would write it, so that it can be kept and edited, and so that applying
it right away changes nothing:

* each resource is a ``local`` named after its label, of its plugin's class, with its properties under
  their Pkl names; the forma lists the stacks, targets and those locals;
* a reference to another extracted resource is ``other.res.property`` (inside text: an interpolation),
  one to a resource outside the extract a ``svc.Resolvable`` naming it;
* a secret the agent holds only hashed is ``svc.hashedSecret("<sha256>")`` under a comment: applying it
  keeps the secret, and the plaintext must be supplied to change it. Write-only fields are never read
  back, so they are left out (a comment says so) unless required;
* resources discovered outside svc (stack ``$unmanaged``) go to the stack ``unmanaged_stack``: applying the
  file adopts them; types with ``extractable = false`` are left out, and listed at the top.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from svc.forma import pkl_text
from svc.forma.extract_catalog import Catalog, ClassInfo, Shape
from svc.forma.pkl_text import Expr, identifier, string
from svc.model.values import split_path

Json = dict[str, Any]
UNMANAGED = "$unmanaged"
DEFAULT_UNMANAGED_STACK = "adopted"
_SVC_IMPORT = "@svc/svc.pkl"
# Members of the forma module (and names this file uses) that a local must not shadow.
_RESERVED = frozenset({"svc", "forma", "description", "properties", "output", "injected"})
_ALIAS_OF_KEYWORD = {"local": "lcl"}
_INLINE = 100


@dataclass(frozen=True)
class ExtractOptions:
    query: str = ""
    unmanaged_stack: str = DEFAULT_UNMANAGED_STACK


@dataclass
class Extraction:
    text: str
    resources: list[Json] = field(default_factory=list)  # {Label, Type, Stack} of each one written
    excluded: list[Json] = field(default_factory=list)  # the extractable = false ones
    hashed_secrets: list[str] = field(default_factory=list)  # "<label>.<property>", deeper: '.sub', '[0]', '["key"]'
    write_only: list[str] = field(default_factory=list)  # left out: "<label>.<property>"

    def excluded_names(self) -> list[str]:
        """``Type 'label'`` of each resource left out."""
        return [f"{r['Type']} {r['Label']!r}" for r in self.excluded]

    def excluded_types(self) -> list[str]:
        return sorted({str(r["Type"]) for r in self.excluded})


def namespaces(forma: Mapping[str, Any]) -> set[str]:
    """The plugin namespaces a forma JSON document's resources and targets are of (their schemas are needed)."""
    found = {str(r.get("Type", "")).split("::")[0] for r in forma.get("Resources") or []}
    return found | {str(t["Namespace"]) for t in forma.get("Targets") or [] if t.get("Namespace")}


def resource_types(forma: Mapping[str, Any]) -> set[str]:
    """The resource types of a forma JSON document: the classes to write them with are all the catalog needs."""
    return {str(r.get("Type", "")) for r in forma.get("Resources") or []}


def generate(forma: Mapping[str, Any], catalog: Catalog, options: ExtractOptions = ExtractOptions()) -> Extraction:
    return _Generator(forma, catalog, options).run()


def _aliases(modules: list[str]) -> dict[str, str]:
    """An import alias per module: its file name, unless that is a keyword or already taken."""
    taken: set[str] = {"svc"}
    aliases: dict[str, str] = {_SVC_IMPORT: "svc"}
    for module in modules:
        if module == _SVC_IMPORT:
            continue
        base = module.rsplit("/", 1)[-1].removesuffix(".pkl")
        package = module.split("/", 1)[0].lstrip("@")
        candidate = _ALIAS_OF_KEYWORD.get(base, pkl_text.camel_identifier(base, "m"))
        if candidate in taken or not pkl_text.is_plain_identifier(candidate):
            candidate = pkl_text.camel_identifier(f"{package} {base}", "m")
        alias, n = candidate, 2
        while alias in taken or not pkl_text.is_plain_identifier(alias):
            alias, n = f"{candidate}{n}", n + 1
        taken.add(alias)
        aliases[module] = alias
    return aliases


class _Generator:
    def __init__(self, forma: Mapping[str, Any], catalog: Catalog, options: ExtractOptions) -> None:
        self.catalog, self.options = catalog, options
        self.used_modules: set[str] = set()
        self.out = Extraction(text="")
        self.resources: list[Json] = []
        for resource in forma.get("Resources") or []:
            if (resource.get("Schema") or {}).get("Extractable", True) is False:
                self.out.excluded.append({"Label": resource.get("Label"), "Type": resource.get("Type"),
                                          "Stack": resource.get("Stack")})
            else:
                self.resources.append(resource)
        used_stacks = [self.stack_of(r) for r in self.resources]
        self.stacks = _ordered(used_stacks, [s.get("Label") for s in forma.get("Stacks") or []])
        self.stack_records = {s.get("Label"): s for s in forma.get("Stacks") or []}
        self.targets = _ordered([r.get("Target") for r in self.resources],
                                [t.get("Label") for t in forma.get("Targets") or []])
        self.target_records = {t.get("Label"): t for t in forma.get("Targets") or []}
        self.policies = {p.get("Label"): p for p in forma.get("Policies") or [] if p.get("Label")}
        # Aliases for the modules this file may import, and only those: the names it writes do not depend on
        # what else the catalog describes.
        roots = [catalog.resource_class(str(r.get("Type", ""))) for r in self.resources]
        roots += [catalog.config_class(str(self.target_records[label].get("Namespace", "")))
                  for label in self.targets if label in self.target_records]
        self.aliases = _aliases(catalog.modules_reachable(info.id for info in roots if info is not None))
        taken = set(_RESERVED) | set(self.aliases.values())
        self.locals: dict[tuple[str, str, str], tuple[str, ClassInfo | None]] = {}
        self.records: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        for resource in self.resources:
            name = _unique(pkl_text.camel_identifier(str(resource.get("Label", "")), "resource"), taken)
            key = (self.stack_of(resource), resource.get("Type", ""), resource.get("Label", ""))
            self.locals[key] = (name, catalog.resource_class(resource.get("Type", "")))
            self.records[key] = resource
        self.policy_locals = {label: _unique(pkl_text.camel_identifier(label, "policy") + "Policy", taken)
                              for label in self.policies}

    # -- names ----------------------------------------------------------------------------------------------

    def stack_of(self, resource: Mapping[str, Any]) -> str:
        stack = str(resource.get("Stack", ""))
        return self.options.unmanaged_stack if stack == UNMANAGED else stack

    def class_ref(self, info: ClassInfo) -> str:
        self.used_modules.add(info.module)
        return f"{self.aliases[info.module]}.{identifier(info.name)}"

    # -- the file -------------------------------------------------------------------------------------------

    def run(self) -> Extraction:
        listing: list[str] = [self.stack_block(label, "  ") for label in self.stacks]
        listing += [f"{self.policy_locals[label]}" for label in self.policies]
        listing += [self.target_block(label, "  ") for label in self.targets]
        bodies: list[str] = []
        for resource in self.resources:
            name, info = self.locals[(self.stack_of(resource), resource.get("Type", ""), resource.get("Label", ""))]
            listing.append(name)
            bodies.append(self.resource_block(resource, name, info))
        policy_bodies = [f"local {self.policy_locals[label]} = {self.policy(policy, '')}"
                         for label, policy in self.policies.items()]
        imports = [f'import "{_SVC_IMPORT}"'] + [
            f'import "{module}"' + ("" if self.aliases[module] == _default_alias(module) else
                                     f" as {self.aliases[module]}")
            for module in sorted(self.used_modules - {_SVC_IMPORT})]
        members = "\n".join("  " + item for item in listing)
        parts = [self.header(), 'amends "@svc/forma.pkl"', "\n".join(imports), f"forma {{\n{members}\n}}",
                 *policy_bodies, *bodies]
        self.out.text = "\n\n".join(part for part in parts if part) + "\n"
        self.out.resources = [{"Label": r.get("Label"), "Type": r.get("Type"), "Stack": self.stack_of(r)}
                              for r in self.resources]
        return self.out

    def header(self) -> str:
        query = f" --query {self.options.query!r}" if self.options.query else ""
        lines = [f"// Extracted by `svc extract{query}`: {len(self.resources)} resource(s) as the agent has them.",
                 "// Applying this file unchanged changes nothing (svc apply --mode reconcile FILE plans no changes)."]
        if any(str(r.get("Stack")) == UNMANAGED for r in self.resources):
            lines.append(f"// Resources discovered outside svc are in the stack \"{self.options.unmanaged_stack}\": "
                         "applying this file adopts them.")
        if self.out.excluded:
            lines.append("// Not extracted (their types set extractable = false); a reconcile of their stacks "
                         "deletes them:")
            lines += [f"//   {r['Type']} \"{r['Label']}\" (stack {r['Stack']})" for r in self.out.excluded]
        return "\n".join(lines)

    def stack_block(self, label: str, indent: str) -> str:
        record = self.stack_records.get(label, {})
        members = [f"label = {string(label)}"]
        if record.get("Description"):
            members.append(f"description = {string(record['Description'], indent + '  ')}")
        inner = indent + "    "
        policies = [inner + self.policy(p, inner) for p in record.get("Policies") or []]
        if policies:
            members.append("policies {\n" + "\n".join(policies) + f"\n{indent}  }}")
        return _object("new svc.Stack", members, indent)

    def policy(self, policy: Mapping[str, Any], indent: str) -> str:
        ref = policy.get("$ref")
        if isinstance(ref, str) and ref.startswith("policy://"):
            label = ref.removeprefix("policy://")
            if label in self.policy_locals:
                return f"{self.policy_locals[label]}.res"
            return f"new svc.PolicyResolvable {{ label = {string(label)} }}"
        members = [f"label = {string(policy['Label'])}"] if policy.get("Label") else []
        if policy.get("Type") == "ttl":
            if policy.get("TTLSeconds") is not None:
                members.append(f"ttl = {pkl_text.duration(int(policy['TTLSeconds']))}")
            elif policy.get("ExpiresAt"):
                members.append(f"expiresAt = {string(str(policy['ExpiresAt']))}")
            if policy.get("OnDependents") and policy["OnDependents"] != "abort":
                members.append(f"onDependents = {string(str(policy['OnDependents']))}")
            return _object("new svc.TTLPolicy", members, indent)
        if policy.get("Type") == "auto-reconcile":
            members.append(f"interval = {pkl_text.duration(int(policy.get('IntervalSeconds') or 0))}")
            return _object("new svc.AutoReconcilePolicy", members, indent)
        raise ValueError(f"unknown policy type {policy.get('Type')!r}")

    def target_block(self, label: str, indent: str) -> str:
        record = self.target_records.get(label)
        if record is None:  # a resource's target the agent did not return: name it, declare nothing
            return f"new svc.TargetResolvable {{ label = {string(label)} }}"
        namespace = str(record.get("Namespace", ""))
        members = [f"label = {string(label)}"]
        info = self.catalog.config_class(namespace)
        config = record.get("Config")
        if info is not None and isinstance(config, dict):
            members.append(f"config = {self.object_value(config, info, indent + '  ', f'target {label}')}")
        else:
            members.append(f"namespace = {string(namespace)}")
            if config:
                members.append(f"config = {self.value(config, Shape('dynamic'), indent + '  ', f'target {label}')}")
        if record.get("Discoverable") is False:
            members.append("discoverable = false")
        reaping = record.get("Reaping") or {}
        if reaping.get("Kind") == "never":
            members.append("reap = new svc.NeverReap {}")
        elif reaping.get("Kind") == "after":
            members.append(f"reap = new svc.ReapAfter {{ maxUnreachable = "
                           f"{pkl_text.duration(int(reaping.get('MaxUnreachableSeconds') or 0))} }}")
        return _object("new svc.Target", members, indent)

    # -- resources ------------------------------------------------------------------------------------------

    def resource_block(self, resource: Mapping[str, Any], name: str, info: ClassInfo | None) -> str:
        label = str(resource.get("Label", ""))
        if info is None:
            raise ValueError(f"no class of the installed plugins declares {resource.get('Type')}")
        members = [f"label = {string(label)}"]
        if len(self.stacks) > 1:
            members.append(f"stack = {string(self.stack_of(resource))}")
        if len(self.targets) > 1:
            members.append(f"target = {string(str(resource.get('Target', '')))}")
        if resource.get("Group"):
            members.append(f"group = {string(str(resource['Group']))}")
        hints = (resource.get("Schema") or {}).get("Hints") or {}
        properties = dict(resource.get("Properties") or {})
        ordered = [f.key for f in info.fields if f.key in properties] + [k for k in properties
                                                                          if info.field(k) is None]
        for key in ordered:
            members.extend(self.property(label, info, key, properties[key], hints.get(key) or {}))
        return f"local {name} = " + _object(f"new {self.class_ref(info)}", members, "")

    def property(self, label: str, info: ClassInfo, key: str, value: Any, hint: Mapping[str, Any]) -> list[str]:
        found = info.field(key)
        if found is None or found.name is None:
            return [f"// {key}: not a property of {info.name} in the installed schema, left out"]
        name = identifier(found.name)
        if value is None:
            return []
        if hint.get("WriteOnly") and not hint.get("Required"):
            self.out.write_only.append(f"{label}.{found.name}")
            return [f"// {name}: write-only (never read back), so not extracted; set it here to keep managing it"]
        lines: list[str] = []
        if _is_hashed(value):
            lines += ["// A secret: svc keeps only its hash. Applying this keeps the current secret; supply the",
                      f'// plaintext to set or change it: {name} = svc.value("<plaintext>").opaque']
        lines.append(f"{name} = {self.value(value, found.shape, '  ', f'{label}.{found.name}')}")
        return lines

    # -- values ---------------------------------------------------------------------------------------------

    def value(self, value: Any, shape: Shape, indent: str, where: str) -> str:
        if isinstance(value, dict):
            if value.get("$res") is True:
                return self.reference(value)
            if value.get("$embed") is True:
                return self.template(value, indent)
            if "$value" in value:
                return self.enveloped(value, indent, where)
            return self.mapping(value, shape, indent, where)
        if isinstance(value, list):
            return self.listing(value, shape, indent, where)
        if isinstance(value, str):
            return _coerced(value, shape) or string(value, indent)
        if value is None:
            return "null"
        return pkl_text.number(value)

    def enveloped(self, envelope: Mapping[str, Any], indent: str, where: str) -> str:
        raw = envelope.get("$value")
        set_once = ".setOnce" if envelope.get("$strategy") == "SetOnce" else ""
        if envelope.get("$hashed"):
            self.out.hashed_secrets.append(where)  # at any depth: a sub-resource's, a listing's, a mapping's
            return f"svc.hashedSecret({string(str(raw))}){set_once}"
        if not isinstance(raw, str):
            return self.value(raw, Shape("any"), indent, "")
        opaque = ".opaque" if envelope.get("$visibility") == "Opaque" else ""
        if not opaque and not set_once:
            return string(raw, indent)
        return f"svc.value({string(raw, indent)}){opaque}{set_once}"

    def reference(self, envelope: Mapping[str, Any]) -> str:
        expression = self.reference_expression(envelope)
        if expression is None:
            return self.value(envelope.get("$value"), Shape("any"), "", "")
        return expression + (".opaque" if envelope.get("$visibility") == "Opaque" else "")

    def reference_expression(self, envelope: Mapping[str, Any]) -> str | None:
        """The Pkl expression of a reference; None when only its value can be written: its producer is gone,
        or the value was changed outside svc (it no longer is the producer's)."""
        stack = envelope.get("$stack")
        stack = self.options.unmanaged_stack if stack == UNMANAGED else stack
        steps = split_path(str(envelope["$property"])) if envelope.get("$property") else []
        key = (str(stack), str(envelope.get("$type")), str(envelope.get("$label")))
        producer = self.locals.get(key)
        if producer is not None and producer[1] is not None and steps:
            target = producer[1].field(steps[0])
            if target is not None and target.name is not None:
                current = _lookup(self.records[key], steps)
                if "$value" in envelope and current is not _MISSING and current != envelope["$value"]:
                    return None
                path = "".join(f".at({s})" if s.isdigit() else f".at({string(s)})" for s in steps[1:])
                return f"{producer[0]}.res.{identifier(target.name)}{path}"
        if "$label" not in envelope:
            return None
        members = [f"{key} = {string(str(envelope[f'${key}']))}" for key in ("label", "type", "stack", "property")
                   if envelope.get(f"${key}") is not None]
        return "new svc.Resolvable { " + "; ".join(members) + " }"

    def template(self, embed: Mapping[str, Any], indent: str) -> str:
        if embed.get("$value") is not None:  # changed outside svc: what is there now, not the template
            return self.value(embed["$value"], Shape("any"), indent, "")
        parts: list[str] = []
        for part in embed.get("$parts") or embed.get("$templateParts") or []:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("$res") is True \
                    and (expression := self.reference_expression(part)) is not None:
                parts.append(Expr(expression))
            elif isinstance(part, dict):
                found = part.get("$value")
                parts.append(found if isinstance(found, str) else pkl_json(found))
        return string(parts, indent)

    def fitting(self, value: Any, shape: Shape) -> Shape:
        """Of a union's shapes, the first that ``value`` fits: an object of a class whose fields hold all its
        keys, a mapping or a collection (a value that fits none is written with the first, as before)."""
        for candidate in (shape, *shape.alternatives):
            if isinstance(value, dict) and candidate.kind == "object":
                info = self.catalog.classes.get(candidate.class_id) if candidate.class_id else None
                if info is None or all(info.field(key) is not None for key in value):
                    return candidate
            elif isinstance(value, dict) and candidate.kind in ("mapping", "map", "dynamic", "any"):
                return candidate
            elif isinstance(value, list) and candidate.kind in ("listing", "list", "set", "any"):
                return candidate
        return shape

    def mapping(self, value: Mapping[str, Any], shape: Shape, indent: str, where: str) -> str:
        union, shape = bool(shape.alternatives), self.fitting(value, shape)  # Pkl infers no `new`'s type in a union
        info = self.catalog.classes.get(shape.class_id) if shape.class_id else None
        if shape.kind == "object" and info is not None:
            return self.object_value(value, info, indent, where)
        element = shape.element or Shape("any")
        if shape.kind == "object":  # a class svc cannot name: Pkl infers it from the property's type
            members = [f"{identifier(k)} = {self.value(v, Shape('any'), indent + '  ', f'{where}.{k}')}"
                       for k, v in value.items() if v is not None]
            return _object("new", members, indent)
        if shape.kind == "map":
            entries = [f"{string(str(k))}, {self.value(v, element, indent, f'{where}[{string(str(k))}]')}"
                       for k, v in value.items()]
            return "Map(" + ", ".join(entries) + ")"
        members = [f"[{string(str(k))}] = {self.value(v, element, indent + '  ', f'{where}[{string(str(k))}]')}"
                   for k, v in value.items() if v is not None]
        head = "new Dynamic" if shape.kind == "dynamic" else ("new" if shape.kind == "mapping" and not union
                                                              else "new Mapping")
        return _object(head, members, indent)

    def object_value(self, value: Mapping[str, Any], info: ClassInfo, indent: str, where: str) -> str:
        members: list[str] = []
        for key, item in value.items():
            found = info.field(key)
            if found is None:
                members.append(f"// {key}: not a property of {info.name} in the installed schema, left out")
            elif found.name is not None and item is not None:
                members.append(f"{identifier(found.name)} = "
                               f"{self.value(item, found.shape, indent + '  ', f'{where}.{found.name}')}")
        return _object(f"new {self.class_ref(info)}", members, indent)

    def listing(self, items: list[Any], shape: Shape, indent: str, where: str) -> str:
        union, shape = bool(shape.alternatives), self.fitting(items, shape)
        element = shape.element or Shape("any")
        rendered = [self.value(item, element, indent + "  ", f"{where}[{index}]") for index, item in enumerate(items)]
        if shape.kind in ("list", "set"):
            return ("List(" if shape.kind == "list" else "Set(") + ", ".join(rendered) + ")"
        head = "new" if shape.kind == "listing" and not union else "new Listing"
        return _object(head, rendered, indent)


_MISSING = object()


def _lookup(resource: Mapping[str, Any], steps: list[str]) -> Any:
    """The current value at a reference's path in a resource (its properties, then its read-only ones)."""
    for section in ("Properties", "ReadOnlyProperties"):
        current: Any = resource.get(section) or {}
        for step in steps:
            if isinstance(current, dict) and "$value" in current and "$embed" not in current:
                current = current["$value"]
            if isinstance(current, dict) and step in current:
                current = current[step]
            elif isinstance(current, list) and step.isdigit() and int(step) < len(current):
                current = current[int(step)]
            else:
                current = _MISSING
                break
        if isinstance(current, dict) and "$value" in current:
            current = current["$value"]
        if current is not _MISSING:
            return current
    return _MISSING


def pkl_json(value: Any) -> str:
    """A non-string value inside text, as the agent writes it into a template: JSON."""
    return json.dumps(value, separators=(",", ":"))


def _coerced(text: str, shape: Shape) -> str | None:
    """A string on the wire for a property that takes no strings (a plugin rendered it with
    ``toString``): the literal of the type the property takes, when the text is one."""
    if not shape.scalars or "String" in shape.scalars:
        return None
    if "Boolean" in shape.scalars and text in ("true", "false"):
        return text
    for kind, parse in (("Int", int), ("Float", float), ("Number", float)):
        if kind in shape.scalars:
            try:
                return pkl_text.number(parse(text))
            except ValueError:
                continue
    return None


def _is_hashed(value: Any) -> bool:
    return isinstance(value, dict) and bool(value.get("$hashed"))


def _object(head: str, members: list[str], indent: str) -> str:
    """``head { a; b }`` on one line when short and simple, else one member per line."""
    if not members:
        return f"{head} {{}}"
    inline = f"{head} {{ " + "; ".join(members) + " }"
    if len(inline) + len(indent) <= _INLINE and not any("\n" in m or m.startswith("//") for m in members):
        return inline
    # A member's later lines carry their own indentation already.
    body = "\n".join(indent + "  " + member for member in members)
    return f"{head} {{\n{body}\n{indent}}}"


def _default_alias(module: str) -> str:
    return module.rsplit("/", 1)[-1].removesuffix(".pkl")


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}{n}", n + 1
    taken.add(candidate)
    return candidate


def _ordered(used: list[str], known: list[str]) -> list[str]:
    """The labels in ``used``, in the order ``known`` has them, then the others in order of use."""
    seen = set(used)
    ordered = [label for label in known if label in seen]
    return ordered + [label for label in dict.fromkeys(used) if label not in ordered]
