"""Strategy arrays, validation, and the JSON files keyed by OpenSpiel information states."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openspiel_oracle import openspiel_game, random_profile, tabular_policy

from oppmodel.modeling._strategy_kernels import first_invalid_row
from oppmodel.modeling.errors import InvalidArgumentError, InvalidStrategyError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_of, load_json, load_profile
from oppmodel.modeling.games.kuhn import KuhnGame, kuhn_game
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.strategy import (
    SUM_TOLERANCE,
    profile_to_json,
    save_profile,
    save_strategy,
    strategy_from_dict,
    strategy_to_dict,
    uniform_profile,
    validate_profile,
    validate_strategy,
)


def read_kuhn(game: KuhnGame, *paths: Path) -> np.ndarray:
    """A profile in OpenSpiel's conventions from strategy files: read onto the compiled Kuhn
    game (the one reader, either key style) and converted back, as the Kuhn presentation does."""
    compiled = limit_game(f"kuhn{game.num_players}p")
    return kuhn_profile_of(compiled, load_profile(compiled, *paths))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_profile_file_round_trip(tmp_path, n: int) -> None:
    game = kuhn_game(n)
    profile = random_profile(game, np.random.default_rng(n))
    path = tmp_path / "profile.json"
    save_profile(game, profile, path)
    np.testing.assert_array_equal(read_kuhn(game, path), profile)
    doc = json.loads(path.read_text())
    assert doc["num_players"] == n and len(doc["positions"]) == n


@pytest.mark.parametrize("n", [2, 3, 4])
def test_per_position_files_round_trip_in_any_order(tmp_path, n: int) -> None:
    game = kuhn_game(n)
    profile = random_profile(game, np.random.default_rng(10 + n))
    paths = []
    for p in reversed(range(n)):
        paths.append(tmp_path / f"p{p}.json")
        save_strategy(game, p, profile[p], paths[-1])
    np.testing.assert_array_equal(read_kuhn(game, *paths), profile)
    assert set(load_json(limit_game(f"kuhn{n}p"), paths[0])[0]) == {n - 1}


def test_json_keys_are_openspiel_information_states() -> None:
    game = kuhn_game(3)
    os_game = openspiel_game(3)
    profile = robust_profile("N3")
    policy = tabular_policy(game, os_game, profile)
    doc = profile_to_json(game, profile)
    keys = [k for position in doc["positions"] for k in position]
    assert sorted(keys) == sorted(policy.state_lookup)
    for p, table in enumerate(doc["positions"]):
        for key, probs in table.items():
            np.testing.assert_array_equal(
                probs, policy.action_probability_array[policy.state_lookup[key]]
            )
        np.testing.assert_array_equal(strategy_from_dict(game, p, table), profile[p])


def _write(tmp_path, doc, name="bad.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _good_doc() -> dict:
    return profile_to_json(kuhn_game(3), uniform_profile(kuhn_game(3)))


def _malformed_docs():
    def edit(fn):
        doc = _good_doc()
        fn(doc)
        return doc

    return [
        ("{not json", "profile"),
        ([1, 2, 3], "profile"),
        ({"game": "kuhn_poker", "num_players": 3}, "profile"),
        (edit(lambda d: d.update(num_players=2)), "num_players"),
        (edit(lambda d: d["positions"].pop()), "positions"),
        (edit(lambda d: d.update(positions={"0": {}})), "positions"),
        (edit(lambda d: d["positions"][1].pop("0p")), "positions[1]"),
        (edit(lambda d: d["positions"][0].update({"0": [0.6, 0.6]})), "positions[0]"),
        (edit(lambda d: d["positions"][0].update({"0": [-0.5, 1.5]})), "positions[0]"),
        (edit(lambda d: d["positions"][2].update({"1pp": [1.0]})), "positions[2]['1pp']"),
        (edit(lambda d: d["positions"][2].update({"1pp": ["a", "b"]})), "positions[2]['1pp']"),
        (edit(lambda d: d["positions"][2].update({"1pp": [True, False]})), "positions[2]['1pp']"),
        (edit(lambda d: d["positions"][0].update({"9": [1.0, 0.0]})), "positions[0]['9']"),
        (edit(lambda d: d["positions"][0].update({"0b": [1.0, 0.0]})), "positions[0]['0b']"),
        (edit(lambda d: d["positions"].__setitem__(0, [1, 2])), "positions[0]"),
        ({"num_players": 3, "position": 5, "strategy": {}}, "position"),
        ({"num_players": 3, "position": 0, "strategy": {"0": [1, 0]}}, "strategy"),
    ]


@pytest.mark.parametrize(("doc", "field"), _malformed_docs())
def test_malformed_files_name_the_field(tmp_path, doc, field: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        read_kuhn(kuhn_game(3), _write(tmp_path, doc))
    assert err.value.field == field


def test_missing_file(tmp_path) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        read_kuhn(kuhn_game(3), tmp_path / "nope.json")
    assert err.value.field == "profile"


def test_position_given_twice_or_missing(tmp_path) -> None:
    game = kuhn_game(3)
    profile = uniform_profile(game)
    save_strategy(game, 0, profile[0], tmp_path / "a.json")
    save_strategy(game, 0, profile[0], tmp_path / "b.json")
    save_strategy(game, 1, profile[1], tmp_path / "c.json")
    with pytest.raises(InvalidStrategyError, match="twice") as err:
        read_kuhn(game, tmp_path / "a.json", tmp_path / "b.json")
    assert err.value.field == "profile"
    with pytest.raises(InvalidStrategyError, match=r"\[2\]") as err:
        read_kuhn(game, tmp_path / "a.json", tmp_path / "c.json")
    assert err.value.field == "profile"


def test_validation_errors_name_the_field() -> None:
    game = kuhn_game(3)
    with pytest.raises(InvalidStrategyError) as err:
        validate_strategy(game, 0, np.full((3, 2), 0.5), "s")
    assert err.value.field == "s"
    bad = uniform_profile(game)
    bad[2, 1] = [np.nan, 1.0]
    with pytest.raises(InvalidStrategyError, match="NaN") as err:
        validate_profile(game, bad)
    assert err.value.field == "profile[2]"
    bad[2, 1] = [1.0 + 1e-6, 0.0]
    with pytest.raises(InvalidStrategyError, match=r"at 0pb sum to 1\.000001,") as err:
        validate_profile(game, bad)
    bad[2, 1] = [1.0 + 1e-12, 0.0]  # within the sum tolerance
    assert validate_profile(game, bad)[2, 1, 0] == 1.0 + 1e-12


@pytest.mark.parametrize(
    "row", [[np.inf, 0.0], [np.nan, 1.0], [-0.0001, 1.0001], [0.5, 0.5 + 1e-8], [2.0, -1.0]]
)
@pytest.mark.parametrize("position", [0, 2])
def test_fast_and_named_paths_reject_the_same_rows(row, position: int) -> None:
    game = kuhn_game(3)
    bad = uniform_profile(game)
    bad[position, 5] = row
    with pytest.raises(InvalidStrategyError) as err:
        validate_profile(game, bad)
    assert err.value.field == f"profile[{position}]"
    with pytest.raises(InvalidStrategyError):
        validate_strategy(game, position, bad[position], "s")


def test_valid_profiles_pass_unchanged() -> None:
    game = kuhn_game(3)
    rng = np.random.default_rng(0)
    for _ in range(50):
        profile = random_profile(game, rng)
        clean = validate_profile(game, profile)
        np.testing.assert_array_equal(clean, profile)
        assert clean is not profile
    assert validate_profile(game, uniform_profile(game).astype(np.float32)).dtype == np.float64


@settings(max_examples=200, deadline=None)
@given(
    entries=st.lists(
        st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, -0.01, 1.01, np.nan, np.inf]),
        min_size=4,
        max_size=4,
    ),
    rows=st.lists(st.integers(0, 47), min_size=2, max_size=2),
)
def test_fast_path_accepts_exactly_what_the_named_checks_accept(entries, rows) -> None:
    game = kuhn_game(3)
    profile = uniform_profile(game).reshape(-1, 2)
    profile[rows[0]] = entries[:2]
    profile[rows[1]] = entries[2:]
    profile = profile.reshape(3, game.num_infosets, 2)
    named_ok = True
    for p in range(3):
        try:
            validate_strategy(game, p, profile[p], "s")
        except InvalidStrategyError:
            named_ok = False
    fast_ok = first_invalid_row(profile, game.valid_infoset_mask(), SUM_TOLERANCE) < 0
    assert fast_ok == named_ok
    if not named_ok:
        with pytest.raises(InvalidStrategyError):
            validate_profile(game, profile)


def test_a_nan_probability_is_named_not_finite_at_its_information_set():
    """OpenSpiel-keyed tables and arrays alike: NaN is reported as such where it is, not as a
    missing information set."""
    game = kuhn_game(3)
    table = strategy_to_dict(game, 1, robust_profile("N3")[1])
    table["0p"] = [float("nan"), 1.0]
    with pytest.raises(InvalidStrategyError, match=r"\['0p'\]: not finite"):
        strategy_from_dict(game, 1, table, "prior_mean")
    strategy = robust_profile("N3")[1].copy()
    strategy[game.infosets(1)[2]] = [np.inf, 0.0]
    name = game.infoset_string(1, game.infosets(1)[2])
    with pytest.raises(InvalidStrategyError, match=f"NaN or infinity at {name}"):
        validate_strategy(game, 1, strategy, "prior_mean")


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p"])
def test_both_kinds_of_table_are_read_by_one_reader_with_the_same_answers(name: str) -> None:
    """A Kuhn table (``[p_pass, p_bet]``) and a limit game's (``[p_fold, p_call, p_raise]``) are
    read by one reader: an entry that is no list of numbers, one of the wrong length, and
    missing information sets are refused alike, each naming where and how many."""
    from oppmodel.modeling.games.acpc import strategy as limit_strategy

    if name == "kuhn3p":
        game, read, actions = kuhn_game(3), strategy_from_dict, "[p_pass, p_bet]"
        strategy = robust_profile("N3")[1]
    else:
        game = limit_game(name)
        read, actions = limit_strategy.strategy_from_dict, "[p_fold, p_call, p_raise]"
        strategy = limit_strategy.uniform_profile(game)[1]
    table = strategy_to_dict(game, 1, strategy)
    np.testing.assert_array_equal(read(game, 1, table, "prior_mean"), strategy)
    first, second, third = list(table)[:3]
    for bad in ("0.5", [0.5] * 4, [True] * len(table[first])):
        with pytest.raises(InvalidStrategyError) as info:
            read(game, 1, {**table, first: bad}, "prior_mean")
        assert (info.value.field, str(info.value)) == (
            f"prior_mean[{first!r}]",
            f"prior_mean[{first!r}]: must be {actions}",
        )
    short = {key: row for key, row in table.items() if key not in (second, third)}
    with pytest.raises(
        InvalidStrategyError, match=r"missing 2 information sets, e\.g\. \["
    ) as info:
        read(game, 1, short, "prior_mean")
    assert info.value.field == "prior_mean" and second in str(info.value)
