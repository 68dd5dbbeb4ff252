"""Formas: evaluating a user's Pkl forma into the typed forma the agent plans from."""

from svc.forma.errors import FormaError
from svc.forma.evaluate import evaluate_forma, forma_properties
from svc.forma.model import Description, Forma, Policy, Property, Resource, Stack, Target

__all__ = [
    "Description",
    "Forma",
    "FormaError",
    "Policy",
    "Property",
    "Resource",
    "Stack",
    "Target",
    "evaluate_forma",
    "forma_properties",
]
