"""Submissions reach the leading agent: a follower forwards them, and answers 503 when no agent leads.

Every request that may change something (any method but GET, HEAD and OPTIONS) is the leader's to serve. A
follower passes it on as it came (method, path, query, body, credentials, ``Client-ID``) and answers what the
leader answered; when no agent leads (the moment between a leader's exit and a follower's takeover), or the
leader does not answer, it answers 503 with ``Retry-After``, having done nothing, and the CLI tries again.
Reads are every agent's own: they come from the shared datastore.
"""

from __future__ import annotations

import logging

import httpx
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc.api.responses import JSONResponse
from svc.engine.leadership import Leadership

log = logging.getLogger("svc.api.forwarding")

FORWARDED_HEADER = "x-svc-forwarded-by"  # the follower's agent id: a leader that lost the lease does not pass it on
RETRY_AFTER_SECONDS = 1
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
# Headers of one hop (RFC 9110 §7.6.1) and those the client library sets again.
_HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                          "upgrade", "host", "content-length"})
# A submission is planned and stored before it is answered: a big forma takes seconds.
_TIMEOUT = httpx.Timeout(300.0, connect=2.0)


class Forwarder:
    """The follower's client of the leader (one connection pool for the agent's life)."""

    def __init__(self, leadership: Leadership) -> None:
        self.leadership = leadership
        self._client: httpx.AsyncClient | None = None

    async def forward(self, scope: Scope, body: bytes, url: str) -> httpx.Response:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=_TIMEOUT, trust_env=False, follow_redirects=False)
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]
                   if name.decode("latin-1").lower() not in _HOP_HEADERS]
        headers.append((FORWARDED_HEADER, self.leadership.agent_id))
        target = url + scope["path"] + (f"?{scope['query_string'].decode('latin-1')}" if scope["query_string"] else "")
        return await self._client.request(scope["method"], target, headers=headers, content=body)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


class ForwardToLeader:
    """ASGI middleware in front of the API's routes."""

    def __init__(self, app: ASGIApp, forwarder: Forwarder, api_prefix: str) -> None:
        self.app = app
        self.leadership = forwarder.leadership
        self.forwarder = forwarder
        self.api_prefix = api_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _READS or not scope["path"].startswith(self.api_prefix) \
                or self.leadership.takes_submissions():
            await self.app(scope, receive, send)
            return
        leader = self.leadership.leader()
        forwarded = any(name == FORWARDED_HEADER.encode() for name, _ in scope["headers"])
        if leader is None or leader.agent_id == self.leadership.agent_id or forwarded:
            await _unavailable("no agent leads right now (one is taking over); nothing was done, retry in a moment",
                               scope, receive, send)
            return
        body = await _body(receive)
        try:
            answer = await self.forwarder.forward(scope, body, leader.url)
        except httpx.HTTPError as error:
            log.warning("the leading agent %s at %s did not answer a forwarded %s %s (%s)", leader.agent_id,
                        leader.url, scope["method"], scope["path"], type(error).__name__)
            await _unavailable(f"the leading agent ({leader.agent_id}) did not answer; retry in a moment",
                               scope, receive, send)
            return
        headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers.items()
                   if name.lower() not in _HOP_HEADERS]
        headers.append((b"content-length", str(len(answer.content)).encode()))
        await send({"type": "http.response.start", "status": answer.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": answer.content})



async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _unavailable(message: str, scope: Scope, receive: Receive, send: Send) -> None:
    response = JSONResponse({"message": message}, status_code=503,
                            headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
    await response(scope, receive, send)
