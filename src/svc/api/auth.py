"""HTTP basic authentication for the agent API.

Passwords in the agent config are bcrypt hashes. A bcrypt check costs tens of milliseconds, so a
verdict is cached for a short while under a hash of the ``Authorization`` header: a client that
sends the same header again is answered from the cache, and the header itself is never stored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Iterable

import anyio
import bcrypt
from starlette.types import ASGIApp, Receive, Scope, Send

from svc.config.model import AuthorizedUser

UNAUTHENTICATED_PATHS = frozenset({"/api/v1/health", "/metrics"})  # /metrics: only with agent.oTel.prometheus
_REALM = 'Basic realm="svc", charset="UTF-8"'
# Checked when the user name is unknown, so that the response time does not reveal which names exist.
_DUMMY_HASH = bcrypt.hashpw(b"svc-dummy-password", bcrypt.gensalt(rounds=4))


class BasicAuthenticator:
    """Checks ``Authorization: Basic`` headers against the configured users."""

    def __init__(self, users: Iterable[AuthorizedUser], cache_seconds: float = 60.0, cache_size: int = 1024):
        self._users = {user.username.encode(): user.password.encode() for user in users}
        self._cache: dict[bytes, tuple[str | None, float]] = {}
        self._cache_seconds = cache_seconds
        self._cache_size = cache_size

    def _check(self, header: str) -> str | None:
        """The authenticated user name, or ``None``."""
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            username, sep, password = base64.b64decode(encoded.strip(), validate=True).partition(b":")
        except (binascii.Error, ValueError):
            return None
        if not sep:
            return None
        stored = None
        for name, hashed in self._users.items():
            if hmac.compare_digest(name, username):
                stored = hashed
        valid = bcrypt.checkpw(password, stored or _DUMMY_HASH)
        return username.decode(errors="replace") if valid and stored is not None else None

    async def authenticate(self, header: str | None) -> str | None:
        if not header:
            return None
        key = hashlib.sha256(header.encode()).digest()
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[1] > now:
            return cached[0]
        subject = await anyio.to_thread.run_sync(self._check, header)
        if len(self._cache) >= self._cache_size:
            self._cache.clear()
        self._cache[key] = (subject, now + self._cache_seconds)
        return subject


class BasicAuthMiddleware:
    """Answers 401 (with ``WWW-Authenticate``) to every request but health that lacks valid credentials."""

    def __init__(self, app: ASGIApp, authenticator: BasicAuthenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNAUTHENTICATED_PATHS:
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), None)
        subject = await self.authenticator.authenticate(header)
        if subject is None:
            body = b'{"message":"unauthorized"}'
            await send({
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", _REALM.encode()),
                ],
            })
            await send({"type": "http.response.body", "body": body})
            return
        scope.setdefault("state", {})["subject"] = subject
        await self.app(scope, receive, send)
