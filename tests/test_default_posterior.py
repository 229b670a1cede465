"""The Dirichlet posterior is the default everywhere (library, CLI, proto, service, client, ACPC
agent); the paper's sample posterior is one flag away; sessions stored with the sample posterior,
including those stored before the posterior was a setting, keep it."""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from acpc_support import GAME as ACPC_GAME
from service_support import connected, kuhn_library, random_observations

from oppmodel.clients.acpc.agent import make_policy
from oppmodel.clients.cli import build_parser, main
from oppmodel.clients.commands._mbbr_options import add_mbbr_arguments, mbbr_config
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.v1 import opponent_model_pb2 as pb

GAME = kuhn_game(3)

# The schema and the spec JSON as the release before this change wrote them (server/storage.py,
# SessionSpec.to_json); the oldest specs predate the posterior field.
OLD_SCHEMA = """
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_unix_ms INTEGER NOT NULL,
    spec TEXT NOT NULL
);
CREATE TABLE observations (
    session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    sequence INTEGER NOT NULL,
    position INTEGER NOT NULL,
    history TEXT NOT NULL,
    cards TEXT NOT NULL,
    PRIMARY KEY (session_id, sequence)
) WITHOUT ROWID;
"""
OLD_CONFIG = {"epsilon": 0.05, "k": 6, "hands_default": 5, "eta": 4.0, "prior": "informed",
              "response": "mean", "seed": 9}  # fmt: skip


def write_old_database(path: Path, sessions: dict[str, dict], observations) -> None:
    """A database as the earlier release left it: these specs, each with ``observations``."""
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
        for session_id, config in sessions.items():
            spec = {
                "game": "kuhn_poker(players=3)",
                "num_players": 3,
                "our_label": "us",
                "opponent_labels": ["opp_A", "opp_B"],
                "config": config,
                "prior_mean": None,
            }
            db.execute(
                "INSERT INTO sessions VALUES (?, '', 1700000000000, ?)",
                (session_id, json.dumps(spec)),
            )
            db.executemany(
                "INSERT INTO observations VALUES (?, ?, ?, ?, ?)",
                [
                    (session_id, s, o.position, o.history, json.dumps(list(o.cards)))
                    for s, o in enumerate(observations, start=1)
                ],
            )


def test_the_library_default_is_the_dirichlet_posterior_and_samples_are_the_papers() -> None:
    assert MBBRConfig().posterior == "dirichlet"
    assert build_model(limit_game("kuhn3p"), MBBRConfig()).config.posterior == "dirichlet"
    paper = MBBRConfig(posterior="samples")
    assert (paper.epsilon, paper.k, paper.hands_default, paper.eta) == (0.05, 10, 100, 4.0)


