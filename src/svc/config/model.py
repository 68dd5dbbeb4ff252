"""Typed Python view of ``svc:/Config.pkl``: the JSON the module renders, validated by pydantic.

Pkl is the only source of defaults and constraints (the models have no defaults of their own);
they mirror its classes so that the rest of the code works with attributes, not dictionaries. Durations arrive as
milliseconds and become ``timedelta``. The CLI's block is ``svc.config.cli_model`` (a command imports only it).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator
from pydantic.alias_generators import to_camel

from svc.config.cli_model import ApiConfig, CliAuthConfig, CliConfig, UpgradeConfig, decode_cli_block

DatastoreType = Literal["sqlite", "postgres", "auroradataapi"]
LogLevel = Literal["debug", "info", "warn", "error"]


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


def expand_path(value: str) -> Path:
    return Path(value).expanduser()


class ServerConfig(ConfigModel):
    bind_address: str
    port: int
    tls_cert: str | None = None
    tls_key: str | None = None

    @property
    def tls_enabled(self) -> bool:
        return bool(self.tls_cert and self.tls_key)


class SqliteConfig(ConfigModel):
    file_path: str


class PostgresConfig(ConfigModel):
    host: str
    port: int
    user: str
    password: str = Field(repr=False)
    database: str
    schema_: str = Field(alias="schema")
    connection_params: str


class AuroraDataApiConfig(ConfigModel):
    cluster_arn: str
    secret_arn: str
    database: str
    region: str
    endpoint: str


class DatastoreConfig(ConfigModel):
    datastore_type: DatastoreType
    sqlite: SqliteConfig
    postgres: PostgresConfig
    aurora_data_api: AuroraDataApiConfig = Field(alias="auroraDataAPI")


class RetryConfig(DurationModel):
    status_check_interval: timedelta
    max_retries: int
    retry_delay: timedelta


class SynchronizationConfig(DurationModel):
    enabled: bool
    interval: timedelta


class DiscoveryConfig(DurationModel):
    enabled: bool
    interval: timedelta
    label_tag_keys: tuple[str, ...]


class LoggingConfig(ConfigModel):
    file_path: str
    file_log_level: LogLevel
    console_log_level: LogLevel


class OtlpConfig(ConfigModel):
    enabled: bool
    endpoint: str
    protocol: Literal["grpc", "http"]
    insecure: bool
    temporality: Literal["delta", "cumulative"]


class PrometheusConfig(ConfigModel):
    enabled: bool


class OTelConfig(DurationModel):
    enabled: bool
    service_name: str
    traces: bool
    metrics: bool
    logs: bool
    metrics_interval: timedelta
    otlp: OtlpConfig
    prometheus: PrometheusConfig


class StackExpirerConfig(DurationModel):
    enabled: bool
    interval: timedelta


class TargetReaperConfig(DurationModel):
    enabled: bool = True
    interval: timedelta = timedelta(minutes=1)
    default_max_unreachable: timedelta = timedelta(hours=24)


class LeadershipConfig(DurationModel):
    lease_duration: timedelta = timedelta(seconds=10)
    renew_interval: timedelta = timedelta(seconds=2)
    poll_interval: timedelta = timedelta(milliseconds=250)
    advertise_url: str | None = None


class AuthorizedUser(ConfigModel):
    username: str
    password: str = Field(repr=False)


class AgentAuthConfig(ConfigModel):
    type: Literal["basic"]
    authorized_users: tuple[AuthorizedUser, ...]


class RateLimitConfig(ConfigModel):
    scope: Literal["Namespace"]
    max_requests_per_second_for_namespace: int


class LabelConfig(ConfigModel):
    default_query: str | None = None
    resource_overrides: dict[str, str] | None = None


class FilterCondition(ConfigModel):
    property_path: str
    property_value: str | None = None


class DiscoveryFilter(ConfigModel):
    resource_types: tuple[str, ...]
    conditions: tuple[FilterCondition, ...]


class ResourcePluginConfig(ConfigModel):
    """A plugin's ``PluginConfig``: the base fields, plus the plugin's own fields in ``settings``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="allow",
                              defer_build=True)

    type: str
    enabled: bool
    rate_limit: RateLimitConfig | None = None
    label_config: LabelConfig | None = None
    discovery_filters: tuple[DiscoveryFilter, ...]
    resource_types_to_discover: tuple[str, ...] | None = None
    retry: RetryConfig | None = None

    @property
    def settings(self) -> dict[str, Any]:
        """The plugin-specific fields, as Pkl rendered them."""
        return dict(self.model_extra or {})


class AgentConfig(ConfigModel):
    server: ServerConfig
    datastore: DatastoreConfig
    resource_plugins: tuple[ResourcePluginConfig, ...]
    retry: RetryConfig
    synchronization: SynchronizationConfig
    discovery: DiscoveryConfig
    logging: LoggingConfig
    o_tel: OTelConfig = Field(alias="oTel")
    stack_expirer: StackExpirerConfig
    target_reaper: TargetReaperConfig = Field(default_factory=TargetReaperConfig)
    leadership: LeadershipConfig = Field(default_factory=LeadershipConfig)
    sealing_key: str | None = Field(default=None, repr=False)
    auth: AgentAuthConfig | None = None


class SvcConfig(ConfigModel):
    # The cli block is the CLI's own structs (``svc.config.cli_model``), decoded as a command decodes it.
    model_config = ConfigDict(arbitrary_types_allowed=True)

    agent: AgentConfig
    cli: CliConfig

    @field_validator("cli", mode="before")
    @classmethod
    def _cli(cls, value: Any) -> Any:
        return value if isinstance(value, CliConfig) else decode_cli_block(value)

    @field_serializer("cli")
    def _cli_document(self, cli: CliConfig) -> dict[str, Any]:
        return cli.to_json()


__all__ = ["ApiConfig", "CliAuthConfig", "CliConfig", "UpgradeConfig"]  # the CLI's block, as part of the whole
