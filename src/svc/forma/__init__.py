"""Formas: evaluating a user's Pkl forma into the typed forma (``svc.model.forma``) the agent plans from."""

from svc.forma.errors import FormaError
from svc.forma.evaluate import RenderedForma, evaluate_forma, forma_properties, render_forma

__all__ = ["FormaError", "RenderedForma", "evaluate_forma", "forma_properties", "render_forma"]
