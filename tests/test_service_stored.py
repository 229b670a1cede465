"""Databases written by earlier releases (``tests/data/service``, see its README) keep working.
The one written by the release before limit games opens in today's server: its Kuhn sessions
list, load, answer exactly as the compiled ``kuhn<n>p`` model fed the same hands (the sessions now
run on it: their stored snapshots, of the Kuhn kernels' models, are not used and the server says
so, rebuilding from every stored hand), go on observing and can be deleted. The one written before
compiled 3-player Kuhn's bankroll guarded against the whole equilibrium family does the same."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from service_support import connected, kuhn_library, random_observations
from test_limit_mbbr import random_hands
from test_service_leduc import assert_matches_library, library

from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.mbbr.config import MBBRConfig

STORED = Path(__file__).parent / "data" / "service" / "kuhn-sessions-74ba169.sqlite"
# label tuple -> (players, config, observations of the stored hands, snapshot); stored while the
# default prior was the informed one, which the sessions keep
SESSIONS = {
    ("opp_A", "opp_B"): (3, MBBRConfig(hands_default=5, seed=11, prior="informed"), (25, 1), True),
    ("solo",): (
        2,
        MBBRConfig(posterior="samples", k=6, hands_default=0, seed=4, prior="informed"),
        (8, 2),
        False,
    ),
}


@pytest.mark.parametrize("model_workers", [1, 0])
def test_a_database_of_the_release_before_limit_games_keeps_working(
    tmp_path: Path, model_workers: int, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "db.sqlite"
    shutil.copyfile(STORED, db)  # the committed file stays as it was written
    caplog.set_level("WARNING", logger="oppmodel.server")
    with connected(db, model_workers=model_workers) as (client, _):
        listed = client.list_sessions()
        assert len(listed) == 2
        for session in listed:
            players, config, (count, seed), snapshot = SESSIONS[session.opponent_labels]
            game = kuhn_game(players)
            hands = random_observations(count + 6, seed=seed, game=game)
            assert session.game == f"kuhn_poker(players={players})"
            assert session.hands_observed == count
            assert session.config.seed == config.seed
            assert session.config.posterior == config.posterior
            assert session.config.prior == config.prior
            sid = session.session_id
            assert client.get_session(sid).hands_observed == count  # loads it
            said = [r.getMessage() for r in caplog.records if sid in r.getMessage()]
            if snapshot:  # one line naming the session and why its snapshot is not used
                assert len(said) == 1, said
                assert "snapshot not used" in said[0] and "game_sha256" in said[0]
            else:  # nothing to say: a session without a snapshot replays every hand anyway
                assert said == []
            assert client.observe(sid, hands[count:], first_sequence=count + 1) == count + 6
            library = kuhn_library(config, hands, players)
            for p in range(players):
                got = client.response(sid, p)
                strategy, value = library.response(p)
                assert got.expected_value == value
                assert (got.strategy.probabilities == strategy[list(game.infosets(p))]).all()
                q = (p + 1) % players
                model = client.model(sid, session.opponent_labels[0], q)
                want, spread = library.opponent_model(model.our_position, q)
                assert model.effective_sample_size == spread
                assert (model.strategy.probabilities == want[list(game.infosets(q))]).all()
                assert model.strategy.as_dict().keys() == {
                    game.infoset_string(q, i) for i in game.infosets(q)
                }
            client.delete_session(sid)
        assert client.list_sessions() == []


COMPILED = Path(__file__).parent / "data" / "service" / "kuhn3p-compiled-4af37df.sqlite"


@pytest.mark.parametrize("model_workers", [1, 0])
def test_a_compiled_kuhn_session_whose_snapshot_predates_the_family_guard_is_rebuilt(
    tmp_path: Path, model_workers: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Its snapshot holds a one-hypothesis bankroll (N1) where the model now keeps three (N1, N2,
    N3): the snapshot is refused, once and saying so, and the session replays its 25 stored hands
    into today's model, then goes on as the library's model fed the same hands."""
    db = tmp_path / "db.sqlite"
    shutil.copyfile(COMPILED, db)
    caplog.set_level("WARNING", logger="oppmodel.server")
    config = MBBRConfig(hands_default=5, seed=11, prior="informed")  # stored at the then default
    hands = random_hands(limit_game("kuhn3p"), 31, seed=1)
    with connected(db, model_workers=model_workers) as (client, _):
        (session,) = client.list_sessions()
        sid = session.session_id
        assert (session.game, session.opponent_labels) == ("kuhn3p", ("opp_A", "opp_B"))
        assert client.get_session(sid).hands_observed == 25  # loads it
        said = [r.getMessage() for r in caplog.records if sid in r.getMessage()]
        assert len(said) == 1, said
        assert "snapshot not used" in said[0] and "safety" in said[0]
        assert client.observe(sid, hands[25:], first_sequence=26) == 31
        assert_matches_library(client, sid, library("kuhn3p", config, hands))
        client.delete_session(sid)
        assert client.list_sessions() == []
