"""Evaluating a Pkl file to JSON with svc's readers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from svc.pkl.ext import ext_readers
from svc.pkl.readers import ModuleReader, bundled_modules, plugin_modules
from svc.pkl.server import EvaluationRequest, shared_server


def default_readers() -> list[ModuleReader]:
    return [bundled_modules(), plugin_modules()]


def evaluate_json(
    path: Path,
    *,
    readers: Sequence[ModuleReader] | None = None,
    properties: Mapping[str, str] | None = None,
) -> Any:
    """Evaluates a Pkl file whose module renders JSON (``output.text``) and returns the parsed value."""
    request = EvaluationRequest(
        module_uri=path.resolve().as_uri(),
        readers=default_readers() if readers is None else readers,
        resource_readers=ext_readers(path.resolve().parent),
        properties=properties or {},
    )
    return json.loads(shared_server().evaluate(request))
