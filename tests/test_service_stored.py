"""A database written by the release before limit games (``tests/data/service``, see its
README) opens in today's server: its Kuhn sessions list, load (snapshot and replayed tail), answer
exactly as the library fed the same hands, go on observing and can be deleted."""

from __future__ import annotations

import shutil
from pathlib import Path

from service_support import connected, random_observations

from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model

STORED = Path(__file__).parent / "data" / "service" / "kuhn-sessions-74ba169.sqlite"
SESSIONS = {  # label tuple -> (players, config, observations of the stored hands)
    ("opp_A", "opp_B"): (3, MBBRConfig(hands_default=5, seed=11), (25, 1)),
    ("solo",): (2, MBBRConfig(posterior="samples", k=6, hands_default=0, seed=4), (8, 2)),
}


def test_a_database_of_the_release_before_limit_games_keeps_working(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    shutil.copyfile(STORED, db)  # the committed file stays as it was written
    with connected(db) as (client, _):
        listed = client.list_sessions()
        assert len(listed) == 2
        for session in listed:
            players, config, (count, seed) = SESSIONS[session.opponent_labels]
            game = kuhn_game(players)
            hands = random_observations(count + 6, seed=seed, game=game)
            assert session.game == f"kuhn_poker(players={players})"
            assert session.hands_observed == count
            assert session.config.seed == config.seed
            assert session.config.posterior == config.posterior
            sid = session.session_id
            assert client.observe(sid, hands[count:], first_sequence=count + 1) == count + 6
            library = build_model(game, config)
            for obs in hands:
                library.observe(obs)
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
            client.delete_session(sid)
        assert client.list_sessions() == []
