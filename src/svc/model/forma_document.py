"""The parts of a forma's JSON document a command reads without the forma model (``svc.model.forma``, pydantic,
which the agent validates a submission with): the forma's CLI properties, and where its descriptors are listed.
A command that sends a forma as Pkl rendered it needs no more, and so never imports pydantic.
"""

from __future__ import annotations

from typing import Literal

from svc.model.wire import Wire

LISTED_SCHEMAS = "Schemas"  # each distinct descriptor once; each resource names its own by ``SchemaIndex``


class Property(Wire, kw_only=True, frozen=True, rename="pascal"):
    """A CLI property of the forma: the flag ``--<flag>``; required when it has no default."""

    flag: str
    type: Literal["String", "Boolean", "Int", "Float"] = "String"
    default: str | bool | int | float | None = None
    value: str | bool | int | float | None = None
    description: str | None = None

    @property
    def required(self) -> bool:
        return self.default is None
