"""The CLI's block of ``svc:/Config.pkl`` (``cli``).

A command reads this block only, and without pydantic: the block is a few ``msgspec`` structs decoded in C
(``decode_cli_block``). The agent's models (``svc.config.model``, pydantic) are not even defined in a command's
process; they take this block in as it is decoded here.
"""

from __future__ import annotations

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
    if isinstance(block, Mapping) and isinstance(api := block.get("api"), Mapping):
        retry_for = api.get("retryFor")
        if isinstance(retry_for, int | float) and not isinstance(retry_for, bool):
            # msgspec reads a number as seconds
            block = {**block, "api": {**api, "retryFor": retry_for / 1000}}
    try:
        return msgspec.convert(block, CliConfig, strict=False)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc).replace("`$.", "`cli.").replace("`$`", "`cli`")) from None
