"""A forma's secrets sealed for a saved plan (``svc plan -o``): the plan file holds the forma, but never a secret
in plain text.

Each secret (where the schema or an ``Opaque`` envelope says one is, as ``values.hash_secrets`` finds them) is
replaced by ``{"$sealed": token}``: the secret's value or envelope whole, encrypted under this agent's key
(``sealing.Sealer``), so that applying the saved plan restores it exactly and only this agent can. Everything
else in the forma stays plain JSON a reader can check.
"""

from __future__ import annotations

from typing import Any

from svc.engine.errors import SealedSecretUnreadable
from svc.engine.planner.validate import Catalog
from svc.engine.sealing import Sealer, SealError
from svc.model import values
from svc.model.forma import Forma, Resource
from svc.model.opaque import OpaqueFields
from svc.model.schema import Schema

Json = dict[str, Any]
SEALED = "$sealed"


def seal_forma(forma: Forma, sealer: Sealer, catalog: Catalog) -> Json:
    """The forma JSON with each secret sealed."""
    document = forma.to_json()
    for resource, entry in zip(forma.resources, document.get("Resources", []), strict=True):
        places = _secret_places(resource, catalog.types.get(resource.type))
        entry["Properties"] = values.conceal_secrets(dict(resource.properties), places,
                                                     lambda secret: {SEALED: sealer.seal(secret)})
    return document


def _secret_places(resource: Resource, installed: Schema | None) -> OpaqueFields:
    """Where the forma's schema or the installed plugin's says secrets are: sealing one more value than needed
    costs nothing, missing one would write it in plain text."""
    paths = set(_opaque_paths(resource.schema_)) | set(_opaque_paths(installed) if installed is not None else ())
    return OpaqueFields.of_paths(paths)


def _opaque_paths(schema: Schema) -> tuple[str, ...]:
    return schema.opaque_paths or tuple(key for key, hint in schema.hints.items() if hint.opaque)


def unseal_forma(forma: Forma, sealer: Sealer) -> Forma:
    """The forma with each sealed secret opened (``forma`` itself when it holds none)."""
    resources = []
    changed = False
    for resource in forma.resources:
        opened = _opened(resource.properties, sealer)
        if opened is not resource.properties:
            changed = True
            resource = resource.model_copy(update={"properties": opened})
        resources.append(resource)
    return forma.model_copy(update={"resources": tuple(resources)}) if changed else forma


def _opened(value: Any, sealer: Sealer) -> Any:
    """``value`` with each ``{"$sealed": token}`` opened; ``value`` itself (the same object) when it holds none."""
    if isinstance(value, dict):
        token = value.get(SEALED)
        if isinstance(token, str) and len(value) == 1:
            try:
                return sealer.open(token)
            except SealError:
                raise SealedSecretUnreadable(
                    "the forma holds secrets sealed by another agent (a plan saved against another agent, or "
                    "before this agent's key was replaced); make the plan again against this agent", {}) from None
        opened = {key: _opened(item, sealer) for key, item in value.items()}
        return value if all(opened[key] is value[key] for key in value) else opened
    if isinstance(value, list):
        items = [_opened(item, sealer) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    return value
