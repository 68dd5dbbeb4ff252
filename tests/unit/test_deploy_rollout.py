"""Waiting for a stable service: the decisions on a sequence of DescribeServices answers.

Moto cannot produce a failed rollout state; these answers have the shape ECS returns."""

from __future__ import annotations

from typing import Any

import pytest

from svc.deploy import DeployError
from svc.deploy.rollout import wait_until_stable

TARGET = "arn:aws:ecs:eu-west-1:123456789012:task-definition/svc-agent:8"
OLD = "arn:aws:ecs:eu-west-1:123456789012:task-definition/svc-agent:7"


def answer(running: int, deployments: int = 1, state: str = "IN_PROGRESS", definition: str = TARGET,
           reason: str = "", event: str = "") -> dict[str, Any]:
    primary = {"status": "PRIMARY", "rolloutState": state, "rolloutStateReason": reason, "taskDefinition": definition}
    return {"taskDefinition": definition, "desiredCount": 1, "runningCount": running, "pendingCount": 1 - running,
            "deployments": [primary] + [{"status": "ACTIVE"}] * (deployments - 1),
            "events": [{"message": event}] if event else []}


class Clock:
    """Time that passes only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def wait(answers: list[dict[str, Any]], timeout: float = 60) -> tuple[list[str], Clock]:
    clock, lines, remaining = Clock(), [], iter(answers)
    wait_until_stable(lambda: next(remaining), TARGET, interval=5, timeout=timeout, progress=lines.append,
                      clock=lambda: clock.now, sleep=clock.sleep)
    return lines, clock


def test_waits_through_two_deployments_until_one_runs_all_its_tasks() -> None:
    lines, clock = wait([answer(0, 2), answer(0, 2), answer(1, 2), answer(1, 1, "COMPLETED")])
    assert clock.sleeps == [5, 5, 5]
    # One line per change, not per poll.
    assert lines == [
        "[    0s] svc-agent:8: 0/1 running, 1 pending, 2 deployments, rollout IN_PROGRESS",
        "[   10s] svc-agent:8: 1/1 running, 0 pending, 2 deployments, rollout IN_PROGRESS",
        "[   15s] svc-agent:8: 1/1 running, 0 pending, 1 deployment, rollout COMPLETED",
    ]


def test_a_failed_rollout_is_an_error_naming_the_reason() -> None:
    with pytest.raises(DeployError) as raised:
        wait([answer(0, 2), answer(0, 2, "FAILED", reason="ECS deployment circuit breaker: tasks failed to start.")])
    assert str(raised.value) == ("the deployment of svc-agent:8 failed: ECS deployment circuit breaker: tasks "
                                 "failed to start.; the circuit breaker returns the service to its last working revision")


def test_a_service_stable_on_another_revision_is_not_success() -> None:
    with pytest.raises(DeployError) as raised:
        wait([answer(0, 2), answer(1, 1, "COMPLETED", definition=OLD, event="(service svc-agent) rolling back\nto 7")])
    assert str(raised.value) == ("the service now runs svc-agent:7 instead of svc-agent:8: the deployment was "
                                 "rolled back or replaced ((service svc-agent) rolling back to 7)")


def test_gives_up_at_the_timeout() -> None:
    with pytest.raises(DeployError, match=r"^the service was not stable after 12s \(0/1 running, 1 pending, "
                                          r"2 deployments, rollout IN_PROGRESS\)"):
        wait([answer(0, 2)] * 10, timeout=12)
