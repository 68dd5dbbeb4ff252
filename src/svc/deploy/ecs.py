"""The ECS calls behind ``svc deploy``: one service, its task definitions, its deployments.

Credentials and region come from boto3's standard chain (role, profile, environment); nothing is
read from the svc config. Every AWS failure becomes a one-line :class:`DeployError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.exceptions

from svc.deploy.errors import DeployError

AGENT_PORT = 49684
TaskDefinition = dict[str, Any]
Tags = list[dict[str, str]]


@dataclass(frozen=True)
class ServiceRef:
    """A service and its cluster; ``cluster=None`` is the account's default cluster (express shape)."""

    service: str
    cluster: str | None = None

    @property
    def cluster_label(self) -> str:
        return self.cluster or "default"

    def params(self) -> dict[str, str]:
        # Leaving the cluster out, rather than sending "default", is what the express shape prescribes.
        return {"cluster": self.cluster} if self.cluster else {}


def revision_of(task_definition_arn: str) -> tuple[str, int]:
    """``arn:…:task-definition/family:7`` (or ``family:7``) → ``("family", 7)``."""
    family, _, revision = task_definition_arn.rsplit("/", 1)[-1].rpartition(":")
    if not family or not revision.isdigit():
        raise DeployError(f"unexpected task definition reference {task_definition_arn!r}")
    return family, int(revision)


