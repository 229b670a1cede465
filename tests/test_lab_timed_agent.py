"""The timed agent the hold'em field and the cycle benchmark share (clients/lab/timed_agent.py):
it plays as the agent it wraps and adds each decision's and each hand end's time, read from its
clock, to its totals (a counting clock here, so the totals are exact counts)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from oppmodel.clients.lab.timed_agent import TimedAgent
from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.holdem.match import HoldemGame, PolicyAgent, play_holdem_match
from oppmodel.modeling.holdem.policy import AlwaysCall, Spot, Uniform
from oppmodel.modeling.observation import LimitObservation


class _Counting(PolicyAgent):
    def __init__(self, seed: int) -> None:
        super().__init__("uniform", Uniform(), seed)
        self.decisions = 0
        self.ended = 0

    def act(self, spot: Spot, hole: Sequence[int]) -> int:
        self.decisions += 1
        return super().act(spot, hole)

    def end_hand(self, obs: LimitObservation) -> None:
        self.ended += 1


def test_it_plays_as_the_agent_and_times_every_decision_and_hand_end() -> None:
    game = HoldemGame("holdem2p", read_game_def(str(game_path("holdem2p"))))
    deals = game.deal_sequence(12, seed=3)
    ticks = itertools.count()
    inner = _Counting(seed=5)
    timed = TimedAgent(inner, clock=lambda: float(next(ticks)))
    chips = play_holdem_match(game, [timed, PolicyAgent("call", AlwaysCall(), 6)], deals)
    caller = PolicyAgent("call", AlwaysCall(), 6)
    alone = play_holdem_match(game, [_Counting(seed=5), caller], deals)
    assert chips.tolist() == alone.tolist()  # the same play: the wrapper draws nothing
    assert timed.name == "uniform" and timed.hands == inner.ended == 12
    # each call reads the clock twice, one tick apart
    assert timed.act_seconds == inner.decisions > 12 and timed.end_seconds == 12
    assert timed.seconds == inner.decisions + 12