def _flags(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_mbbr_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_cli_flags_default_to_dirichlet_and_k_needs_the_samples() -> None:
    assert mbbr_config(_flags()).posterior == "dirichlet"
    paper = mbbr_config(_flags("--mbbr-posterior", "samples", "--mbbr-k", "20"), seed=3)
    assert (paper.posterior, paper.k, paper.seed) == ("samples", 20, 3)
    assert mbbr_config(_flags("--mbbr-posterior", "samples")).k == 10
    # k means nothing to the Dirichlet posterior: refused, not silently ignored
    with pytest.raises(InvalidArgumentError, match="--mbbr-posterior samples") as info:
        mbbr_config(_flags("--mbbr-k", "20"))
    assert info.value.field == "--mbbr-k"


@pytest.mark.parametrize("command", ["match", "acpc-agent", "replay"])
def test_every_mbbr_command_documents_both_posteriors(command: str) -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = " ".join(subparsers.choices[command].format_help().split())
    assert "dirichlet: one Dirichlet per opponent information set" in text
    assert "samples: the paper's k importance-weighted" in text
    assert "(dirichlet)" in text  # the default, as argparse prints it


def test_the_acpc_agents_builtin_mbbr_plays_the_dirichlet_posterior() -> None:
    assert make_policy("mbbr", ACPC_GAME, 3).model.config.posterior == "dirichlet"


def test_an_unset_posterior_means_dirichlet_on_the_service_and_samples_stays_one_field_away(
    tmp_path: Path,
) -> None:
    with connected(tmp_path / "s.sqlite") as (client, _):
        unset = client._stub.CreateSession(
            pb.CreateSessionRequest(
                config=pb.SessionConfig(
                    game="kuhn_poker(players=3)", our_label="us", opponent_labels=["a", "b"]
                )
            ),
            timeout=10,
        ).session
        assert unset.config.mbbr.posterior == pb.POSTERIOR_DIRICHLET  # named, not left unset
        assert unset.config.mbbr.prior == pb.PRIOR_TILTED  # the Dirichlet posterior's prior
        assert client.get_session(unset.session_id).config.posterior == "dirichlet"
        assert client.create_session(config=MBBRConfig()).config.posterior == "dirichlet"
        paper = client.create_session(config=MBBRConfig(posterior="samples", k=7))
        assert (paper.config.posterior, paper.config.k) == ("samples", 7)
        # an unset prior with the samples: the eta mixture (the tilt has no sample form), named
        samples = client._stub.CreateSession(
            pb.CreateSessionRequest(
                config=pb.SessionConfig(
                    game="kuhn_poker(players=3)",
                    our_label="us",
                    opponent_labels=["a", "b"],
                    mbbr=pb.MbbrParams(posterior=pb.POSTERIOR_SAMPLES),
                )
            ),
            timeout=10,
        ).session
        assert samples.config.mbbr.prior == pb.PRIOR_ETA_MIXTURE
        assert paper.config.prior == "eta-mixture"  # the client's config resolves it alike
    with connected(tmp_path / "s.sqlite") as (client, _):  # after a restart, as created
        assert client.get_session(unset.session_id).config.posterior == "dirichlet"
        assert client.get_session(paper.session_id).config.posterior == "samples"


def test_sessions_stored_by_the_earlier_release_keep_the_sample_posterior(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    hands = random_observations(40, seed=2)
    write_old_database(
        db,
        {
            "before-posteriors": OLD_CONFIG,  # no "posterior" key: it meant the samples
            "explicit-samples": {**OLD_CONFIG, "posterior": "samples"},
            "explicit-dirichlet": {**OLD_CONFIG, "posterior": "dirichlet"},
        },
        hands,
    )
    expected = {  # a Kuhn session's model: the compiled kuhn3p's
        posterior: kuhn_library(MBBRConfig(**{**OLD_CONFIG, "posterior": posterior}), hands)
        for posterior in ("samples", "dirichlet")
    }
    with connected(db) as (client, _):
        for session_id, posterior in (
            ("before-posteriors", "samples"),
            ("explicit-samples", "samples"),
            ("explicit-dirichlet", "dirichlet"),
        ):
            session = client.get_session(session_id)
            assert session.config.posterior == posterior
            assert (session.config.k, session.hands_observed) == (6, 40)
            assert session.config.safety_budget == math.inf  # before the budget: none
            for position in range(3):
                got = client.model(session_id, "opp_A", (position + 1) % 3)
                want, ess = expected[posterior].opponent_model(position, (position + 1) % 3)
                rows = GAME.infosets((position + 1) % 3)
                np.testing.assert_array_equal(got.strategy.probabilities, want[rows])
                assert got.effective_sample_size == ess


@pytest.mark.parametrize("flags", [[], ["--posterior", "samples"]])
def test_the_demo_plays_the_dirichlet_posterior_unless_told_otherwise(
    flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ["demo", "--hands", "20", "--duplicates", "1", "--json", "--data-dir", str(tmp_path)]
    assert main([*argv, *flags]) == 0
    doc = json.loads(capsys.readouterr().out)
    posterior = flags[-1] if flags else "dirichlet"
    assert doc["posterior"] == posterior
    with sqlite3.connect(doc["db"]) as db:
        specs = [json.loads(spec) for (spec,) in db.execute("SELECT spec FROM sessions")]
    assert specs and all(spec["config"]["posterior"] == posterior for spec in specs)
