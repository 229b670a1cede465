"""Replay of limit hold'em logs (clients/acpc/replay_holdem.py): the hold'em posterior over the
bundled blueprint's abstraction scored against the blueprint's own play, on the reference
dealer's 2-player log. Few hands a test: the blueprint loads from its binary cache."""

from __future__ import annotations

import functools
import io
import itertools
import json
import math
from contextlib import redirect_stdout

import numpy as np
import pytest
from acpc_support import DATA, AgentThread, replay_command_json, run_dealer

from oppmodel.clients.acpc.agent import make_policy
from oppmodel.clients.acpc.log import parse_log, read_log
from oppmodel.clients.acpc.replay import replay
from oppmodel.clients.acpc.replay_holdem import HoldemModels, HoldemReplayGame, holdem_replay_parts
from oppmodel.clients.acpc.replay_report import HIDDEN_METHODS
from oppmodel.clients.acpc.replay_scoring import Prediction, _per_hand
from oppmodel.clients.cli import main
from oppmodel.modeling.games.acpc.abstraction import BOARD_SIZES
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.holdem import served as served_module
from oppmodel.modeling.holdem.posterior import HoldemPosterior, cards_of
from oppmodel.modeling.holdem.response import HoldemMBBR, HoldemMBBRAgent
from oppmodel.modeling.holdem.served import holdem_served
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior

LOG = read_log(DATA / "holdem2p-seed42-example-players.log")
CONFIG = MBBRConfig(prior=Prior.INFORMED)


@functools.cache
def parts() -> tuple[HoldemReplayGame, HoldemModels]:
    """The replay game and a model that has seen the log's first 20 hands from p1's seat (so
    the posterior mean differs from the prior where the predictions below read it)."""
    rules, source = holdem_replay_parts("holdem2p", CONFIG)
    source.observe([rules.observation(h, h.names.index("p1")) for h in LOG.hands[:20]])
    return rules, source


def _hands(*, shown: bool) -> list:
    """(hand, p1's observation, the opponent's decisions) of hands 20-50 where the opponent's
    cards were shown (or not) and it made at least two decisions."""
    rules, _ = parts()
    out = []
    for hand in LOG.hands[20:50]:
        p = hand.names.index("p1")
        obs = rules.observation(hand, p)
        decisions = rules.decisions(hand, obs)
        if len(decisions) >= 2 and (obs.hole[1 - p] is not None) == shown:
            out.append((hand, obs, decisions))
    return out


def test_a_hidden_decision_sums_over_every_hole_pair_our_seat_could_not_rule_out() -> None:
    """The oracle: every two-card set of the 52 not among our cards or the board dealt by the
    decision's round, one at a time, each weighted by the product of the model's probabilities
    of the opponent's earlier actions with it (a pair's information sets: the abstraction's, at
    the betting's text; test_holdem_posterior checks them pair by pair)."""
    rules, source = parts()
    spots = rules.spots
    checked = 0
    for _, obs, decisions in _hands(shown=False)[:3]:
        q = decisions[0].position
        model = source.model(1, q)[0]
        board = [c for text in obs.board for c in cards_of(text)]
        ours = cards_of(str(obs.hole[obs.position]))
        for i, dec in enumerate(decisions):
            seen = tuple(board[: BOARD_SIZES[dec.round]])
            pairs = [
                pair
                for pair in itertools.combinations(range(52), 2)
                if not set(pair) & {*ours, *seen}
            ]
            holes = np.array(pairs, dtype=np.int64)
            at = [spots.infosets(d.history, seen, holes) for d in decisions[: i + 1]]
            total, weights = np.zeros(3), 0.0
            for k in range(len(pairs)):
                weight = math.prod(model[at[j][k], d.action] for j, d in enumerate(decisions[:i]))
                total += weight * model[at[i][k]]
                weights += weight
            got = rules.hidden_prediction({q: model}, obs, decisions, i)
            np.testing.assert_allclose(got, total / weights, rtol=0, atol=1e-12)
            checked += 1
    assert checked >= 6


