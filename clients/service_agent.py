"""An MBBR agent that plays through the service, and a small duplicate-match loop to run it.

``ServiceMBBRAgent`` asks the service for every decision (GetAction; the service follows the
agent's policy: default strategy for the first H hands, then the best response) and streams each
finished hand back as an observation (Observe), numbered 1, 2, ... in its session.

``play_duplicate`` is the evaluation protocol of paper 003: the same deals are played under every
seat permutation of the agents (6 for 3 players); ACPC rotation puts seat s at position
(s - h) mod n in hand h. An agent's result is milli-chips per hand (mbb/h); its standard error is
taken over hands after averaging each hand over the permutations (the duplicate average), which
removes most of the luck of the deal. This loop stands in for the in-process match engine
(``modeling/match.py``) until that lands; the agents already follow its protocol
(``begin_match``, ``act(position, card, history)``, ``end_hand``; factories
``factory(game, seed) -> agent``), so ``service_mbbr_factory`` plugs into its ``run_duplicate``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from clients.client import OpponentModelClient
from modeling.kuhn import KuhnGame
from modeling.mbbr import MBBRConfig
from modeling.observation import HandObservation, observe_hand


class Agent(Protocol):
    """What the match loop needs of a player."""

    name: str

    def begin_match(self, game: KuhnGame, seat: int) -> None:
        """Called once before the first hand."""
        ...

    def act(self, position: int, card: int, history: str) -> int:
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

    def begin_match(self, game: KuhnGame, seat: int) -> None:
        """Nothing to prepare."""

    def act(self, position: int, card: int, history: str) -> int:
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

    def begin_match(self, game: KuhnGame, seat: int) -> None:
        """Nothing to prepare: the session was created with the agent."""

    def act(self, position: int, card: int, history: str) -> int:
        """GetAction at our information state (the hand number varies the service's draw)."""
        decision = self.client.action(
            self.session_id,
            position=position,
            card=card,
            history=history,
            draw=self.next_sequence,
        )
        return decision.action

    def end_hand(self, obs: HandObservation) -> None:
        """Stream the observation; returns once the service has stored and applied it."""
        self.client.observe(self.session_id, [obs], first_sequence=self.next_sequence)
        self.next_sequence += 1


def service_mbbr_factory(
    client: OpponentModelClient,
    *,
    name: str,
    opponent_labels: Sequence[str],
    config: MBBRConfig,
    sessions: list[str] | None = None,
) -> Callable[[KuhnGame, int], ServiceMBBRAgent]:
    """``factory(game, seed)``: a new service session per match (seeded), and its agent.

    The ids of the sessions created are appended to ``sessions`` if given.
    """

    def build(game: KuhnGame, seed: int) -> ServiceMBBRAgent:
        session = client.create_session(
            game=f"kuhn_poker(players={game.num_players})",
            our_label=name,
            opponent_labels=opponent_labels,
            config=dataclasses.replace(config, seed=seed),
        )
        if sessions is not None:
            sessions.append(session.session_id)
        return ServiceMBBRAgent(name, client, session.session_id)

    return build


def fixed_factory(name: str, profile: np.ndarray) -> Callable[[KuhnGame, int], FixedAgent]:
    """``factory(game, seed)`` of a FixedAgent playing ``profile``."""
    return lambda game, seed: FixedAgent(name, game, profile, seed)


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
        history += "pb"[at_position[p].act(p, int(cards[p]), history)]
    chips = game.returns(history, [int(c) for c in cards])
    for p, agent in enumerate(at_position):
        agent.end_hand(observe_hand(game, p, history, [int(c) for c in cards]))
    return np.array([chips[(s - hand) % n] for s in range(n)])


def play_duplicate(
    game: KuhnGame,
    names: Sequence[str],
    factories: Sequence[Callable[[KuhnGame, int], Agent]],
    *,
    hands: int,
    seed: int,
    on_hand: Callable[[], object] | None = None,
) -> list[AgentResult]:
    """Play ``hands`` hands under every seating of the agents built by ``factories``.

    Agent i of seating j is built by ``factories[i](game, seed')`` with seed' derived from
    (seed, j, i), fresh for every match.
    """
    cards = deal_cards(game, hands, seed)
    n = game.num_players
    seatings = list(itertools.permutations(range(n)))  # seating[i] = seat of agent i
    winnings = np.zeros((len(seatings), hands, n))  # [seating, hand, agent]
    for j, seat_of_agent in enumerate(seatings):
        agents = [
            factory(game, int(np.random.SeedSequence([seed, j, i]).generate_state(1)[0]))
            for i, factory in enumerate(factories)
        ]
        seated = [agents[seat_of_agent.index(s)] for s in range(n)]
        for s, agent in enumerate(seated):
            agent.begin_match(game, s)
        for h in range(hands):
            by_seat = play_hand(game, seated, h, cards[h])
            for i in range(n):
                winnings[j, h, i] = by_seat[seat_of_agent[i]]
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
