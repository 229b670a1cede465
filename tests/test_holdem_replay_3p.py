"""Replay of the reference dealer's 3-player limit hold'em log (clients/acpc/replay_holdem.py):
the model that plays the ACPC 3-player game (MBBR's posterior on sets numbered as met, its prior
refitted as in play) scores every opponent decision, through ``oppmodel replay`` itself, and its
scores equal that model's own probabilities computed directly, decision by decision."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from acpc_support import DATA, replay_command_json

from oppmodel.clients.acpc.log import LoggedHand, read_log
from oppmodel.modeling.games.acpc.abstraction import ALL_HOLES, BOARD_SIZES
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.holdem.posterior import cards_of
from oppmodel.modeling.holdem.served import lazy_holdem_mbbr
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.modeling.observation import LimitObservation

LOG = read_log(DATA / "holdem3p-seed42-example-players.log")
HANDS = 20
SEAT = "p2"
H = 8  # MBBR's first solve, which refits the prior, after hand 8: within the slice


def _observation(hand: LoggedHand, p: int) -> LimitObservation:
    """What seat ``p`` saw: the cards of the players still in at a showdown, its own."""
    state = HandState.from_betting(read_game_def("holdem3p"), hand.betting)
    live = [not folded for folded in state.folded]
    shown = sum(live) >= 2
    hole = tuple(h if q == p or (shown and live[q]) else None for q, h in enumerate(hand.hole))
    return LimitObservation(p, hand.betting, hole, ("", *hand.board)[: state.round + 1])


@functools.cache
def _pairs(dead: frozenset[int]) -> tuple[np.ndarray, np.ndarray]:
    """The hole pairs holding none of ``dead``, and (k, k) 1 where two of them share no card."""
    holes = ALL_HOLES[~np.isin(ALL_HOLES, list(dead)).any(axis=1)]
    cards = np.zeros((len(holes), 52))
    cards[np.arange(len(holes))[:, None], holes] = 1.0
    return holes, (cards @ cards.T == 0).astype(float)


def _direct(hands: list[LoggedHand]) -> tuple[list[tuple[float, float]], int]:
    """Per hand with an opponent decision, the (prior, MBBR) log-losses of its opponent
    decisions summed, from MBBR fed the hands one by one as the match engine's agent feeds it
    (its sets numbered as hands meet them: a node no earlier hand reached reads the prior mean it
    would be numbered with, ``mean_rows``); and how many hidden decisions had the other
    opponent's earlier moves to weigh. A shown decision reads its real cards' row; a hidden one
    sums over every pair of hole pairs the two opponents may hold together (none of our cards,
    the board dealt so far, no card in common), each weighted by both opponents' earlier moves."""
    gamedef = read_game_def("holdem3p")
    model = lazy_holdem_mbbr("holdem3p", MBBRConfig(prior=Prior.INFORMED, hands_default=H))
    posterior, sets = model.posterior, model.posterior.sets
    sums, joint = [], 0
    for hand in hands:
        p = hand.names.index(SEAT)
        obs = _observation(hand, p)
        board = [c for text in hand.board for c in cards_of(text)]
        ours = cards_of(hand.hole[p])
        moves = []  # (opponent, round, its prior rows, its mean rows, action) in order
        for k, letter in enumerate(hand.betting):
            if letter == "/":
                continue
            state = HandState.from_betting(gamedef, hand.betting[:k]).state
            if state.player == p:
                continue
            legal, blueprint = sets.rows_of(state)
            clipped = np.where(legal, np.clip(blueprint, 0.05, 0.95), 0.0)
            prior = clipped / clipped.sum(axis=1, keepdims=True)
            rows = posterior.mean_rows(p, state)
            moves.append((state.player, state.round, prior, rows, "fcr".index(letter)))
        losses = np.zeros(2)
        for i, (q, round_, *tables, action) in enumerate(moves):
            seen = tuple(board[: BOARD_SIZES[round_]])
            dead = {*ours, *seen}
            if obs.hole[q] is not None:
                view = posterior.spots.views(seen, round_, np.array([cards_of(hand.hole[q])]))
                losses -= [math.log(t[view[0], action]) for t in tables]
                continue
            holes, apart = _pairs(frozenset(dead))
            for m in range(2):  # the prior's tables, then the model's
                weight = {o: np.ones(len(holes)) for o in range(3) if o != p}
                for o, r, *earlier, a in moves[:i]:
                    views = posterior.spots.views(seen, r, holes)
                    weight[o] = weight[o] * earlier[m][views, a]
                other = next(o for o in weight if o != q)
                both = weight[q] * (apart @ weight[other])
                probs = both @ tables[m][posterior.spots.views(seen, round_, holes)]
                losses[m] -= math.log(probs[action] / probs.sum())
            joint += any(o != q for o, *_ in moves[:i])
        if moves:
            sums.append((float(losses[0]), float(losses[1])))
        model.observe(obs)
    assert model.solved_at == H  # the prior was refitted within the slice
    return sums, joint


def test_the_3p_replay_scores_the_playing_models_own_probabilities(tmp_path) -> None:
    data, png = replay_command_json(LOG, HANDS, SEAT, tmp_path, "--mbbr-hands-default", str(H))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sums, joint = _direct(LOG.hands[:HANDS])
    hand, every = data["per_hand"], data["every_decision"]
    assert hand["hands"] == len(sums) and joint >= 10
    prior, mbbr = np.mean(sums, axis=0)
    assert hand["log_loss"]["prior"] == pytest.approx(prior, rel=1e-9)
    assert hand["log_loss"]["mbbr"] == pytest.approx(mbbr, rel=1e-9)
    assert every["mbbr"]["log_loss"] * every["mbbr"]["decisions"] == pytest.approx(
        mbbr * len(sums), rel=1e-9
    )
    # every opponent, by seat offset, in each of its three positions
    assert {(r["opponent"], r["position"]) for r in data["opponents"]} == {
        (name, q) for name in ("p3", "p1") for q in range(3)
    }
