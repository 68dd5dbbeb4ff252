"""Pkl evaluation through the real ``pkl server``, with svc's module readers."""

from svc.pkl.binary import PklBinaryError, find_pkl
from svc.pkl.evaluator import evaluate_json
from svc.pkl.readers import PluginConfigReader, TreeModuleReader, bundled_modules, plugin_modules
from svc.pkl.server import (
    Conversation,
    EvaluationRequest,
    PklError,
    PklServer,
    PklServerError,
    shared_server,
    stop_shared_server,
)

__all__ = [
    "Conversation",
    "EvaluationRequest",
    "PklBinaryError",
    "PklError",
    "PklServer",
    "PklServerError",
    "PluginConfigReader",
    "TreeModuleReader",
    "bundled_modules",
    "evaluate_json",
    "find_pkl",
    "plugin_modules",
    "shared_server",
    "stop_shared_server",
]
