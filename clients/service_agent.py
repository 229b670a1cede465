"""An MBBR agent that plays through the service, and a small duplicate-match loop to run it.

``ServiceMBBRAgent`` asks the service for every decision (GetAction; the service follows the
agent's policy: default strategy for the first H hands, then the best response) and streams each
finished hand back as an observation (Observe), numbered 1, 2, ... in its session.

``play_duplicate`` is the evaluation protocol of paper 003: the same deals are played under every
seat permutation of the agents (6 for 3 players); ACPC rotation puts seat s at position
(s - h) mod n in hand h. An agent's result is milli-chips per hand (mbb/h); its standard error is
taken over hands after averaging each hand over the permutations (the duplicate average), which
removes most of the luck of the deal. This loop stands in for the in-process match engine
(``modeling/match.py``) until that lands.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from clients.client import OpponentModelClient
from modeling.kuhn import KuhnGame
from modeling.observation import HandObservation, observe_hand


class Agent(Protocol):
    """What the match loop needs of a player."""

    name: str

    def act(self, position: int, card: int, history: str, hand: int) -> int:
        """The action (0 pass, 1 bet) at our turn."""
        ...

    def end_hand(self, obs: HandObservation) -> None:
        """What we saw of a finished hand."""
        ...


class FixedAgent:
    """Plays a fixed profile (n, num_infosets, 2), drawing actions from its own generator."""

    def __init__(self, name: str, game: KuhnGame, profile: np.ndarray, seed: int) -> None:
        self.name = name
        self.game = game
        self.profile = profile
        self.rng = np.random.default_rng(seed)

    def act(self, position: int, card: int, history: str, hand: int) -> int:
        """Draw from the profile at our information set."""
        index = self.game.infoset_index(position, card, history)
        return int(self.rng.random() < self.profile[position, index, 1])

    def end_hand(self, obs: HandObservation) -> None:
        """A fixed strategy learns nothing."""


class ServiceMBBRAgent:
    """MBBR through the service: one session per match, every decision asked of the server."""

    def __init__(self, name: str, client: OpponentModelClient, session_id: str) -> None:
        self.name = name
        self.client = client
        self.session_id = session_id
        self.next_sequence = 1

    def act(self, position: int, card: int, history: str, hand: int) -> int:
        """GetAction at our information state (``hand`` varies the service's draw)."""
        decision = self.client.action(
            self.session_id, position=position, card=card, history=history, draw=hand
        )
        return decision.action

    def end_hand(self, obs: HandObservation) -> None:
        """Stream the observation; returns once the service has stored and applied it."""
        self.client.observe(self.session_id, [obs], first_sequence=self.next_sequence)
        self.next_sequence += 1


@dataclass(frozen=True)
class AgentResult:
    """One agent's duplicate result."""

    name: str
    mbb_per_hand: float
    standard_error: float


def deal_cards(game: KuhnGame, hands: int, seed: int) -> np.ndarray:
    """(hands, n) cards per position, the same for every permutation (seeded)."""
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(game.num_cards)[: game.num_players] for _ in range(hands)])


def play_hand(game: KuhnGame, seated: Sequence[Agent], hand: int, cards: np.ndarray) -> np.ndarray:
    """Play one hand (seat s at position (s - hand) mod n); returns chips won per seat."""
    n = game.num_players
    at_position = [seated[(p + hand) % n] for p in range(n)]
    history = ""
    while not game.is_terminal(history):
        p = game.current_player(history)
        history += "pb"[at_position[p].act(p, int(cards[p]), history, hand)]
    chips = game.returns(history, [int(c) for c in cards])
    for p, agent in enumerate(at_position):
        agent.end_hand(observe_hand(game, p, history, [int(c) for c in cards]))
    return np.array([chips[(s - hand) % n] for s in range(n)])


def play_duplicate(
    game: KuhnGame,
    make_agents: Callable[[int], list[Agent]],
    *,
    hands: int,
    seed: int,
    on_hand: Callable[[], None] | None = None,
) -> list[AgentResult]:
    """Play ``hands`` hands under every seat permutation of the agents made by ``make_agents``.

    ``make_agents(match_index)`` returns fresh agents (same order every time) for one match.
    """
    cards = deal_cards(game, hands, seed)
    n = game.num_players
    permutations = list(itertools.permutations(range(n)))
    winnings = np.zeros((len(permutations), hands, n))  # [match, hand, agent]
    names: list[str] = []
    for m, seat_of_agent in enumerate(permutations):
        agents = make_agents(m)
        names = [a.name for a in agents]
        seated = [agents[seat_of_agent.index(s)] for s in range(n)]
        for h in range(hands):
            by_seat = play_hand(game, seated, h, cards[h])
            for i in range(n):
                winnings[m, h, i] = by_seat[seat_of_agent[i]]
            if on_hand is not None:
                on_hand()
    per_hand = winnings.mean(axis=0) * 1000.0  # duplicate average, mbb
    return [
        AgentResult(
            name=names[i],
            mbb_per_hand=float(per_hand[:, i].mean()),
            standard_error=float(per_hand[:, i].std(ddof=1) / math.sqrt(hands)),
        )
        for i in range(n)
    ]
