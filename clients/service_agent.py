"""An MBBR agent for the match engine (``modeling/play/match.py``) that plays through the service.

``ServiceMBBRAgent`` creates its session when the match begins, naming each opponent by the
agent that sits there (``opponent_labels[i]``: the name of the agent ``i + 1`` seats after ours,
so every seating of a duplicate match stores its own labels), asks the service for every decision
(GetAction; the service follows the agent's policy: the default strategy for the first H hands,
then the best response) and streams each finished hand back on one long-lived Observe stream,
numbered 1, 2, ... in its session; the next decision is asked only once the hand is acknowledged,
i.e. stored and applied. A decision is asked at the MATCHSTATE line the seat sees, as an ACPC agent
asks it, in every game (the match engine plays compiled limit games: Kuhn is ``kuhn<n>p``).
``service_mbbr_factory`` builds one per match (a new seeded session each), as ``run_duplicate``
expects of a factory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from oppmodel.clients.acpc.convert import session_game
from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.outbox import ObservationStream
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.matchstate import MatchState
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import LimitObservation

Game = LimitGame


class ServiceMBBRAgent:
    """MBBR through the service: one session per match, every decision asked of the server.
    The id of the session is appended to ``sessions`` if given."""

    def __init__(
        self,
        name: str,
        client: OpponentModelClient,
        game: Game,
        *,
        config: MBBRConfig,
        sessions: list[str] | None = None,
        prior_strategy: str | None = None,
    ) -> None:
        """``prior_strategy``: the text of a strategy file, the sessions' prior mean and default
        strategy (None: the service's defaults)."""
        self.name = name
        self.prior_strategy = prior_strategy
        self.client = client
        self.game = game
        self.config = config
        self.sessions = sessions
        self.session_id = ""  # created by begin_match
        self.hands = 0
        self._stream: ObservationStream | None = None

    def begin_match(self, game: Game, seat: int, names: Sequence[str]) -> None:
        """Check the game and create the session, its opponents labelled by who sits where."""
        if game is not self.game:
            raise InvalidArgumentError("game", f"agent {self.name} was built for {self.game.name}")
        n = len(names)
        session = self.client.create_session(
            game=session_game(game),
            our_label=self.name,
            opponent_labels=[names[(seat + d) % n] for d in range(1, n)],
            config=self.config,
            prior_mean=self.prior_strategy,
            default_strategy=self.prior_strategy,
        )
        self.session_id = session.session_id
        if self.sessions is not None:
            self.sessions.append(self.session_id)

    def act(self, position: int, private: int, history: str) -> int:
        """GetAction at our information state, our view (hole and board) and the betting, as
        its MATCHSTATE line (the hand number varies the service's draw)."""
        line = matchstate_line(self.game, position, private, history, self.hands)
        return self.client.action(self.session_id, matchstate=line, draw=self.hands).action

    def end_hand(self, obs: LimitObservation) -> None:
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
    config: MBBRConfig,
    sessions: list[str] | None = None,
    prior_strategy: str | None = None,
) -> Callable[[Game, int], ServiceMBBRAgent]:
    """``factory(game, seed)``: an agent that opens a new service session (seeded) for its match.

    The opponents' labels are the names of the agents seated after it, so they must be distinct.
    The ids of the sessions created are appended to ``sessions`` if given. Building an agent
    ends the observation stream of the one built before it (its match is over).
    """
    built: list[ServiceMBBRAgent] = []

    def build(game: Game, seed: int) -> ServiceMBBRAgent:
        if built:
            built.pop().close()
        seeded = dataclasses.replace(config, seed=seed)
        agent = ServiceMBBRAgent(
            name, client, game, config=seeded, sessions=sessions, prior_strategy=prior_strategy
        )
        built.append(agent)
        return agent

    return build