def test_a_shown_decision_is_scored_at_its_real_cards_information_set() -> None:
    rules, _ = parts()
    spots = rules.spots
    checked = 0
    for _, obs, decisions in _hands(shown=True)[:5]:
        board = tuple(c for text in obs.board for c in cards_of(text))
        for dec in decisions:
            holes = np.array([cards_of(str(dec.card))], dtype=np.int64)
            seen = board[: BOARD_SIZES[dec.round]]
            assert dec.infoset == spots.infosets(dec.history, seen, holes)[0]
            checked += 1
    assert checked >= 10


def test_the_prior_column_is_the_blueprint_clipped_and_mbbr_its_posterior() -> None:
    """Before a hand from a position, the model is the blueprint's rows clipped to
    [epsilon, 1 - epsilon] (positive wherever an action is legal); after, the posterior mean."""
    rules, fresh = holdem_replay_parts("holdem2p", CONFIG)
    blueprint = fresh.posterior.blueprint
    prior, _ = fresh.model(1, 1)
    rows = rules.game.infosets(1)
    legal = rules.game.legal_mask[1, rows]
    clipped = np.where(legal, np.clip(blueprint[1, rows], 0.05, 0.95), 0.0)
    np.testing.assert_allclose(prior[rows], clipped / clipped.sum(axis=1, keepdims=True))
    assert (prior[rows][legal] > 0).all() and (blueprint[1, rows][legal] == 0).any()
    _, source = parts()
    np.testing.assert_array_equal(source.model(1, 1)[0], source.posterior.models_profile(0)[1])


def test_per_hand_scores_sum_each_hands_decisions_and_pair_mbbr_with_the_prior() -> None:
    def record(hand: int, prior: float, mbbr: float) -> Prediction:
        losses = {"prior": prior, "counts": 1.0, "mbbr": mbbr}
        return Prediction(hand, 1, 1, 0, losses, dict.fromkeys(losses, True))

    scores = _per_hand([record(0, 1.0, 0.5), record(0, 2.0, 1.0), record(3, 1.0, 1.5)])
    assert scores.hands == 2
    assert scores.log_loss == {"prior": 2.0, "counts": 1.5, "mbbr": 1.5}
    assert scores.mbbr_minus_prior == pytest.approx(-0.5)  # hands: -1.5 and +0.5
    assert scores.standard_error == pytest.approx(math.sqrt(2.0) / math.sqrt(2))


def test_the_command_replays_a_holdem_log_and_refuses_what_it_cannot_model(
    tmp_path, capsys
) -> None:
    data, png = replay_command_json(LOG, 30, "p2", tmp_path)
    assert data["hands"] == 30 and data["mbbr"]["prior"] == "informed"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    every, hand = data["every_decision"], data["per_hand"]
    for m in HIDDEN_METHODS:  # the per-hand sums hold every decision's log-loss
        total = every[m]["log_loss"] * every[m]["decisions"]
        assert hand["log_loss"][m] * hand["hands"] == pytest.approx(total, rel=1e-9)
    assert hand["mbbr_minus_prior"] == pytest.approx(
        hand["log_loss"]["mbbr"] - hand["log_loss"]["prior"], abs=1e-9
    )
    assert {(r["opponent"], r["position"]) for r in data["opponents"]} == {("p1", 0), ("p1", 1)}
    small = str(tmp_path / "small.log")
    capsys.readouterr()
    assert main(["replay", small, "--as", "p2", "--service", "127.0.0.1:1"]) == 2
    assert "--service: a hold'em replay runs the hold'em posterior in this process" in (
        capsys.readouterr().err
    )
    assert main(["replay", small, "--as", "p2", "--mbbr-prior", "mixture"]) == 2
    assert "--mbbr-prior: hold'em's prior is 'informed' only" in capsys.readouterr().err


class _Recorded:
    """A model source that keeps every model it hands out, with the hands it had seen then."""

    def __init__(self, source: HoldemModels) -> None:
        self.source, self.seen, self.models = source, 0, []

    def observe(self, observations) -> None:
        self.source.observe(observations)
        self.seen += len(observations)

    def model(self, offset: int, opponent_position: int):
        out = self.source.model(offset, opponent_position)
        self.models.append((self.seen, offset, opponent_position, out[0]))
        return out

    def close(self) -> None:
        self.source.close()


