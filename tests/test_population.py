"""The population prior (``oppmodel.modeling.population``): Minka's fixed point against a known
Dirichlet and against a brute-force maximum of the marginal likelihood, the informed fallback,
the counts a session gives, and a model built on a population (its snapshots included)."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import gammaln
from test_limit_mbbr import random_hands

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.mbbr.snapshot import SnapshotError
from oppmodel.modeling.play.panel import named_profile
from oppmodel.modeling.population import (
    MIN_OPPONENTS,
    Population,
    fit_population,
    polya_fit,
)

PLAIN = MBBRConfig(hands_default=0, seed=3, change_hazard=0.0, prior=Prior.INFORMED)
POPULATION = dataclasses.replace(PLAIN, prior=Prior.POPULATION)


def polya_log_likelihood(counts: np.ndarray, alpha: np.ndarray) -> float:
    """Sum over the rows of counts of the Dirichlet-multinomial log likelihood (no multinomial
    coefficient: it does not depend on alpha)."""
    s, totals = alpha.sum(), counts.sum(axis=1)
    rows = gammaln(s) - gammaln(totals + s) + (gammaln(counts + alpha) - gammaln(alpha)).sum(1)
    return float(rows.sum())


def fit(counts: np.ndarray, start=None) -> np.ndarray:
    alpha = np.ones(counts.shape[1]) if start is None else np.array(start, dtype=float)
    polya_fit(counts.astype(float), alpha, np.ones(len(alpha), np.bool_), 1e12, 20000, 1e-12)
    return alpha


def test_the_fit_recovers_a_known_dirichlet_from_synthetic_counts():
    rng = np.random.default_rng(32)
    true = np.array([2.0, 5.0, 1.0])
    strategies = rng.dirichlet(true, size=600)
    counts = np.array([rng.multinomial(rng.integers(5, 60), t) for t in strategies])
    alpha = fit(counts)
    assert np.allclose(alpha, true, rtol=0.12), alpha
    assert np.allclose(alpha / alpha.sum(), true / true.sum(), atol=0.02)


def test_the_fit_is_the_brute_force_maximum_of_the_marginal_likelihood():
    counts = np.array([[3, 1], [0, 4], [2, 2], [5, 0], [1, 3]], dtype=float)

    def negative(log_alpha):
        return -polya_log_likelihood(counts, np.exp(log_alpha))

    grid = np.linspace(-3, 4, 36)
    start = min(((a, b) for a in grid for b in grid), key=negative)
    best = minimize(negative, start, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-13})
    alpha = fit(counts)
    assert np.allclose(alpha, np.exp(best.x), rtol=1e-4), (alpha, np.exp(best.x))
    assert polya_log_likelihood(counts, alpha) >= -best.fun - 1e-9
    # from another start the fixed point reaches the same maximum
    assert np.allclose(fit(counts, start=[20.0, 0.1]), alpha, rtol=1e-6)


def test_opponents_who_all_play_alike_are_held_at_the_concentration_cap():
    # alike and mixed: less spread than any Dirichlet gives, the likelihood rises without end
    counts = np.array([[20, 20]] * 8, dtype=float)
    alpha = np.ones(2)
    polya_fit(counts, alpha, np.ones(2, np.bool_), 100.0, 20000, 1e-12)
    assert np.allclose(alpha, [50.0, 50.0])


def kuhn_counts(game, profile, opponents: int, hands: int, seed: int) -> np.ndarray:
    """The counts of ``opponents`` sessions (one opponent each, kuhn2p) against ``profile``."""
    out = []
    for j in range(opponents):
        model = build_model(game, PLAIN)
        for obs in random_hands(game, hands, seed + j, profile):
            model.observe(obs)
        out.append(model.opponent_counts()[0])
    return np.array(out)


def test_a_session_s_counts_add_up_to_the_opponent_s_moves():
    game = limit_game("kuhn3p")
    hands = random_hands(game, 60, 5)
    model = build_model(game, PLAIN)
    for obs in hands:
        model.observe(obs)
    counts = model.opponent_counts()
    assert counts.shape == (2, *game.legal_mask.shape)
    # every move of the opponent i + 1 seats after ours lands somewhere, split over hidden cards
    moves = np.zeros(2)
    for obs in hands:
        for depth, action in enumerate(obs.betting):
            mover = depth % 3  # Kuhn: one round, the players in turn from position 0
            offset = (mover - obs.position) % 3
            if offset and action in "fcr":
                moves[offset - 1] += 1
    assert np.allclose(counts.sum(axis=(1, 2, 3)), moves)
    assert np.all(counts[~np.broadcast_to(game.legal_mask, counts.shape)] == 0)


def test_too_few_opponents_fall_back_to_the_informed_prior():
    game = limit_game("kuhn2p")
    mean = build_model(game, PLAIN).prior_mean
    informed = prior_alpha(game, mean, epsilon=0.05, eta=4.0, prior=Prior.INFORMED)
    counts = kuhn_counts(game, named_profile(game, "maniac"), MIN_OPPONENTS - 1, 40, 1)
    few = fit_population(game, counts, prior_mean=mean)
    assert not few.fitted.any() and np.array_equal(few.alpha, informed)
    # a model on the empty population is the informed one, hand for hand
    empty = fit_population(game, counts[:0], prior_mean=mean)
    models = [build_model(game, PLAIN), build_model(game, POPULATION, population=empty)]
    for obs in random_hands(game, 30, 2, named_profile(game, "maniac")):
        for model in models:
            model.observe(obs)
    for p in (0, 1):
        assert np.allclose(
            models[0].opponent_model(p, 1 - p)[0], models[1].opponent_model(p, 1 - p)[0]
        )


def test_a_population_of_maniacs_expects_a_maniac_before_its_first_hand():
    game = limit_game("kuhn2p")
    maniac = named_profile(game, "maniac")
    mean = build_model(game, PLAIN).prior_mean
    population = fit_population(game, kuhn_counts(game, maniac, 6, 200, 10), prior_mean=mean)
    assert population.fitted.sum() >= 4 and population.opponents == 6
    fresh = build_model(game, POPULATION, population=population)
    informed = build_model(game, PLAIN)
    opening = game.infoset_from_string(0, "Ks:")  # position 0 holding the K, first to act
    raise_ = 2
    assert fresh.opponent_model(1, 0)[0][opening, raise_] > 0.85
    assert informed.opponent_model(1, 0)[0][opening, raise_] < 0.5


def test_a_population_prior_needs_its_population_and_snapshots_name_it():
    game = limit_game("kuhn2p")
    mean = build_model(game, PLAIN).prior_mean
    counts = kuhn_counts(game, named_profile(game, "maniac"), 4, 60, 20)
    population = fit_population(game, counts, prior_mean=mean)
    with pytest.raises(InvalidArgumentError) as info:
        build_model(game, POPULATION)
    assert info.value.field == "population"
    with pytest.raises(InvalidArgumentError):
        build_model(game, PLAIN, population=population)
    model = build_model(game, POPULATION, population=population)
    hands = random_hands(game, 40, 4)
    for obs in hands[:20]:
        model.observe(obs)
    again = Population.from_bytes(game, population.to_bytes())
    restored = build_model(game, POPULATION, population=again)
    restored.restore(model.snapshot())
    for obs in hands[20:]:
        model.observe(obs)
        restored.observe(obs)
    assert np.array_equal(model.models_profile(0), restored.models_profile(0))
    other = fit_population(game, counts[:3], prior_mean=mean)
    with pytest.raises(SnapshotError):
        build_model(game, POPULATION, population=other).restore(model.snapshot())
    with pytest.raises(InvalidArgumentError) as info:
        Population.from_bytes(limit_game("kuhn3p"), population.to_bytes())
    assert info.value.field == "population"


def test_the_cli_fits_a_population_from_logs_and_match_plays_it(tmp_path, capsys):
    from oppmodel.clients.cli import main

    log = Path(__file__).parent / "data" / "acpc" / "kuhn3p-seed42-example-players.log"
    out = tmp_path / "p.npz"
    # the one log three times: three matches, six opponents (two per log)
    assert (
        main(["population", str(log), str(log), str(log), "--as", "Alice", "--out", str(out)]) == 0
    )
    printed = capsys.readouterr().out
    assert "6 opponents from 3 logs of kuhn3p" in printed and ", 6 types;" in printed
    population = Population.from_bytes(limit_game("kuhn3p"), out.read_bytes())
    assert population.opponents == 6 and population.fitted.any()
    # the types (the default kind): each opponent one, then the two informed ones; the
    # Dirichlet kind is the same fit without them
    assert population.types is not None and len(population.types) == 8
    polya = tmp_path / "polya.npz"
    fit = ["population", str(log), str(log), str(log), "--as", "Alice", "--out", str(polya)]
    assert main([*fit, "--kind", "dirichlet"]) == 0
    assert ", 6 types" not in capsys.readouterr().out
    alone = Population.from_bytes(limit_game("kuhn3p"), polya.read_bytes())
    assert alone.types is None and np.array_equal(alone.alpha, population.alpha)
    argv = ["match", "--agents", "mbbr,n1,n3", "--hands", "40", "--duplicates", "1", "--json"]
    assert main([*argv, "--mbbr-population", str(out)]) == 0
    assert '"prior": "population"' in capsys.readouterr().out
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a population")
    assert main([*argv, "--mbbr-population", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(
        "oppmodel match: error: --mbbr-population: not a population"
    )


def test_replay_and_acpc_agent_play_a_population_file_in_this_process(tmp_path, capsys):
    from acpc_support import AgentThread, run_dealer

    from oppmodel.clients.acpc.agent import make_policy
    from oppmodel.clients.cli import main
    from oppmodel.modeling.games.acpc.gamedef import read_game_def

    log = Path(__file__).parent / "data" / "acpc" / "kuhn3p-seed42-example-players.log"
    out = tmp_path / "p.npz"
    assert (
        main(["population", str(log), str(log), str(log), "--as", "Alice", "--out", str(out)]) == 0
    )
    capsys.readouterr()
    replay = ["replay", str(log), "--as", "Alice", "--json", "--mbbr-population", str(out)]
    assert main([*replay, "--local"]) == 0
    assert json.loads(capsys.readouterr().out)["mbbr"]["prior"] == "population"
    assert main(replay) == 2  # Kuhn replays through the service by default: it fits its own
    assert capsys.readouterr().err.startswith("oppmodel replay: error: --mbbr-population: ")
    # acpc-agent: the same seat, cards and opponents, with and without the population
    kuhn3p = read_game_def("kuhn3p")
    agent = ["acpc-agent", "kuhn3p", "127.0.0.1", "--in-process", "--seed", "1"]
    eager = ["--mbbr-hands-default", "0", "--mbbr-safety-budget", "inf"]
    logs = []
    for extra in ([], ["--mbbr-population", str(out)]):
        codes = []

        def seats(ports, extra=extra, codes=codes):
            seat = threading.Thread(
                target=lambda: codes.append(
                    main([*agent[:3], str(ports[0]), *agent[3:], *eager, *extra])
                )
            )
            seat.start()
            others = [
                AgentThread(p, make_policy(n, kuhn3p, 2))
                for p, n in zip(ports[1:], ("n1", "n3"), strict=True)
            ]
            return [seat, *others]

        folder = tmp_path / str(len(logs))
        folder.mkdir()
        captured, _ = run_dealer(folder, hands=60, clients=seats)
        assert codes == [0]
        logs.append(captured.log)
    assert logs[0] != logs[1]  # the population's response plays other moves
    capsys.readouterr()
    assert main([*agent[:3], "1", "--service", "127.0.0.1:1", "--mbbr-population", str(out)]) == 2
    assert capsys.readouterr().err.startswith("oppmodel acpc-agent: error: --mbbr-population: ")
