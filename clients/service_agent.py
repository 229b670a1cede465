"""An MBBR agent for the match engine (``modeling/play/match.py``) that plays through the service.

``ServiceMBBRAgent`` asks the service for every decision (GetAction; the service follows the
agent's policy: the default strategy for the first H hands, then the best response) and streams
each finished hand back on one long-lived Observe stream, numbered 1, 2, ... in its session; the
next decision is asked only once the hand is acknowledged, i.e. stored and applied. In Kuhn a
decision is asked at (position, card, history); in a limit game (Leduc, ...) at the MATCHSTATE
line the seat sees, as an ACPC agent asks it.
``service_mbbr_factory`` builds one per match (a new seeded session each), as ``run_duplicate``
expects of a factory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from oppmodel.clients.client import ObservationStream, OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.matchstate import MatchState
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import HandObservation, LimitObservation

Game = KuhnGame | LimitGame


class ServiceMBBRAgent:
    """MBBR through the service: one session per match, every decision asked of the server."""

    def __init__(self, name: str, client: OpponentModelClient, session_id: str, game: Game) -> None:
        self.name = name
        self.client = client
        self.session_id = session_id
        self.game = game
        self.hands = 0
        self._stream: ObservationStream | None = None

    def begin_match(self, game: Game, seat: int) -> None:
        """Check the game; the session was created with the agent."""
        if game is not self.game:
            raise InvalidArgumentError("game", f"agent {self.name} was built for {self.game.name}")

    def act(self, position: int, private: int, history: str) -> int:
        """GetAction at our information state (the hand number varies the service's draw):
        Kuhn's card and history, or a limit game's view (hole and board) and betting."""
        if isinstance(self.game, LimitGame):
            line = matchstate_line(self.game, position, private, history, self.hands)
            return self.client.action(self.session_id, matchstate=line, draw=self.hands).action
        decision = self.client.action(
            self.session_id, position=position, card=private, history=history, draw=self.hands
        )
        return decision.action

    def end_hand(self, obs: HandObservation | LimitObservation) -> None:
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


def matchstate_line(game: LimitGame, position: int, view: int, betting: str, hand: int) -> str:
    """The MATCHSTATE line ``position`` sees holding ``view`` (an index into the views of the
    betting's round: its hole and the board so far) after ``betting``."""
    rnd = int(game.tree.node_round[game.node(betting)])
    hole, *board = game.view_strings[rnd][view].split("/")
    cards = [""] * game.num_players
    cards[position] = hole
    return str(MatchState(position, hand, betting, tuple(cards), ("", *board)))


def service_mbbr_factory(
    client: OpponentModelClient,
    *,
    name: str,
    opponent_labels: Sequence[str],
    config: MBBRConfig,
    sessions: list[str] | None = None,
) -> Callable[[Game, int], ServiceMBBRAgent]:
    """``factory(game, seed)``: a new service session per match (seeded), and its agent.

    The ids of the sessions created are appended to ``sessions`` if given. Building an agent
    ends the observation stream of the one built before it (its match is over).
    """
    built: list[ServiceMBBRAgent] = []

    def build(game: Game, seed: int) -> ServiceMBBRAgent:
        if built:
            built.pop().close()
        session = client.create_session(
            game=game.name
            if isinstance(game, LimitGame)
            else f"kuhn_poker(players={game.num_players})",
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
