"""Typed errors of the command service; the API turns each into ``{"error": Type, "data": {…}}``.

Every error names what to fix in ``message`` (used in logs and CLI output) and carries the
reference's machine-readable ``data``. No error ever contains an opaque (secret) value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from svc.engine.service import StoredCommand


class EngineError(Exception):
    """Base: a request the engine refuses. Subclasses fix the type name and HTTP status."""

    error_type: ClassVar[str] = "EngineError"
    status: ClassVar[int] = 400

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data or {}


class CyclesDetected(EngineError):
    error_type = "CyclesDetected"
    status = 400


class ReferencedResourcesNotFound(EngineError):
    error_type = "ReferencedResourcesNotFound"
    status = 400


class RequiredFieldMissingOnCreate(EngineError):
    error_type = "RequiredFieldMissingOnCreate"
    status = 400


class InvalidQuery(EngineError):
    error_type = "InvalidQueryError"
    status = 400


class InvalidForma(EngineError):
    """The forma JSON is malformed or names an unknown type, target, stack or plugin."""

    error_type = "InvalidForma"
    status = 400


class StackReferenceNotFound(EngineError):
    error_type = "StackReferenceNotFound"
    status = 400


class TargetReferenceNotFound(EngineError):
    error_type = "TargetReferenceNotFound"
    status = 400


class ConflictingCommands(EngineError):
    """``commands``: the unfinished commands still changing the stacks, as stored; the API renders them as
    ``data.ConflictingCommands``."""

    error_type = "ConflictingCommands"
    status = 409

    def __init__(self, message: str, commands: Sequence[StoredCommand] = ()) -> None:
        super().__init__(message)
        self.commands = list(commands)


class ReconcileRejected(EngineError):
    error_type = "ReconcileRejected"
    status = 409


class TargetAlreadyExists(EngineError):
    error_type = "TargetAlreadyExists"
    status = 409


class NonPortableResources(EngineError):
    error_type = "NonPortableResources"
    status = 409


class TargetReaped(EngineError):
    """The forma puts resources on a target the reaper removed; declaring the target again recovers it."""

    error_type = "TargetReaped"
    status = 409


class TargetHasDependents(EngineError):
    error_type = "TargetHasDependents"
    status = 409


class ResourceHasDependents(EngineError):
    error_type = "ResourceHasDependents"
    status = 409


class StackDeletedDuringApply(EngineError):
    error_type = "StackDeletedDuringApply"
    status = 409


class PatchRejected(EngineError):
    error_type = "PatchRejected"
    status = 422


class EmptyStackRejected(EngineError):
    error_type = "EmptyStackRejected"
    status = 422


class ReconcilePolicyRequired(EngineError):
    error_type = "ReconcilePolicyRequired"
    status = 403


class PlanChanged(EngineError):
    """A submission that carried the plan it expects (a saved plan, or the plan a user confirmed) plans something
    else now: the inventory moved since. ``data.Moved``: what differs (``planner.fingerprint.moved``)."""

    error_type = "PlanChanged"
    status = 409


class SealedSecretUnreadable(EngineError):
    """A saved plan's forma holds secrets sealed under another agent's key (or one that was lost)."""

    error_type = "SealedSecretUnreadable"
    status = 400


class NotLeading(EngineError):
    """This agent does not lead (it is handing the lease over, or has not taken it yet): another agent will take
    the submission. Nothing was stored; retry."""

    error_type = "NotLeading"
    status = 503


# -- plugin management (POST /plugins/install | uninstall | update) ----------------------------------------------


class PluginNotFound(EngineError):
    """No installed plugin has that name (uninstall, update), or the package source has no such distribution."""

    error_type = "PluginNotFound"
    status = 404


class NotASvcPlugin(EngineError):
    """The distribution registers no ``svc.plugins`` entry point, or its manifest or schema does not evaluate; it
    was taken out again."""

    error_type = "NotASvcPlugin"
    status = 422


class PluginInUse(EngineError):
    """Commands this agent is running change resources of the plugin: it is not stopped under them."""

    error_type = "PluginInUse"
    status = 409


class NoPackageSource(EngineError):
    """Neither the request nor the agent's own installation names where plugins come from."""

    error_type = "NoPackageSource"
    status = 400


class PluginInstallFailed(EngineError):
    """pip failed (an unreachable index, a dependency conflict) or the plugin's process did not start."""

    error_type = "PluginInstallFailed"
    status = 502
