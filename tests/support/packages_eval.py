"""Evaluating a Pkl module outside any project with every installed package importable (``@svc/…``, ``@aws/…``),
as a forma's imports resolve, to the JSON it renders."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from svc.pkl import EvaluationRequest, shared_server
from svc.pkl.packages import implicit_environment


def evaluate_with_packages(module_uri: str, *, module_text: str | None = None,
                           properties: Mapping[str, str] | None = None) -> Any:
    """The JSON output of the module at ``module_uri`` (or of ``module_text`` under that URI)."""
    environment = implicit_environment()
    request = EvaluationRequest(module_uri=module_uri, module_text=module_text, readers=environment.readers,
                                project=environment.project, properties=dict(properties or {}))
    return json.loads(shared_server().evaluate(request))
