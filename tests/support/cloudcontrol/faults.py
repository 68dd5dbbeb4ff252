"""What tests ask the stand-in to get wrong: throttling, failing requests, error answers, slow answers."""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeVar

from .errors import CloudControlError


@dataclass
class FailRule:
    """Requests of ``operation`` (CREATE, UPDATE, DELETE) on ``type_name`` (None: any type) are accepted, then
    end FAILED with ``error_code`` (a HandlerErrorCode); ``count`` times, or always when None."""

    operation: str
    error_code: str
    message: str
    type_name: str | None = None
    count: int | None = None


@dataclass
class ErrorRule:
    """Calls of the API ``operation`` (GetResource, ListResources …; on ``type_name`` when given) answer the
    error ``code`` (any AWS error name, AccessDeniedException included); ``count`` times, or always when None."""

    operation: str
    code: str
    message: str
    type_name: str | None = None
    count: int | None = None


@dataclass
class RequestBucket:
    """One API action's request tokens as AWS meters them (a token bucket per account and action): ``rate`` a
    second, at most ``rate`` (and one) held, full at first. The stand-in's own, not the agent's limiter: it is
    the other side of the wire."""

    rate: float
    capacity: float = field(init=False)
    tokens: float = field(init=False)
    updated: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = self.capacity = max(self.rate, 1.0)

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass
class Faults:
    throttle_next: int = 0  # the next N calls are throttled
    throttle_rate: float = 0.0  # then this share of calls, drawn from a seeded generator (reproducible)
    throttle_per_second: float = 0.0  # and calls beyond this many a second per operation (0: no such limit)
    throttle_operations: frozenset[str] | None = None  # None: every operation
    delay_ms: int = 0  # every answer waits this long (the server sleeps without blocking other calls)
    delay_operations: frozenset[str] | None = None
    failures: list[FailRule] = field(default_factory=list)
    errors: list[ErrorRule] = field(default_factory=list)
    throttled: Counter[str] = field(default_factory=Counter)  # calls answered ThrottlingException, per operation
    _random: random.Random = field(default_factory=lambda: random.Random(26))
    buckets: dict[str, RequestBucket] = field(default_factory=dict)  # of throttle_per_second, per operation

    def before_call(self, operation: str, type_name: str | None) -> None:
        """Raises the throttling or error a call of ``operation`` is due, if any."""
        if self.throttle_operations is None or operation in self.throttle_operations:
            if self._throttles(operation):
                self.throttled[operation] += 1
                raise CloudControlError("ThrottlingException", "Rate exceeded")
        rule = _take(self.errors, operation, type_name)
        if rule is not None:
            raise CloudControlError(rule.code, rule.message)

    def _throttles(self, operation: str) -> bool:
        if self.throttle_next > 0:
            self.throttle_next -= 1
            return True
        if self.throttle_rate and self._random.random() < self.throttle_rate:
            return True
        if self.throttle_per_second:
            bucket = self.buckets.get(operation)
            if bucket is None:
                bucket = self.buckets[operation] = RequestBucket(self.throttle_per_second)
            return not bucket.take()
        return False

    def failure_for(self, operation: str, type_name: str) -> FailRule | None:
        """The injected failure a new request of ``operation`` on ``type_name`` ends with, if any."""
        return _take(self.failures, operation, type_name)

    def delay_for(self, operation: str) -> float:
        """Seconds to wait before answering a call of ``operation``."""
        if self.delay_operations is not None and operation not in self.delay_operations:
            return 0.0
        return self.delay_ms / 1000


Rule = TypeVar("Rule", FailRule, ErrorRule)


def _take(rules: list[Rule], operation: str, type_name: str | None) -> Rule | None:
    for rule in rules:
        if rule.operation == operation and rule.type_name in (None, type_name):
            if rule.count is not None:
                rule.count -= 1
                if rule.count <= 0:
                    rules.remove(rule)
            return rule
    return None
