"""A service to measure: the hands a load sends it, and ``oppmodel serve --ray`` in a child."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.solved import default_profile
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel
from oppmodel.modeling.observation import (
    HandObservation,
    LimitObservation,
    observe_hand,
    observe_limit_hand,
)
from oppmodel.modeling.play.match import sample_terminal
from oppmodel.modeling.play.panel import named_profile

KUHN = kuhn_game(3)


def hands_of(count: int, seed: int) -> list[HandObservation]:
    """Observations of one seat over ``count`` hands of 3-player Kuhn between maniacs (ACPC
    rotation), in the Kuhn presentation a ``kuhn_poker`` session takes (cards 0..3, ``p``/``b``).
    The maniac is the panel's, on the compiled game: a bet is its raise where nobody bet yet and
    its call facing a bet."""
    rng = np.random.default_rng(seed)
    served = kuhn_openspiel(3)
    table = named_profile(served.compiled, "maniac")
    out = []
    for hand in range(count):
        cards = [int(c) for c in rng.permutation(KUHN.num_cards)[:3]]
        history = ""
        while not KUHN.is_terminal(history):
            p = KUHN.current_player(history)
            row = table[p, served.compiled_infoset(p, KUHN.infoset_index(p, cards[p], history))]
            bet = row[1] if "b" in history else row[2]
            history += "pb"[int(rng.random() < bet)]
        out.append(observe_hand(KUHN, (-hand) % 3, history, cards))
    return out


def limit_hands_of(game_name: str, count: int, seed: int) -> list[LimitObservation]:
    """Observations of one seat over ``count`` hands of a limit game, every seat playing the
    game's bundled strategy (ACPC rotation)."""
    game = limit_game(game_name)
    profile = default_profile(game, "default_strategy")
    rng = np.random.default_rng(seed)
    out = []
    for hand in range(count):
        deal = int(rng.integers(game.num_deals))
        terminal = sample_terminal(game, profile, deal, rng)
        out.append(observe_limit_hand(game, (-hand) % game.num_players, deal, terminal))
    return out


def spawn_ray(store: str, replicas: int) -> tuple[subprocess.Popen, int]:
    """``oppmodel serve --ray --replicas N`` (its own local Ray instance) in a child process;
    returns (process, port) once it serves."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "oppmodel.clients.cli", "serve", "--ray", "--replicas",
         str(replicas), "--port", str(port), "--store", store],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # its Ray processes stop with it, not with our terminal's ^C
    )  # fmt: skip
    line = process.stdout.readline() if process.stdout else ""
    if not line.startswith("serving"):
        process.kill()
        raise RuntimeError(f"oppmodel serve --ray exited with {process.wait()}")
    return process, port


def free_port() -> int:
    """A loopback port free a moment ago (Ray's proxy must be told its port)."""
    from oppmodel.server.app import free_ports

    return free_ports(1)[0]
