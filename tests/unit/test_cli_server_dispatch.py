"""The CLI server's loop over ready registrations (``svc.cli.server.dispatch``)."""

from __future__ import annotations

import selectors
import socket

from svc.cli.server import dispatch


def test_a_registration_an_earlier_callback_of_the_round_ended_is_not_called() -> None:
    """A worker's end and its client's hang-up ready in one round: the reaping closes the client's connection, and
    the hang-up's callback must not read the closed socket (it took the server down, 1 run in ~10)."""
    selector = selectors.DefaultSelector()
    ended, ended_peer = socket.socketpair()
    client, client_peer = socket.socketpair()
    called: list[str] = []

    def reap(_: socket.socket) -> None:
        called.append("reap")
        selector.unregister(client)
        client.close()

    def hung_up(_: socket.socket) -> None:
        called.append("hung up")

    try:
        selector.register(ended, selectors.EVENT_READ, reap)
        selector.register(client, selectors.EVENT_READ, hung_up)
        ended_peer.send(b"x")
        client_peer.close()
        events = selector.select(5)
        assert len(events) == 2
        events.sort(key=lambda event: event[0].data is hung_up)  # the reaping first, as the race has it
        dispatch(selector, events)
        assert called == ["reap"]
    finally:
        selector.close()
        for end in (ended, ended_peer, client, client_peer):
            end.close()
