"""Formas: evaluating a user's Pkl forma into the typed forma (``svc.model.forma``) the agent plans from."""

from svc.forma.errors import FormaError
from svc.forma.evaluate import evaluate_forma, forma_properties

__all__ = ["FormaError", "evaluate_forma", "forma_properties"]
