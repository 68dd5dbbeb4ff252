"""The agent's listening socket: the connections the event loop accepts from it send without Nagle's delay.

With Nagle on, uvicorn's answer (headers, then body: two writes) waited for the client's acknowledgement of the
headers, which a client delays up to 40 ms: every answer of the agent took 40 ms more than its work.
"""

from __future__ import annotations

import asyncio
import socket

from svc.agent.lifecycle import listen


async def _accepted_nodelay(server_socket: socket.socket) -> int:
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            connection = transport.get_extra_info("socket")
            accepted.set_result(connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await asyncio.get_running_loop().create_server(Probe, sock=server_socket)
    try:
        port = server_socket.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await asyncio.wait_for(accepted, 10)
        finally:
            writer.close()
    finally:
        server.close()
        await server.wait_closed()


def test_connections_accepted_from_the_agent_socket_have_no_nagle_delay() -> None:
    server_socket = listen("127.0.0.1", 0)
    assert asyncio.run(_accepted_nodelay(server_socket)) != 0
