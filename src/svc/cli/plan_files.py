"""Saved plans: what ``svc plan -o FILE`` writes and ``svc apply FILE`` applies.

A plan file is plain JSON a reader can check::

    {"Format": "svc-plan/1", "CreatedAt": …, "SvcVersion": …, "Source": "main.pkl",
     "Command": "apply", "Mode": "reconcile", "Force": false,
     "Plan": {…the agent's simulation: ChangesRequired, Command (the changes), Fingerprint…},
     "Forma": {…the evaluated forma, each secret sealed by the agent: {"$sealed": token}…}}

Applying it submits ``Forma`` with ``Plan.Fingerprint`` as the plan it expects: the agent opens the secrets, plans
again under its admission lock and goes ahead only if that is exactly the saved plan (else 409 ``PlanChanged``,
and nothing changes). No secret is in it in plain text: the agent sealed them under its own key. A destroy's plan
(``svc plan --destroy -o FILE``) says ``"Command": "destroy"`` and ``"OnDependents"`` in place of the mode and
force, and is applied as that destroy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from svc import __version__
from svc.cli.errors import CliError
from svc.jsontext import dump_bytes
from svc.model import wire
from svc.model.wire import SimulationView, Wire, WireError
from svc.paths import replace_file

FORMAT = "svc-plan/1"
_HOW = "make one with: svc plan -o FILE FORMA.pkl"


@dataclass(frozen=True)
class SavedPlan:
    source: str  # the forma file it was made from, as given
    mode: str  # an apply's
    force: bool  # an apply's
    plan: SimulationView
    forma: dict[str, Any]  # secrets sealed
    created_at: str = ""
    svc_version: str = __version__
    on_dependents: str | None = None  # a destroy's plan has it, an apply's not

    @property
    def command(self) -> str:
        return "apply" if self.on_dependents is None else "destroy"

    @property
    def title(self) -> str:
        return plan_title(self.source, self.mode, self.force, self.on_dependents)

    def to_json(self) -> dict[str, Any]:
        return _PlanFile(CreatedAt=self.created_at or datetime.now(UTC).isoformat(timespec="seconds"),
                         SvcVersion=self.svc_version, Source=self.source,
                         Command=self.command, Mode=self.mode, Force=self.force,  # type: ignore[arg-type]
                         OnDependents=self.on_dependents, Plan=self.plan,  # type: ignore[arg-type]
                         Forma=self.forma).to_json()


def plan_title(source: str, mode: str, force: bool, on_dependents: str | None) -> str:
    """The ``svc plan`` command line that makes a plan: an apply's, or with ``on_dependents`` a destroy's."""
    if on_dependents is not None:
        return f"svc plan --destroy --on-dependents {on_dependents} {source}"
    return f"svc plan --mode {mode}{' --force' if force else ''} {source}"


class _PlanFile(Wire, kw_only=True, forbid_unknown_fields=True):
    """The file's shape; reading it validates every field at once."""

    Format: Literal["svc-plan/1"] = FORMAT
    CreatedAt: str = ""
    SvcVersion: str = ""
    Source: str
    Command: Literal["apply", "destroy"] = "apply"
    Mode: Literal["reconcile", "patch"]
    Force: bool
    OnDependents: Literal["abort", "cascade"] | None = None
    Plan: SimulationView
    Forma: dict[str, Any]


def is_saved_plan(path: Path) -> bool:
    """Whether ``svc apply`` takes ``path`` as a saved plan rather than a forma: anything but a ``.pkl`` file, or
    a file whose text starts as JSON does."""
    if path.suffix != ".pkl":
        return True
    try:
        with path.open("rb") as handle:
            return handle.read(64).lstrip().startswith(b"{")
    except OSError:
        return False


def write_plan(path: Path, saved: SavedPlan) -> None:
    """Writes the plan (readable by its owner only, as Terraform's: it says what the infrastructure is), whole or
    not at all."""
    try:
        replace_file(path, dump_bytes(saved.to_json(), indent=True) + b"\n", mode=0o600)
    except OSError as error:
        raise CliError(f"cannot write the plan to {path}: {error.strerror or error}") from None


def read_plan(path: Path) -> SavedPlan:
    """The saved plan in ``path``; a one-line ``CliError`` saying what is wrong with it otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{path} does not exist; {_HOW}") from None
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "it is not UTF-8 text"
        raise CliError(f"cannot read the plan {path}: {reason}; {_HOW}") from None
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        document = None
    found = _format_of(document)
    if found != FORMAT:
        what = f"a plan of another format ({found!r}; this svc reads {FORMAT})" if isinstance(found, str) else \
            "not a plan that svc plan -o wrote"
        raise CliError(f"{path} is {what}; svc apply takes a forma (.pkl) or a saved plan; {_HOW}")
    try:
        saved: _PlanFile = wire.decode(_PlanFile, document)
    except WireError as error:
        raise CliError(f"the plan {path} is damaged ({error}); {_HOW}") from None
    if saved.Plan.Fingerprint is None:
        raise CliError(f"the plan {path} is damaged (it has no fingerprint); {_HOW}")
    if (saved.Command == "destroy") != (saved.OnDependents is not None):
        raise CliError(f"the plan {path} is damaged (OnDependents belongs to a destroy's plan, and only there); {_HOW}")
    return SavedPlan(source=saved.Source, mode=saved.Mode, force=saved.Force, plan=saved.Plan, forma=saved.Forma,
                     created_at=saved.CreatedAt, svc_version=saved.SvcVersion, on_dependents=saved.OnDependents)


def _format_of(document: Any) -> Any:
    """The ``Format`` a JSON document names, if it is an object that names one."""
    return wire.decode(_Format, document).Format if isinstance(document, dict) else None


class _Format(Wire, kw_only=True):
    Format: Any = None
