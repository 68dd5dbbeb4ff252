"""The API renders command views on worker threads, never on the event loop: a view holds every update of its
command (tens of milliseconds for a few hundred), and the loop meanwhile runs the commands, one of which the
caller is following. Rendered in the route itself, following an apply with ``--wait`` slowed that apply down
(``bench/engine_cli.py --compare``). So no ``async def`` in ``svc.api.routes`` calls a view function itself; it
hands it to ``deps.in_thread`` (directly, or in a function or lambda given to it)."""

from __future__ import annotations

import ast
from pathlib import Path

import svc.api.answer_parts
import svc.api.command_views
import svc.api.routes

ROUTES = Path(svc.api.routes.__file__).parent
# The view functions that walk a command's updates.
VIEWS = {"stored_view", "command_view", "summary_view", "plan_view", "submit_response", "update_view",
         "update_summary", "change_view", "status_parts", "submit_parts"}


def _calls_on_the_loop(function: ast.AsyncFunctionDef) -> list[str]:
    """Names called in ``function``'s own body, not in the functions and lambdas it defines."""
    found: list[str] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.Call):
            func = node.func
            found.append(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute)
                         else "")
        pending.extend(ast.iter_child_nodes(node))
    return found


def views_rendered_on_the_loop(source: str) -> list[str]:
    return [f"{node.name} calls {name}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.AsyncFunctionDef) for name in _calls_on_the_loop(node) if name in VIEWS]


def test_the_check_tells_the_loop_from_a_worker_thread() -> None:
    source = ("async def a(r):\n    return stored_view(c)\n"
              "async def b(r):\n    return await deps.in_thread(lambda: stored_view(c))\n")
    assert views_rendered_on_the_loop(source) == ["a calls stored_view"]


def test_the_view_functions_named_exist() -> None:
    assert VIEWS <= set(vars(svc.api.command_views)) | set(vars(svc.api.answer_parts))


def test_no_route_renders_a_command_view_on_the_event_loop() -> None:
    offending = {path.name: found for path in sorted(ROUTES.glob("*.py"))
                 if (found := views_rendered_on_the_loop(path.read_text()))}
    assert offending == {}
