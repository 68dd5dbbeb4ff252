"""Identity and references: each forma resource gets its KSUID, each ``$res`` becomes a ``$ref``.

A resource keeps the KSUID of the stored resource it matches: same (stack, label, type), else the
``alias`` triplet (a rename), else a discovered resource on the same target with that (label or alias, type)
(an adoption); otherwise a new one is minted, so references to resources created by this very forma work.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from svc.engine.errors import InvalidForma, ReferencedResourcesNotFound
from svc.engine.planner.inventory import Inventory
from svc.model import values
from svc.model.forma import Forma, Resource
from svc.model.opaque import opaque_fields
from svc.model.schema_cache import schema_of

Json = dict[str, Any]


@dataclass
class Desired:
    resource: Resource
    ksuid: str
    properties: Json  # translated: $ref envelopes, $parts templates


def assign_ksuids(forma: Forma, inventory: Inventory, new_id: Callable[[], str]) -> dict[tuple[str, str, str], str]:
    """(stack, type, label) of each forma resource → its KSUID."""
    ids: dict[tuple[str, str, str], str] = {}
    for resource in forma.resources:
        key = (resource.stack, resource.type, resource.label)
        if key in ids:
            raise InvalidForma(f"resource {resource.stack}/{resource.type}/{resource.label} is declared twice",
                               {"Resource": "/".join(key)})
        found = inventory.managed(*key)
        if found is None and resource.alias:
            found = inventory.managed(resource.stack, resource.type, resource.alias)
        if found is None:
            found = inventory.adoptable(resource.target, resource.type, resource.label)
        if found is None and resource.alias:
            found = inventory.adoptable(resource.target, resource.type, resource.alias)
        ids[key] = found.ksuid if found is not None else new_id()
    return ids


class Translator:
    def __init__(self, forma: Forma, inventory: Inventory, ids: dict[tuple[str, str, str], str]) -> None:
        self.inventory = inventory
        self.ids = ids
        self.schemas = {resource.type: resource.schema_ for resource in forma.resources}
        self.by_label_type: dict[tuple[str, str], list[str]] = {}
        for stack, type_, label in ids:
            self.by_label_type.setdefault((label, type_), []).append(stack)
        self.missing: list[Json] = []

    def ksuid_of(self, envelope: Json) -> str | None:
        label, type_, stack = envelope.get("$label"), envelope.get("$type"), envelope.get("$stack")
        if stack is None:
            stacks = self.by_label_type.get((label, type_), [])
            if len(stacks) == 1:
                stack = stacks[0]
        if (stack, type_, label) in self.ids:
            return self.ids[(stack, type_, label)]
        found = self.inventory.managed(stack, type_, label) or self.inventory.discovered(type_, label)
        return found.ksuid if found is not None else None

    def reference(self, envelope: Json) -> Json:
        ksuid = self.ksuid_of(envelope)
        if ksuid is None:
            self.missing.append({"Label": envelope.get("$label"), "Type": envelope.get("$type"),
                                 "Stack": envelope.get("$stack")})
            return dict(envelope)
        ref: Json = {"$ref": values.resource_uri(ksuid, str(envelope.get("$property", "")))}
        if envelope.get("$visibility") == "Opaque":
            ref["$visibility"] = "Opaque"
        if "$json" in envelope:
            ref["$json"] = envelope["$json"]
        return ref

    def secret(self, envelope: Json) -> bool:
        """Whether a reference reads a secret: marked so, or a property its producer's schema calls opaque (or
        one that holds such a property)."""
        if envelope.get("$visibility") == "Opaque":
            return True
        schema = self.schemas.get(str(envelope.get("$type")))
        ksuid = self.ksuid_of(envelope)
        stored = self.inventory.resource(ksuid) if ksuid is not None else None
        if schema is None and stored is not None and stored.document.get("Schema"):
            schema = schema_of(dict(stored.document["Schema"]))
        if schema is None:
            return False
        steps = [step.replace("\\.", ".").replace("\\:", ":")
                 for step in re.split(r"(?<!\\)\.", str(envelope.get("$property") or ""))]
        return opaque_fields(schema).at_path(int(step) if step.isdigit() else step for step in steps).holds_secret

    def convert(self, value: Any, where: str) -> Any:
        if values.is_res(value):
            return self.reference(value)
        if isinstance(value, str) and values.SPAN_START in value:
            # A reference interpolated into a plain string (the original product's rendering): a template.
            return self.convert({"$embed": True, "$template": value}, where)
        if values.is_embed(value):
            if "$parts" in value:
                parts = value["$parts"]
            else:
                try:
                    parts = values.parse_template(str(value.get("$template", "")))
                except ValueError as error:
                    raise InvalidForma(f"{where}: {error}", {"Field": where}) from error
            converted: list[Any] = []
            for part in parts:
                if values.is_res(part) and self.secret(part):
                    raise InvalidForma(f"{where}: a secret reference cannot be embedded in a string",
                                       {"Field": where})
                converted.append(self.reference(part) if values.is_res(part) else part)
            return {"$embed": True, "$parts": converted}
        if values.is_value(value) or values.is_ref(value):
            return dict(value)
        if isinstance(value, dict):
            return {key: self.convert(item, f"{where}.{key}") for key, item in value.items()}
        if isinstance(value, list):
            return [self.convert(item, f"{where}[{i}]") for i, item in enumerate(value)]
        return value


def translate(forma: Forma, inventory: Inventory, new_id: Callable[[], str]) -> list[Desired]:
    ids = assign_ksuids(forma, inventory, new_id)
    translator = Translator(forma, inventory, ids)
    desired = [Desired(resource, ids[(resource.stack, resource.type, resource.label)],
                       translator.convert(dict(resource.properties), f"{resource.stack}/{resource.label}"))
               for resource in forma.resources]
    if translator.missing:
        names = ", ".join(f"{m['Stack']}/{m['Type']}/{m['Label']}" for m in translator.missing)
        raise ReferencedResourcesNotFound(f"references to resources that do not exist: {names}",
                                          {"MissingResources": translator.missing})
    return desired
