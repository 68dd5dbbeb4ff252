"""Waiting until a service is stable on a given task definition, with progress lines.

Stable means what ECS's own ``services_stable`` waiter checks (one deployment left, running equals
desired), and additionally that the service still points at the revision we deployed: a circuit
breaker or a canary alarm that rolls back also ends in "one deployment, all running", but on the
old revision, and that must be reported as a failure rather than a success.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from svc.deploy.errors import DeployError


@dataclass(frozen=True)
class Rollout:
    """What one DescribeServices answer says about the deployment in progress."""

    task_definition: str
    running: int
    desired: int
    pending: int
    deployments: int
    rollout_state: str
    rollout_reason: str
    last_event: str

    @classmethod
    def of(cls, service: dict[str, Any]) -> Rollout:
        deployments = service.get("deployments", [])
        primary = next((d for d in deployments if d.get("status") == "PRIMARY"), {})
        events = service.get("events") or [{}]
        return cls(
            task_definition=service.get("taskDefinition", ""),
            running=int(service.get("runningCount", 0)),
            desired=int(service.get("desiredCount", 0)),
            pending=int(service.get("pendingCount", 0)),
            deployments=len(deployments),
            rollout_state=primary.get("rolloutState", ""),
            rollout_reason=" ".join(str(primary.get("rolloutStateReason", "")).split()),
            last_event=" ".join(str(events[0].get("message", "")).split()),
        )

    def is_stable(self) -> bool:
        return self.deployments == 1 and self.running == self.desired and self.pending == 0

    def summary(self) -> str:
        state = f", rollout {self.rollout_state}" if self.rollout_state else ""
        return (f"{self.running}/{self.desired} running, {self.pending} pending, "
                f"{self.deployments} deployment{'s' if self.deployments != 1 else ''}{state}")


def wait_until_stable(
    describe: Callable[[], dict[str, Any]],
    target: str,
    *,
    interval: float,
    timeout: float,
    progress: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Rollout:
    """Polls ``describe`` every ``interval`` seconds until the service is stable on ``target``."""
    started = clock()
    last_summary = ""
    while True:
        rollout = Rollout.of(describe())
        elapsed = clock() - started
        if rollout.rollout_state == "FAILED":
            reason = rollout.rollout_reason or rollout.last_event
            raise DeployError(f"the deployment of {_short(target)} failed: {reason}; "
                              "the circuit breaker returns the service to its last working revision")
        if rollout.task_definition != target:
            cause = f" ({rollout.last_event})" if rollout.last_event else ""
            raise DeployError(f"the service now runs {_short(rollout.task_definition)} instead of {_short(target)}: "
                              f"the deployment was rolled back or replaced{cause}")
        # Progress only when something changed, so a long wait does not flood the terminal.
        if rollout.summary() != last_summary:
            progress(f"[{elapsed:5.0f}s] {_short(target)}: {rollout.summary()}")
            last_summary = rollout.summary()
        if rollout.is_stable():
            return rollout
        if elapsed + interval > timeout:
            raise DeployError(f"the service was not stable after {timeout:.0f}s ({rollout.summary()}); "
                              "it may still converge: check its events with aws ecs describe-services")
        sleep(interval)


def _short(task_definition_arn: str) -> str:
    """``arn:…:task-definition/svc-agent:7`` → ``svc-agent:7``."""
    return task_definition_arn.rsplit("/", 1)[-1]
