#!/usr/bin/env python3
"""A stand-alone ACPC agent for n-player Kuhn, written without any project code: ``exe HOST PORT``.

It stands in for an external agent executable in tests and tournaments. It sends VERSION:2.0.0,
replies only when it is to act (worked out here from the betting string alone), and plays a fixed
rule: raise with the top card when allowed, otherwise call. Usage:
``acpc_external_agent.py HOST PORT [--mode call|raise-top]``.
"""

import argparse
import socket


def to_act(betting: str, players: int) -> int:
    """The position to act after ``betting`` (one bet at most), or -1 when the hand is over."""
    folded = [False] * players
    acted = [False] * players
    bet = False
    called = set()
    p = 0
    for a in betting:
        acted[p] = True
        if a == "f":
            folded[p] = True
        elif a == "r":
            bet = True
            called = {p}
        elif bet:
            called.add(p)
        live = [q for q in range(players) if not folded[q]]
        if len(live) == 1 or (all(acted) and (not bet or set(live) <= called)):
            return -1
        p = (p + 1) % players
        while folded[p]:
            p = (p + 1) % players
    return p


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--mode", choices=("call", "raise-top"), default="raise-top")
    args = parser.parse_args()
    sock = socket.create_connection((args.host, args.port), timeout=30)
    # the dealer bounds every seat's reply and closes the match when it ends: wait for its next
    # line as long as it takes (another seat's first decision may compile for a minute)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"VERSION:2.0.0\n")
    stream = sock.makefile("rb")
    for raw in stream:
        line = raw.decode().rstrip("\r\n")
        if not line.startswith("MATCHSTATE:"):
            continue
        _, position, _, betting, cards = line.split(":")
        hole = cards.split("|")
        players = len(hole)
        if to_act(betting, players) != int(position):
            continue
        action = "c"
        if args.mode == "raise-top" and hole[int(position)][0] == "A" and "r" not in betting:
            action = "r"
        sock.sendall(f"{line}:{action}\r\n".encode())


if __name__ == "__main__":
    main()