def test_replay_predicts_with_the_model_the_agent_plays_refitted_as_it_refits(
    monkeypatch,
) -> None:
    """The replay's models are those of MBBR fed the same hands by the match engine's agent
    (``HoldemMBBRAgent.end_hand``), solving as a session does (beside the model, taking effect
    ``SOLVE_LAG`` hands later: 3 here, 50 in a session): past H hands MBBR's solve refits the
    posterior's prior (the tilt), and the replay's predictions after it are the refitted
    model's, bit for bit."""
    monkeypatch.setattr(served_module, "SOLVE_LAG", 3)
    config = MBBRConfig(prior=Prior.INFORMED, hands_default=12)  # a solve (and refit) at hand 12
    hands = LOG.hands[:20]
    rules, source = holdem_replay_parts("holdem2p", config)
    recorded = _Recorded(source)
    replay(rules.game, hands, "p1", lambda labels: recorded, config=config, rules=rules)

    served = holdem_served("holdem2p")
    played = served.played_config(config)
    mbbr = HoldemMBBR(
        HoldemPosterior(served.spots, served.blueprint, played),
        served.check,
        played,
        budget=played.safety_budget,
        lag=served_module.SOLVE_LAG,
    )
    agent = HoldemMBBRAgent("mbbr", mbbr, seed=0)
    fresh = HoldemPosterior(served.spots, served.blueprint, played)
    compared, positions = set(), set()  # the positions p1 has played a hand from
    for k, hand in enumerate(hands):
        p = hand.names.index("p1")
        for seen, offset, q, model in recorded.models:
            # what the replay predicted hand k with (before a hand from p: the prior column)
            if seen == k and (q - offset) % 2 == p and p in positions:
                np.testing.assert_array_equal(model, mbbr.posterior.models_profile(p)[q])
                compared.add(k)
        agent.end_hand(rules.observation(hand, p))
        positions.add(p)
    assert mbbr.solved_at == 12 and max(compared) >= 16 and len(compared) >= 10
    for p, fit in enumerate(mbbr.posterior.fits):  # the solve moved the prior: a real refit
        assert not np.array_equal(fit.alpha0, fresh.fits[p].alpha0)


def test_replay_reads_a_holdem_log_the_projects_dealer_wrote(tmp_path, capsys) -> None:
    """Two hold'em styles play 24 hands through the project's dealer over loopback TCP; the
    replay of its log (the game from the header's file name) scores every action of Alice's
    opponent, each hand's."""
    gamefile = DATA / "holdem.limit.2p.reverse_blinds.game"
    gamedef = read_game_def(gamefile)
    policies = [make_policy(name, gamedef, seed) for seed, name in enumerate(("maniac", "cfr"))]

    def start(ports):
        pairs = zip(ports, policies, strict=True)
        return [AgentThread(port, policy, game=gamedef) for port, policy in pairs]

    captured, _ = run_dealer(
        tmp_path,
        hands=24,
        game=gamedef,
        clients=start,
        names=("Alice", "Bob"),
        game_file=gamefile.name,
    )
    assert captured.result.status == 0, captured.stderr
    path = tmp_path / "m.log"
    bob = []  # Bob's actions a hand: every one is an opponent decision from Alice's seat
    for hand in parse_log(captured.log).hands:
        state, acts = HandState(gamedef), 0
        for action in hand.betting.replace("/", ""):
            acts += hand.names[state.current] == "Bob"
            state.apply(action)
        bob.append(acts)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["replay", str(path), "--as", "Alice", "--json"]) == 0
    data = json.loads(out.getvalue())
    assert data["hands"] == 24 and data["mbbr"]["prior"] == "informed"
    assert data["every_decision"]["mbbr"]["decisions"] == sum(bob) > 24
    assert data["per_hand"]["hands"] == sum(acts > 0 for acts in bob) > 12
