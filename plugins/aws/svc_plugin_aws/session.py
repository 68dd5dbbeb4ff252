"""boto3 clients for a target: the standard credential chain, the target's region, profile and endpoint.

Nothing secret is ever configured: ``boto3.Session(profile_name=…, region_name=…)`` finds credentials in
the environment, the shared config and credentials files (the target's ``Profile`` picks a section), or
the container or instance role. Sessions and clients are cached per target, because building them is
slow (tens of milliseconds) and boto3 clients are safe to share between threads.

boto3 itself is imported with the first session: its import was most of the plugin process's start, which the
agent waits for before it answers.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ProfileNotFound

from svc.plugins.sdk import ErrorCode, Json, PluginError

# The agent retries (with backoff on Throttling) and rate-limits; botocore's own retries stay short so a call
# answers within the agent's deadline (made into botocore's Config with the first session).
_BOTO_CONFIG = {"retries": {"max_attempts": 2, "mode": "standard"}, "connect_timeout": 10, "read_timeout": 30,
                "max_pool_connections": 64}


@dataclass(frozen=True)
class Target:
    """What the plugin needs of a target's config (``@aws/aws.pkl`` ``Config``)."""

    region: str
    profile: str | None = None
    endpoint_url: str | None = None

    @classmethod
    def of(cls, config: Json) -> Target:
        region = config.get("Region")
        if not isinstance(region, str) or not region:
            raise PluginError(ErrorCode.INVALID_REQUEST, "the AWS target has no Region")
        return cls(region, config.get("Profile") or None, config.get("EndpointUrl") or None)


def endpoint_url(target: Target, service: str) -> str | None:
    """The target's ``EndpointUrl``, unless botocore's service-specific variable (``AWS_ENDPOINT_URL_<SERVICE>``,
    e.g. ``AWS_ENDPOINT_URL_CLOUDCONTROL``) names one for ``service``: then botocore's own resolution, which reads
    it, wins (an explicit endpoint would override it). So one target can reach, say, moto for the native types
    and a Cloud Control endpoint of its own."""
    if os.environ.get(f"AWS_ENDPOINT_URL_{service.upper().replace('-', '_')}"):
        return None
    return target.endpoint_url


@dataclass
class Aws:
    """The clients of one target, made on first use."""

    target: Target
    session: Any
    config: Any  # botocore's Config, for every client
    _clients: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def region(self) -> str:
        return self.target.region

    def client(self, service: str) -> Any:
        with self._lock:
            found = self._clients.get(service)
            if found is None:
                found = self.session.client(service, region_name=self.target.region,
                                            endpoint_url=endpoint_url(self.target, service), config=self.config)
                self._clients[service] = found
            return found


class Sessions:
    """One ``Aws`` per distinct target config, shared by every call to it."""

    def __init__(self) -> None:
        self._cache: dict[Target, Aws] = {}
        self._lock = threading.Lock()

    def for_target(self, config: Json) -> Aws:
        target = Target.of(config)
        with self._lock:
            found = self._cache.get(target)
            if found is None:
                import boto3
                from botocore.config import Config

                try:
                    session = boto3.Session(profile_name=target.profile, region_name=target.region)
                except ProfileNotFound as error:
                    raise PluginError(ErrorCode.INVALID_CREDENTIALS,
                                      f"the AWS profile {target.profile!r} of the target is not in the shared "
                                      f"config or credentials files: {error}") from None
                found = self._cache[target] = Aws(target, session, Config(**_BOTO_CONFIG))
            return found
