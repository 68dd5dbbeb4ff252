"""Evaluating a forma: its CLI properties, or the whole forma with their values."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from svc.forma.descriptor_cache import CACHED_CLASSES, DescriptorCache
from svc.forma.errors import FormaError, from_pkl_error
from svc.model.forma import Forma, Property
from svc.model.schema import Schema
from svc.pkl import EvaluationRequest, PklError, bundled_modules, shared_server
from svc.pkl.ext import ext_readers
from svc.pkl.packages import PackageEnvironment
from svc.pkl.projects import PklProjectError, environment_for

PROPERTIES_MODE = "properties"
_NOT_A_FORMA = '{path} is not a forma; start it with: amends "@svc/forma.pkl"'


def evaluate_document(path: Path, properties: Mapping[str, str]) -> dict[str, Any]:
    """The JSON document the forma at ``path`` renders, with ``properties`` as its ``prop:`` values."""
    return _render(path, _environment(path), properties)


def _environment(path: Path) -> PackageEnvironment:
    if not path.is_file():
        raise FormaError(f"forma file {path} does not exist")
    try:
        return environment_for(path)
    except PklProjectError as exc:
        raise FormaError(str(exc)) from exc


def _render(path: Path, environment: PackageEnvironment, properties: Mapping[str, str]) -> dict[str, Any]:
    request = EvaluationRequest(
        module_uri=path.resolve().as_uri(),
        readers=[bundled_modules(), *environment.readers],
        resource_readers=ext_readers(path.resolve().parent),
        properties=dict(properties),
        project=environment.project,
    )
    try:
        text = shared_server().evaluate(request)
    except PklError as exc:
        raise from_pkl_error(exc) from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormaError(_NOT_A_FORMA.format(path=path)) from exc
    if not isinstance(document, dict):
        raise FormaError(_NOT_A_FORMA.format(path=path))
    return document


def forma_properties(path: Path) -> dict[str, Property]:
    """The forma's CLI properties, by name: each becomes the flag ``--<flag>``."""
    document = evaluate_document(path, {"$cmd": "eval", "$mode": PROPERTIES_MODE})
    try:
        return {name: Property.model_validate(p) for name, p in document.get("Properties", {}).items()}
    except (ValidationError, AttributeError) as exc:
        raise FormaError(_NOT_A_FORMA.format(path=path)) from exc


def evaluate_forma(
    path: Path, *, command: str = "eval", mode: str = "reconcile", flags: Mapping[str, str] | None = None
) -> Forma:
    """Evaluates and validates the forma at ``path``; ``flags`` are the CLI property values."""
    environment = _environment(path)
    descriptors = DescriptorCache.open(environment.project)
    document = _render(path, environment, {**(flags or {}), "$cmd": command, "$mode": mode,
                                           CACHED_CLASSES: "\n".join(descriptors.offered())})
    if "Resources" not in document:
        raise FormaError(_NOT_A_FORMA.format(path=path))
    try:
        forma = Forma.model_validate(_with_descriptors(document, descriptors))
    except (ValidationError, KeyError) as exc:  # Pkl rendered the forma; a mismatch here is svc's own bug
        raise FormaError(f"{path}: the evaluated forma does not have the expected shape: {exc}") from exc
    descriptors.save()
    return forma


def _with_descriptors(document: dict[str, Any], descriptors: DescriptorCache) -> dict[str, Any]:
    """The document with each resource's descriptor in place. ``@svc/forma.pkl`` lists each resource class's
    descriptor once (``Schemas``, null for a class whose descriptor ``descriptors`` kept) and has each resource
    name its own (``SchemaIndex``): each is validated once, and the resources of a class share the one (frozen)
    ``Schema``, which pydantic takes as it is."""
    schemas = []
    for key, schema in zip(document.pop("SchemaKeys", None) or (), document.pop("Schemas", None) or (), strict=True):
        if schema is None:
            schemas.append(Schema.model_validate_json(descriptors.schema(key)))
        else:
            schemas.append(Schema.model_validate(schema))
            descriptors.keep(key, schema)
    for resource in document["Resources"] if isinstance(document["Resources"], list) else ():
        index = resource.pop("SchemaIndex", None) if isinstance(resource, dict) else None
        if isinstance(index, int) and 0 <= index < len(schemas):
            resource["Schema"] = schemas[index]
    return document
