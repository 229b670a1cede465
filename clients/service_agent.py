"""An MBBR agent for the match engine (``modeling/play/match.py``) that plays through the service.

``ServiceMBBRAgent`` asks the service for every decision (GetAction; the service follows the
agent's policy: the default strategy for the first H hands, then the best response) and streams
each finished hand back on one long-lived Observe stream, numbered 1, 2, ... in its session; the
next decision is asked only once the hand is acknowledged, i.e. stored and applied.
``service_mbbr_factory`` builds one per match (a new seeded session each), as ``run_duplicate``
expects of a factory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from oppmodel.clients.client import ObservationStream, OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import HandObservation


class ServiceMBBRAgent:
    """MBBR through the service: one session per match, every decision asked of the server."""

    def __init__(
        self, name: str, client: OpponentModelClient, session_id: str, game: KuhnGame
    ) -> None:
        self.name = name
        self.client = client
        self.session_id = session_id
        self.game = game
        self.hands = 0
        self._stream: ObservationStream | None = None

    def begin_match(self, game: KuhnGame, seat: int) -> None:
        """Check the game; the session was created with the agent."""
        if game is not self.game:
            raise InvalidArgumentError("game", f"agent {self.name} was built for {self.game.name}")

    def act(self, position: int, card: int, history: str) -> int:
        """GetAction at our information state (the hand number varies the service's draw)."""
        decision = self.client.action(
            self.session_id, position=position, card=card, history=history, draw=self.hands
        )
        return decision.action

    def end_hand(self, obs: HandObservation) -> None:
        """Stream the observation; returns once the service has stored and applied it."""
        if self._stream is None:
            self._stream = self.client.observation_stream(self.session_id, first_sequence=1)
        self._stream.send(obs)
        self.hands += 1

    def close(self) -> None:
        """End the observation stream."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None


def service_mbbr_factory(
    client: OpponentModelClient,
    *,
    name: str,
    opponent_labels: Sequence[str],
    config: MBBRConfig,
    sessions: list[str] | None = None,
) -> Callable[[KuhnGame, int], ServiceMBBRAgent]:
    """``factory(game, seed)``: a new service session per match (seeded), and its agent.

    The ids of the sessions created are appended to ``sessions`` if given. Building an agent
    ends the observation stream of the one built before it (its match is over).
    """
    built: list[ServiceMBBRAgent] = []

    def build(game: KuhnGame, seed: int) -> ServiceMBBRAgent:
        if built:
            built.pop().close()
        session = client.create_session(
            game=f"kuhn_poker(players={game.num_players})",
            our_label=name,
            opponent_labels=opponent_labels,
            config=dataclasses.replace(config, seed=seed),
        )
        if sessions is not None:
            sessions.append(session.session_id)
        agent = ServiceMBBRAgent(name, client, session.session_id, game)
        built.append(agent)
        return agent

    return build
