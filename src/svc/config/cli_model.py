"""The CLI's block of ``svc:/Config.pkl`` (``cli``), and the base classes of every config model.

A command validates this block only; the agent's models (``svc.config.model``) are not even defined in its
process: building them cost a command 25 ms of its CPU, defining their classes another 8 ms.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel


class ConfigModel(BaseModel):
    # defer_build: a model's validator is built when it first validates, not when its module is imported.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid",
                              defer_build=True)


def _milliseconds(value: Any) -> Any:
    return timedelta(milliseconds=value) if isinstance(value, (int, float)) else value


class DurationModel(ConfigModel):
    """Models whose ``timedelta`` fields arrive from Pkl as milliseconds."""

    @field_validator("*", mode="before")
    @classmethod
    def _durations(cls, value: Any, info: Any) -> Any:
        field = cls.model_fields[info.field_name]
        return _milliseconds(value) if field.annotation is timedelta else value


class ApiConfig(DurationModel):
    url: str
    port: int
    retry_for: timedelta

    @property
    def base_url(self) -> str:
        # Seed 000 §2: `url` is the agent's hostname, or `https://<service_host>` when TLS is used.
        scheme = "" if "://" in self.url else "http://"
        return f"{scheme}{self.url}:{self.port}"


class CliAuthConfig(ConfigModel):
    type: Literal["basic"]
    username: str
    password: str = Field(repr=False)


class UpgradeConfig(ConfigModel):
    index_url: str | None = None
    find_links: tuple[str, ...]


class CliConfig(ConfigModel):
    api: ApiConfig
    auth: CliAuthConfig | None = None
    upgrade: UpgradeConfig
