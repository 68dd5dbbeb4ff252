"""What ``svc extract`` reads: a forma as the agent returns it once applied (``GET /api/v1/resources``)."""

from __future__ import annotations

import copy
from typing import Any

from svc.model import values
from svc.model.opaque import opaque_fields
from svc.model.schema import Schema

Json = dict[str, Any]


def _split_templates(value: Any) -> Any:
    if values.is_embed(value) and "$template" in value:
        return {"$embed": True, "$parts": values.parse_template(value["$template"])}
    if isinstance(value, str) and values.SPAN_START in value:  # a reference in a plain string: a template too
        return {"$embed": True, "$parts": values.parse_template(value)}
    if isinstance(value, dict):
        return {key: _split_templates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_split_templates(item) for item in value]
    return value


def agent_view(forma: Json) -> Json:
    """The forma as ``GET /api/v1/resources`` returns it once applied: templates as parts, secrets hashed."""
    view = copy.deepcopy(forma)
    for resource in view["Resources"]:
        schema = Schema.model_validate(resource["Schema"])
        resource["Properties"] = values.hash_secrets(_split_templates(resource["Properties"]), opaque_fields(schema))
        resource.pop("Alias", None)
    for stack in view.get("Stacks") or []:
        stack.setdefault("CreatedAt", "2026-01-01T00:00:00Z")
    return view
