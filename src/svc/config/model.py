"""Typed Python view of ``svc:/Config.pkl``: the JSON the module renders, validated by pydantic.

Pkl is the only source of defaults and constraints (the models have no defaults of their own);
they mirror its classes so that the rest of the code works with attributes, not dictionaries. Durations arrive as
milliseconds and become ``timedelta``.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

DatastoreType = Literal["sqlite", "postgres", "auroradataapi"]
LogLevel = Literal["debug", "info", "warn", "error"]


class _Model(BaseModel):
    # defer_build: a model's validator is built when it first validates, not when this module is imported. A CLI
    # command validates the cli block only, and building every agent model had cost it 25 ms of its CPU.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid",
                              defer_build=True)


def _milliseconds(value: Any) -> Any:
    return timedelta(milliseconds=value) if isinstance(value, (int, float)) else value


class _Durations(_Model):
    """Models whose ``timedelta`` fields arrive from Pkl as milliseconds."""

    @field_validator("*", mode="before")
    @classmethod
    def _durations(cls, value: Any, info: Any) -> Any:
        field = cls.model_fields[info.field_name]
        return _milliseconds(value) if field.annotation is timedelta else value


def expand_path(value: str) -> Path:
    return Path(value).expanduser()


class ServerConfig(_Model):
    bind_address: str
    port: int
    tls_cert: str | None = None
    tls_key: str | None = None

    @property
    def tls_enabled(self) -> bool:
        return bool(self.tls_cert and self.tls_key)


class SqliteConfig(_Model):
    file_path: str


class PostgresConfig(_Model):
    host: str
    port: int
    user: str
    password: str = Field(repr=False)
    database: str
    schema_: str = Field(alias="schema")
    connection_params: str


class AuroraDataApiConfig(_Model):
    cluster_arn: str
    secret_arn: str
    database: str
    region: str
    endpoint: str


class DatastoreConfig(_Model):
    datastore_type: DatastoreType
    sqlite: SqliteConfig
    postgres: PostgresConfig
    aurora_data_api: AuroraDataApiConfig = Field(alias="auroraDataAPI")


class RetryConfig(_Durations):
    status_check_interval: timedelta
    max_retries: int
    retry_delay: timedelta


class SynchronizationConfig(_Durations):
    enabled: bool
    interval: timedelta


class DiscoveryConfig(_Durations):
    enabled: bool
    interval: timedelta
    label_tag_keys: tuple[str, ...]


class LoggingConfig(_Model):
    file_path: str
    file_log_level: LogLevel
    console_log_level: LogLevel


class OtlpConfig(_Model):
    enabled: bool
    endpoint: str
    protocol: Literal["grpc", "http"]
    insecure: bool
    temporality: Literal["delta", "cumulative"]


class PrometheusConfig(_Model):
    enabled: bool


class OTelConfig(_Durations):
    enabled: bool
    service_name: str
    traces: bool
    metrics: bool
    logs: bool
    metrics_interval: timedelta
    otlp: OtlpConfig
    prometheus: PrometheusConfig


class StackExpirerConfig(_Durations):
    enabled: bool
    interval: timedelta


class TargetReaperConfig(_Durations):
    enabled: bool = True
    interval: timedelta = timedelta(minutes=1)
    default_max_unreachable: timedelta = timedelta(hours=24)


class LeadershipConfig(_Durations):
    lease_duration: timedelta = timedelta(seconds=10)
    renew_interval: timedelta = timedelta(seconds=2)
    poll_interval: timedelta = timedelta(milliseconds=250)
    advertise_url: str | None = None


class AuthorizedUser(_Model):
    username: str
    password: str = Field(repr=False)


class AgentAuthConfig(_Model):
    type: Literal["basic"]
    authorized_users: tuple[AuthorizedUser, ...]


class RateLimitConfig(_Model):
    scope: Literal["Namespace"]
    max_requests_per_second_for_namespace: int


class LabelConfig(_Model):
    default_query: str | None = None
    resource_overrides: dict[str, str] | None = None


class FilterCondition(_Model):
    property_path: str
    property_value: str | None = None


class DiscoveryFilter(_Model):
    resource_types: tuple[str, ...]
    conditions: tuple[FilterCondition, ...]


class ResourcePluginConfig(_Model):
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


class AgentConfig(_Model):
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


class ApiConfig(_Durations):
    url: str
    port: int
    retry_for: timedelta

    @property
    def base_url(self) -> str:
        # Seed 000 §2: `url` is the agent's hostname, or `https://<service_host>` when TLS is used.
        scheme = "" if "://" in self.url else "http://"
        return f"{scheme}{self.url}:{self.port}"


class CliAuthConfig(_Model):
    type: Literal["basic"]
    username: str
    password: str = Field(repr=False)


class UpgradeConfig(_Model):
    index_url: str | None = None
    find_links: tuple[str, ...]


class CliConfig(_Model):
    api: ApiConfig
    auth: CliAuthConfig | None = None
    upgrade: UpgradeConfig


class SvcConfig(_Model):
    agent: AgentConfig
    cli: CliConfig
