"""The CLI's block of ``svc:/Config.pkl`` (``cli``).

A command reads this block only, and without pydantic: the block is a few ``msgspec`` structs decoded in C
(``decode_cli_block``). The agent's models (``svc.config.model``, pydantic) are not even defined in a command's
process; they take this block in as it is decoded here.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Literal

import msgspec


class ApiConfig(msgspec.Struct, kw_only=True, frozen=True, rename="camel", forbid_unknown_fields=True):
    url: str
    port: int
    retry_for: timedelta

    @property
    def base_url(self) -> str:
        # Seed 000 §2: `url` is the agent's hostname, or `https://<service_host>` when TLS is used.
        scheme = "" if "://" in self.url else "http://"
        return f"{scheme}{self.url}:{self.port}"


class CliAuthConfig(msgspec.Struct, kw_only=True, frozen=True, rename="camel", forbid_unknown_fields=True):
    type: Literal["basic"]
    username: str
    password: str

    def __repr__(self) -> str:  # never the password (a config in a log or an error)
        return f"CliAuthConfig(type={self.type!r}, username={self.username!r}, password=…)"


class UpgradeConfig(msgspec.Struct, kw_only=True, frozen=True, rename="camel", forbid_unknown_fields=True):
    index_url: str | None = None
    find_links: tuple[str, ...]


class CliConfig(msgspec.Struct, kw_only=True, frozen=True, rename="camel", forbid_unknown_fields=True):
    api: ApiConfig
    auth: CliAuthConfig | None = None
    upgrade: UpgradeConfig

    def to_json(self) -> dict[str, Any]:
        """The block again, durations as ISO 8601 (``decode_cli_block`` reads them back)."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


def decode_cli_block(block: Any) -> CliConfig:
    """The ``cli`` block as Pkl renders it (durations in milliseconds), or as ``CliConfig.to_json`` wrote it;
    ``ValueError`` saying which field is wrong otherwise."""
    try:
        return msgspec.convert(_durations_in_seconds(block, CliConfig), CliConfig, strict=False)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc).replace("`$.", "`cli.").replace("`$`", "`cli`")) from None


def _durations_in_seconds(document: Any, shape: type[msgspec.Struct]) -> Any:
    """``document`` with each ``timedelta`` field's number of milliseconds (Pkl's rendering of a Duration) in
    seconds, which is how msgspec reads a number as a ``timedelta``; what is not a number is left to it."""
    if not isinstance(document, Mapping):
        return document
    converted = dict(document)
    for name, is_duration, inner in _converted_fields(shape):
        value = converted.get(name)
        if is_duration and isinstance(value, int | float) and not isinstance(value, bool):
            converted[name] = value / 1000
        elif inner is not None:
            converted[name] = _durations_in_seconds(value, inner)
    return converted


@functools.cache
def _converted_fields(shape: type[msgspec.Struct]) -> list[tuple[str, bool, type[msgspec.Struct] | None]]:
    """Each field of ``shape`` as ``_durations_in_seconds`` needs it: its name in the document, whether it is a
    duration, the struct it holds if any. Worked out once per shape: msgspec evaluates the annotations each time it
    is asked (half of reading the config, which every command does)."""
    fields = []
    for field in msgspec.structs.fields(shape):
        inner = next((kind for kind in (field.type, *typing.get_args(field.type))
                      if isinstance(kind, type) and issubclass(kind, msgspec.Struct)), None)
        fields.append((field.encode_name, field.type is timedelta, inner))
    return fields
