"""One strategy-file format for every command: what `oppmodel solve` writes (keyed by the compiled
game's strings, "Js:" / "Ks/Qh:rc/cr") is read by eval, match, acpc-agent, tournament seats and the
service; files keyed by OpenSpiel's Kuhn strings ("2ppb") are read too, converted exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from acpc_support import AgentThread, replay_command_json, run_dealer
from openspiel_oracle import random_profile
from service_support import connected

from oppmodel.clients.acpc.agent import make_policy
from oppmodel.clients.acpc.log import parse_log, read_log
from oppmodel.clients.acpc.service_policy import ServicePolicy
from oppmodel.clients.cli import build_parser, main
from oppmodel.clients.service_agent import service_mbbr_factory
from oppmodel.modeling.errors import InvalidStrategyError
from oppmodel.modeling.games.acpc import strategy as limit_strategy
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.strategy import (
    kuhn_profile_of,
    kuhn_profile_on,
    load_profile,
    parse_profile,
)
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.panel import named_profile
from oppmodel.modeling.strategy import profile_to_json as kuhn_profile_to_json
from oppmodel.modeling.strategy import save_profile as save_openspiel_profile
from oppmodel.modeling.strategy import uniform_profile


def _json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _both_styles(tmp_path: Path, n: int, profile: np.ndarray) -> tuple[Path, Path]:
    """A Kuhn profile written keyed by OpenSpiel's strings and by the compiled game's."""
    openspiel, ours = tmp_path / "openspiel.json", tmp_path / "ours.json"
    save_openspiel_profile(kuhn_game(n), profile, openspiel)
    compiled = limit_game(f"kuhn{n}p")
    limit_strategy.save_profile(compiled, kuhn_profile_on(compiled, profile), ours)
    assert '"2pb"' in openspiel.read_text() and '"Qs:cr"' in ours.read_text()
    return openspiel, ours


@pytest.mark.parametrize("n", [2, 3, 4])
def test_conversion_is_exact_both_ways(tmp_path, n: int) -> None:
    kuhn, compiled = kuhn_game(n), limit_game(f"kuhn{n}p")
    profile = random_profile(kuhn, np.random.default_rng(n))
    openspiel, ours = _both_styles(tmp_path, n, profile)
    on_compiled = kuhn_profile_on(compiled, profile)
    for path in (openspiel, ours):  # either style, onto either form of the game: equal bits
        np.testing.assert_array_equal(load_profile(compiled, path), on_compiled)
        np.testing.assert_array_equal(
            kuhn_profile_of(compiled, load_profile(compiled, path)), profile
        )
    np.testing.assert_array_equal(kuhn_profile_of(compiled, on_compiled), profile)
    text = json.dumps(kuhn_profile_to_json(kuhn, profile))
    np.testing.assert_array_equal(parse_profile(compiled, text, "doc"), on_compiled)


def test_openspiel_keys_on_a_game_that_is_not_kuhn_are_refused(tmp_path) -> None:
    openspiel, _ = _both_styles(tmp_path, 2, uniform_profile(kuhn_game(2)))
    with pytest.raises(InvalidStrategyError, match="not a Kuhn game") as err:
        load_profile(limit_game("leduc2p"), openspiel)
    assert err.value.field == "positions[0]"


def test_eval_match_and_agents_take_either_style(tmp_path, capsys) -> None:
    n2 = robust_profile("N2")
    openspiel, ours = _both_styles(tmp_path, 3, n2)
    evals = [_json(capsys, "eval", "--profile", str(p))["positions"] for p in (openspiel, ours)]
    assert evals[0] == evals[1]
    assert evals[0] == _json(capsys, "eval", "--profile", "n2")["positions"]
    doc = _json(capsys, "match", "--agents", f"{openspiel},{ours},n2", "--hands", "30",
                "--duplicates", "1")  # fmt: skip
    assert {r["name"] for r in doc["ranking"]} == {str(openspiel), str(ours), "n2"}
    game = read_game_def("kuhn3p")
    for path in (openspiel, ours):
        policy = make_policy(str(path), game, 0)  # tournament's builtin:FILE, --agent FILE
        np.testing.assert_array_equal(policy.profile, kuhn_profile_on(limit_game("kuhn3p"), n2))


@pytest.mark.parametrize("game", ["kuhn_poker(players=3)", "kuhn3p"])
def test_the_service_reads_either_style_as_json(tmp_path, game: str) -> None:
    n1 = robust_profile("N1")
    compiled = limit_game("kuhn3p")
    with connected(tmp_path / "s.sqlite") as (client, _):
        for path in _both_styles(tmp_path, 3, n1):
            sid = client.create_session(game=game, default_strategy=path.read_text()).session_id
            for card in range(4):
                if game == "kuhn3p":
                    hole = compiled.deck[card]
                    reply = client.action(sid, matchstate=f"MATCHSTATE:0:0::{hole}||")
                    want = kuhn_profile_on(compiled, n1)[
                        0, compiled.infoset_from_string(0, hole + ":")
                    ]
                else:
                    reply = client.action(sid, position=0, card=card)
                    want = n1[0, card]
                assert reply.default_policy
                assert reply.probabilities == pytest.approx(tuple(want), abs=0)


@pytest.mark.parametrize(("game", "agents"), [("kuhn3p", 3), ("leduc2p", 2)])
def test_solve_eval_agent_match_round_trip(tmp_path, capsys, game: str, agents: int) -> None:
    out = tmp_path / f"{game}.json"
    solved = _json(capsys, "solve", game, "--iterations", "30", "--out", str(out))
    evaluated = _json(capsys, "eval", "--game", game, "--profile", str(out))
    assert evaluated["nash_conv"] == pytest.approx(solved["nash_conv"], abs=1e-9)

    gamedef = read_game_def(game)
    names = tuple(f"seat{i}" for i in range(agents))
    tallies: list[dict] = []

    def start(ports: tuple[int, ...]) -> list:
        class Command(AgentThread):  # the command itself: acpc-agent --strategy FILE
            def _run(self, port: int, _policy: object) -> None:
                try:
                    argv = [game, "127.0.0.1", str(port), "--strategy", str(out)]
                    tallies.append(_json(capsys, "acpc-agent", *argv))
                except BaseException as exc:
                    self.error = exc

        others = [
            AgentThread(port, make_policy(str(out), gamedef, i), game=gamedef)
            for i, port in enumerate(ports[1:])
        ]
        return [Command(ports[0], None, game=gamedef), *others]  # type: ignore[arg-type]

    captured, _ = run_dealer(tmp_path, hands=20, game=gamedef, names=names, clients=start)
    assert captured.result.status == 0, captured.stderr
    assert tallies[0]["hands"] == 20 and tallies[0]["agent"] == f"strategy {out}"

    agent_list = ",".join([str(out)] * agents)
    doc = _json(capsys, "match", "--game", game, "--agents", agent_list, "--hands", "20",
                "--duplicates", "1")  # fmt: skip
    assert sum(r["milli_antes_per_hand"] for r in doc["ranking"]) == pytest.approx(0.0, abs=1e-9)


def _pure_file(tmp_path: Path, game: str, style: str) -> Path:
    """A pure panel style of ``game`` written as a strategy file."""
    compiled = limit_game(game)
    path = tmp_path / f"{style}.json"
    limit_strategy.save_profile(compiled, named_profile(compiled, style), path)
    return path


def test_every_command_that_builds_mbbr_takes_the_prior_strategy_flag(tmp_path) -> None:
    parser = build_parser()
    for argv in (
        ["acpc-agent", "kuhn3p", "127.0.0.1", "1", "--in-process"],
        ["match", "--agents", "mbbr,n1,n3"],
        ["demo"],
        ["replay", "x.log", "--as", "Bob"],
    ):
        args = parser.parse_args([*argv, "--mbbr-prior-strategy", "f.json"])
        assert args.mbbr_prior_strategy == "f.json"
    assert main(["acpc-agent", "kuhn3p", "127.0.0.1", "1", "--mbbr-prior-strategy", "f.json"]) == 2


def test_match_mbbr_plays_the_prior_strategy_as_its_default(tmp_path, capsys) -> None:
    always = _pure_file(tmp_path, "kuhn3p", "always-bet")
    common = ["--hands", "40", "--duplicates", "1", "--seed", "3"]
    fixed = _json(capsys, "match", "--agents", f"{always},n1,n3", *common)
    mbbr = _json(capsys, "match", "--agents", "mbbr,n1,n3", "--mbbr-prior-strategy", str(always),
                 "--mbbr-hands-default", "1000", *common)  # fmt: skip
    assert mbbr["mbbr"]["prior_strategy"] == str(always)
    by_name = {r["name"]: r["milli_antes_per_hand"] for r in mbbr["ranking"]}
    assert (
        by_name["mbbr"]
        == {r["name"]: r["milli_antes_per_hand"] for r in fixed["ranking"]}[str(always)]
    )


def _actions_of(gamedef, log_text: str, name: str) -> list[str]:
    """Every action ``name`` took in a dealer log."""
    played = []
    for hand in parse_log(log_text).hands:
        state = HandState(gamedef)
        for action in hand.betting.replace("/", ""):
            if hand.names[state.current] == name:
                played.append(action)
            state.apply(action)
    return played


def test_tournament_builtin_mbbr_plays_the_prior_strategy(tmp_path, capsys) -> None:
    calling = _pure_file(tmp_path, "leduc2p", "calling-station")
    argv = ["--game", "leduc2p", "--agent", "m=builtin:mbbr", "--agent", "c=builtin:cfr"]
    report = _json(capsys, "tournament", *argv, "--hands", "20", "--out", str(tmp_path / "t"),
                   "--mbbr-prior-strategy", str(calling))  # fmt: skip
    gamedef = read_game_def("leduc2p")
    played = [
        a for m in report["matches"] for a in _actions_of(gamedef, Path(m["log"]).read_text(), "m")
    ]
    assert played and set(played) == {"c"}  # MBBR's first 100 hands: the calling station


def test_acpc_agent_in_process_mbbr_plays_the_prior_strategy(tmp_path, capsys) -> None:
    calling = _pure_file(tmp_path, "leduc2p", "calling-station")
    gamedef = read_game_def("leduc2p")

    def start(ports: tuple[int, ...]) -> list:
        class Command(AgentThread):
            def _run(self, port: int, _policy: object) -> None:
                try:
                    argv = ["leduc2p", "127.0.0.1", str(port), "--in-process", "--mbbr-h", "1000"]
                    _json(capsys, "acpc-agent", *argv, "--mbbr-prior-strategy", str(calling))
                except BaseException as exc:
                    self.error = exc

        cfr = AgentThread(ports[1], make_policy("cfr", gamedef, 1), game=gamedef)
        return [Command(ports[0], None, game=gamedef), cfr]  # type: ignore[arg-type]

    captured, _ = run_dealer(tmp_path, hands=30, game=gamedef, names=("mbbr", "cfr"), clients=start)
    assert captured.result.status == 0, captured.stderr
    played = _actions_of(gamedef, captured.log, "mbbr")
    assert played and set(played) == {"c"}  # the calling station: never raises, never folds


def test_the_service_sessions_take_the_prior_strategy(tmp_path) -> None:
    calling = _pure_file(tmp_path, "leduc2p", "calling-station")
    text = calling.read_text()
    gamedef = read_game_def("leduc2p")
    state = "MATCHSTATE:0:0::Ks|"
    with connected(tmp_path / "s.sqlite") as (client, port):
        policy = ServicePolicy(
            gamedef, f"127.0.0.1:{port}", config=MBBRConfig(), prior_strategy=text
        )
        try:
            assert policy.fallback_name == "prior-strategy"
            reply = client.action(policy.session_id, matchstate=state)  # acpc-agent --service
        finally:
            policy.close()
        assert reply.default_policy and reply.probabilities == (0.0, 1.0, 0.0)
        game = limit_game("leduc2p")
        agent = service_mbbr_factory(client, name="m", config=MBBRConfig(), prior_strategy=text)(
            game, 0
        )  # demo's agent
        agent.begin_match(game, 0, ["m", "o"])
        assert client.action(agent.session_id, matchstate=state).probabilities == (0.0, 1.0, 0.0)


def test_replay_reads_the_prior_strategy_in_either_style(tmp_path) -> None:
    log = read_log(Path(__file__).parent / "data" / "acpc" / "kuhn3p-seed42-example-players.log")
    openspiel, ours = _both_styles(tmp_path, 3, robust_profile("N2"))
    reports = [
        replay_command_json(log, 60, "Alice", tmp_path, "--local", *flag)[0]
        for flag in ([], ["--mbbr-prior-strategy", str(openspiel)],
                     ["--mbbr-prior-strategy", str(ours)])
    ]  # fmt: skip
    for report in reports:
        report.pop("seconds", None)
    assert reports[1] == reports[2] != reports[0]


def test_demo_sessions_keep_the_prior_strategy(tmp_path, capsys) -> None:
    calling = _pure_file(tmp_path, "leduc2p", "calling-station")
    data = tmp_path / "demo"
    doc = _json(capsys, "demo", "--game", "leduc2p", "--opponents", "maniac", "--hands", "5",
                "--duplicates", "1", "--H", "1000", "--data-dir", str(data),
                "--mbbr-prior-strategy", str(calling))  # fmt: skip
    with connected(data / "oppmodel.sqlite") as (client, _):
        for session_id in doc["sessions"]:
            reply = client.action(session_id, matchstate="MATCHSTATE:0:0::Ks|")
            assert reply.default_policy and reply.probabilities == (0.0, 1.0, 0.0)
