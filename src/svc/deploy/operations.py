"""The two agent deployment operations: roll a new image out, or go back one revision."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from svc.deploy.ecs import Ecs, agent_container, revision_of
from svc.deploy.errors import DeployError
from svc.deploy.images import require_pinned, variant_of, version_of
from svc.deploy.rollout import wait_until_stable


@dataclass(frozen=True)
class WaitSettings:
    interval: float
    timeout: float
    progress: Callable[[str], None]


@dataclass(frozen=True)
class Outcome:
    """Where the service was and where it is now; ``version`` is what the CLI must upgrade to."""

    action: str
    cluster: str
    service: str
    container: str
    previous_task_definition: str
    task_definition: str
    image: str
    version: str | None
    recent_revisions: list[int] = field(default_factory=list)

    @property
    def upgrade_command(self) -> str | None:
        return f"svc upgrade --version {self.version}" if self.version else None

    def document(self) -> dict[str, Any]:
        """The machine-readable form, PascalCase like the rest of svc's documents."""
        document: dict[str, Any] = {
            "Action": self.action,
            "Cluster": self.cluster,
            "Service": self.service,
            "Container": self.container,
            "PreviousTaskDefinition": self.previous_task_definition,
            "TaskDefinition": self.task_definition,
            "Image": self.image,
            "Stable": True,
            "Version": self.version,
            "UpgradeCommand": self.upgrade_command,
        }
        if self.action == "rollback":
            document["RecentRevisions"] = self.recent_revisions
        return document


def _cluster_name(service: dict[str, Any]) -> str:
    return str(service.get("clusterArn", "")).rsplit("/", 1)[-1] or "default"


def _roll(ecs: Ecs, target: str, wait: WaitSettings) -> None:
    ecs.deploy(target)
    wait_until_stable(ecs.describe_service, target, interval=wait.interval, timeout=wait.timeout,
                      progress=wait.progress)


def update(ecs: Ecs, image: str, container: str | None, wait: WaitSettings, *,
           change_variant: bool = False) -> Outcome:
    """Registers a revision that differs from the service's current one only in the agent's image,
    deploys it with a forced new deployment and waits until the service is stable on it."""
    require_pinned(image)
    service = ecs.describe_service()
    current, tags = ecs.task_definition(service["taskDefinition"])
    agent = agent_container(current, container)
    if agent["image"] == image:
        raise DeployError(f"service {ecs.ref.service} already runs {image} "
                          f"({current['family']}:{current['revision']}); nothing to update")
    if not change_variant:
        _require_same_variant(agent["image"], image)
    registered = ecs.register_with_image(current, tags, agent["name"], image)
    target = registered["taskDefinitionArn"]
    wait.progress(f"Registered {registered['family']}:{registered['revision']} "
                  f"(was {current['family']}:{current['revision']}): {agent['image']} → {image}")
    _roll(ecs, target, wait)
    return Outcome("update", _cluster_name(service), ecs.ref.service, agent["name"],
                   current["taskDefinitionArn"], target, image, version_of(image))


def _require_same_variant(running: str, image: str) -> None:
    """A variant carries files the agent's config may name (``-rds-ca``: the CA bundle that verify-full TLS to
    the database reads): moving to another variant would start an agent that cannot reach its datastore."""
    before, after = variant_of(running), variant_of(image)
    if before is None or after is None or before == after:
        return
    repository = image.split("@", 1)[0].rsplit(":", 1)[0]
    suggestion = f"{repository}:{version_of(image)}{'-' + before if before else ''}"
    raise DeployError(f"the service runs {_variant_name(before)} ({running}) and {image} is {_variant_name(after)}; "
                      f"its config may need what the variant holds. Use {suggestion}, or pass --change-variant "
                      f"once the config no longer needs it")


def _variant_name(variant: str) -> str:
    return f"the -{variant} variant" if variant else "the plain variant"


def rollback(ecs: Ecs, container: str | None, wait: WaitSettings) -> Outcome:
    """Returns the service to the revision before its current one, with a forced new deployment."""
    service = ecs.describe_service()
    current_arn = service["taskDefinition"]
    family, revision = revision_of(current_arn)
    recent, previous = ecs.active_revisions(family, below=revision)
    if previous is None:
        raise DeployError(f"{family}:{revision} is the oldest active revision of {family}; "
                          "there is nothing to roll back to")
    target_definition, _ = ecs.task_definition(f"{family}:{previous}")
    target = target_definition["taskDefinitionArn"]
    agent = agent_container(target_definition, container)
    wait.progress(f"Recent revisions of {family}: {', '.join(map(str, recent))}; "
                  f"rolling back from {revision} to {previous} ({agent['image']})")
    _roll(ecs, target, wait)
    return Outcome("rollback", _cluster_name(service), ecs.ref.service, agent["name"], current_arn, target,
                   agent["image"], version_of(agent["image"]), recent)
