"""The client side of the ACPC dialogue (protocol version 2.0.0): the version line a client opens
with, its reply to a state, and the dealer's test that a reply answers the current state.

A reply is the MATCHSTATE it answers (:mod:`oppmodel.modeling.games.acpc.matchstate`) followed by
``:`` and an action letter: ``fF`` fold, ``cCkK`` check/call, ``rRbB`` bet/raise; the rest of the
line is ignored. Reference: the ACPC reference
server's dealer (project_acpc_server 1.0.42), protocol 2.0.0.
"""

from __future__ import annotations

from oppmodel.modeling.errors import IllegalActionError
from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS
from oppmodel.modeling.games.acpc.matchstate import MatchState

VERSION_LINE = "VERSION:2.0.0"


def same_state(a: MatchState, b: MatchState) -> bool:
    """The reference's ``matchStatesEqual``: viewer, hand, betting, board and the viewer's own
    cards (the other hole sections are not compared)."""
    return (
        a.position == b.position
        and a.hand == b.hand
        and a.betting == b.betting
        and a.board == b.board
        and a.hole[a.position] == b.hole[b.position]
    )


def format_reply(state: MatchState, action: str) -> str:
    """The client's reply line to ``state`` (``\\r\\n`` terminated, as the example player sends)."""
    if action not in tuple(ACTION_LETTERS):
        raise IllegalActionError("action", f"{action!r} is not one of f, c, r")
    return f"{state}:{action}\r\n"