class Ecs:
    """A thin, error-translating layer over the ECS client for one service."""

    def __init__(self, ref: ServiceRef, region: str | None = None, endpoint_url: str | None = None) -> None:
        self.ref = ref
        try:
            self.client = boto3.session.Session().client("ecs", region_name=region, endpoint_url=endpoint_url)
        except botocore.exceptions.NoRegionError:
            raise DeployError("no AWS region is configured; pass --region or set AWS_REGION") from None
        except ValueError as exc:  # botocore's verdict on a malformed --endpoint-url
            raise DeployError(f"invalid --endpoint-url {endpoint_url!r}: {exc}") from None
        self.region = self.client.meta.region_name
        # Which fields RegisterTaskDefinition accepts, from botocore's model of the API: copying exactly
        # these keeps every registrable field (including ones added after this code was written) and
        # drops the read-only ones (arn, revision, status, registeredAt, compatibilities, …).
        model = self.client.meta.service_model.operation_model("RegisterTaskDefinition")
        self._registrable = frozenset(model.input_shape.members)

    @contextmanager
    def _calling(self, operation: str) -> Iterator[None]:
        try:
            yield
        except botocore.exceptions.ClientError as exc:
            raise self._translate(operation, exc) from None
        except botocore.exceptions.NoCredentialsError:
            raise DeployError("no AWS credentials found in the standard chain (instance or task role, "
                              "AWS_PROFILE, AWS_ACCESS_KEY_ID…); configure one and retry") from None
        except botocore.exceptions.EndpointConnectionError as exc:
            raise DeployError(f"cannot reach ECS at {exc.kwargs.get('endpoint_url', '?')}: check --region, "
                              "--endpoint-url and the network") from None
        except botocore.exceptions.BotoCoreError as exc:
            raise DeployError(f"ECS {operation} failed: {exc}") from None

    def _translate(self, operation: str, exc: botocore.exceptions.ClientError) -> DeployError:
        error = exc.response.get("Error", {})
        code, message = error.get("Code", "?"), " ".join(str(error.get("Message", "")).split())
        if code == "ClusterNotFoundException":
            if self.ref.cluster is None:
                return DeployError(f"the default cluster does not exist in {self.region}; pass --cluster with "
                                   "the cluster that runs the service (or --region)")
            return DeployError(f"cluster {self.ref.cluster} not found in {self.region}; check --cluster and --region")
        if code == "ServiceNotFoundException":
            return self._service_missing()
        if code in ("AccessDeniedException", "AccessDenied", "UnrecognizedClientException"):
            return DeployError(f"AWS refused ecs:{operation} ({code}): {message}; check the credentials' permissions")
        return DeployError(f"ECS {operation} failed ({code}): {message}")

    def _service_missing(self) -> DeployError:
        return DeployError(f"service {self.ref.service} not found in cluster {self.ref.cluster_label} "
                           f"({self.region}); check --service and --cluster")

    def describe_service(self) -> dict[str, Any]:
        with self._calling("DescribeServices"):
            answer = self.client.describe_services(services=[self.ref.service], **self.ref.params())
        services = answer.get("services", [])
        if not services:
            raise self._service_missing()
        service = services[0]
        if service.get("status") != "ACTIVE":
            raise DeployError(f"service {self.ref.service} in cluster {self.ref.cluster_label} is "
                              f"{service.get('status')}, not ACTIVE; it was deleted or is being deleted")
        return service

    def task_definition(self, reference: str) -> tuple[TaskDefinition, Tags]:
        with self._calling("DescribeTaskDefinition"):
            answer = self.client.describe_task_definition(taskDefinition=reference, include=["TAGS"])
        return answer["taskDefinition"], answer.get("tags") or []

    def register_with_image(self, current: TaskDefinition, tags: Tags, container: str, image: str) -> TaskDefinition:
        """Registers the next revision of ``current``'s family, identical but for ``container``'s image."""
        request = {key: value for key, value in current.items() if key in self._registrable}
        request["containerDefinitions"] = [
            {**definition, "image": image} if definition["name"] == container else definition
            for definition in current["containerDefinitions"]
        ]
        if tags:  # tags are not part of the description: DescribeTaskDefinition returns them beside it
            request["tags"] = tags
        with self._calling("RegisterTaskDefinition"):
            return self.client.register_task_definition(**request)["taskDefinition"]

    def active_revisions(self, family: str, below: int) -> tuple[list[int], int | None]:
        """Recent ACTIVE revisions of ``family`` (descending, up to the first one below ``below``), and
        that one: the revision a rollback returns to, or None when ``below`` is the oldest."""
        seen: list[int] = []
        with self._calling("ListTaskDefinitions"):
            pages = self.client.get_paginator("list_task_definitions").paginate(
                familyPrefix=family, status="ACTIVE", sort="DESC")
            for page in pages:
                revisions = [revision_of(arn) for arn in page.get("taskDefinitionArns", [])]
                numbers = [number for name, number in revisions if name == family]
                seen.extend(numbers)
                # Sorted descending, as asked, the first page holding an older revision is the last one
                # needed; an endpoint that ignores `sort` makes us read every page instead.
                if any(number < below for number in numbers) and numbers == sorted(numbers, reverse=True):
                    break
        seen.sort(reverse=True)
        previous = next((number for number in seen if number < below), None)
        recent = [number for number in seen if previous is None or number >= previous]
        return recent, previous

    def deploy(self, task_definition_arn: str) -> dict[str, Any]:
        """Points the service at ``task_definition_arn`` and replaces its task (forced new deployment)."""
        with self._calling("UpdateService"):
            return self.client.update_service(service=self.ref.service, taskDefinition=task_definition_arn,
                                              forceNewDeployment=True, **self.ref.params())["service"]


def agent_container(task_definition: TaskDefinition, wanted: str | None) -> dict[str, Any]:
    """The container that runs the agent: ``wanted``, the only one, or the one serving port 49684."""
    containers = task_definition.get("containerDefinitions", [])
    label = f"{task_definition.get('family')}:{task_definition.get('revision')}"
    names = ", ".join(container["name"] for container in containers)
    if wanted is not None:
        for container in containers:
            if container["name"] == wanted:
                return container
        raise DeployError(f"task definition {label} has no container {wanted}; its containers: {names}")
    if len(containers) == 1:
        return containers[0]
    serving = [container for container in containers
               if any(mapping.get("containerPort") == AGENT_PORT for mapping in container.get("portMappings", []))]
    if len(serving) == 1:
        return serving[0]
    raise DeployError(f"task definition {label} has several containers ({names}); pass --container with the agent's")
