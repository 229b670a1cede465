"""Our winnings (issue 33): GetWinnings gives our chips in each observed hand by the game's
payoffs of what our seat saw, and the web page's curve of them ends at their sum. The hands are
the reference ACPC dealer's (a 3-player Kuhn log), streamed as the MATCHSTATE lines one seat
saw at each hand's end; what the test expects is the dealer's own payoffs in that log."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from acpc_support import DATA
from service_support import LOADED_DEADLINE, random_observations
from ui_support import TOKENS, get, service_and_ui

from oppmodel.clients.acpc.convert import logged_limit_observation
from oppmodel.clients.acpc.log import read_log
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.server.metrics import Metrics
from oppmodel.server.session_spec import Limits, SessionSpec, game_of
from oppmodel.server.sessions import SessionManager
from oppmodel.server.storage import ObservationRow
from oppmodel.server.storage_sqlite import SQLiteStore

SEAT = "Alice"  # the log's player whose hands the session observes
HANDS = 200


def test_winnings_are_the_dealers_payoffs_and_the_page_draws_their_sum(tmp_path: Path) -> None:
    game = limit_game("kuhn3p")
    logged = read_log(DATA / "kuhn3p-seed42-example-players.log").hands[:HANDS]
    observations, payoffs = [], []
    for hand in logged:
        position = hand.names.index(SEAT)
        observations.append(logged_limit_observation(game, hand, position))
        payoffs.append(hand.payoffs[position])
    assert any(o.hole.count(None) == 1 for o in observations), "no showdown with a fold in it"
    with (
        service_and_ui(tmp_path) as (port, ui),
        OpponentModelClient(f"127.0.0.1:{port}", token=TOKENS[0], timeout=LOADED_DEADLINE) as alice,
    ):
        session_id = alice.create_session(game="kuhn3p", opponent_labels=("bob", "carol"))
        session_id = session_id.session_id
        live = f"/session/{session_id}/live"
        assert 'id="winnings"' not in get(ui, live, TOKENS[0])[2]  # no hands, nothing won
        alice.observe_batch(session_id, observations[:80], first_sequence=1)
        body = get(ui, live, TOKENS[0])[2]  # the page read the first hands' winnings
        assert _shown(body) == (80, pytest.approx(sum(payoffs[:80]), abs=1e-9))
        alice.observe_batch(session_id, observations[80:], first_sequence=81)

        won = alice.winnings(session_id)
        assert won.after_hand == 0 and won.hands_observed == HANDS
        assert won.chips == pytest.approx(payoffs, abs=1e-9)  # hand by hand, the dealer's
        assert (won.unit_chips, won.unit_label) == (1, "mA/h")  # Kuhn's ante of 1 chip
        assert alice.winnings(session_id, after_hand=150).chips == pytest.approx(payoffs[150:])

        body = get(ui, live, TOKENS[0])[2]  # the page added the hands after those it read
        assert _shown(body) == (HANDS, pytest.approx(sum(payoffs), abs=1e-9))
        last = float(re.search(r'class="card winnings" data-last="([^"]+)"', body).group(1))
        assert last == pytest.approx(sum(payoffs), abs=1e-9)  # the curve's last value
        assert get(ui, live, TOKENS[1])[0] == 404  # another owner sees none of it


def _shown(body: str) -> tuple[int, float]:
    """(hands, chips) of the page's winnings."""
    found = re.search(r'id="winnings" data-chips="([^"]+)" data-hands="(\d+)"', body)
    assert found, "the page shows no winnings"
    return int(found.group(2)), float(found.group(1))


class CountingStore(SQLiteStore):
    """A real SQLite store that counts the reads of stored hands."""

    reads = 0

    def load_observations_async(
        self, session_id: str, *, after: int = 0, upto: int | None = None
    ) -> Future[list[ObservationRow]]:
        self.reads += 1
        return super().load_observations_async(session_id, after=after, upto=upto)

    def load_observation_async(
        self, session_id: str, sequence: int
    ) -> Future[ObservationRow | None]:
        self.reads += 1
        return super().load_observation_async(session_id, sequence)


def test_winnings_are_kept_in_memory_and_rebuilt_from_the_store_once_after_a_reload(
    tmp_path: Path,
) -> None:
    spec = SessionSpec("kuhn_poker(players=3)", 3, "us", ("a", "b"), MBBRConfig(k=4, seed=3))
    hands = random_observations(150, seed=9)
    db = tmp_path / "db.sqlite"

    def recomputed(store: SQLiteStore, sid: str, after: int = 0) -> list[float]:
        """Our chips in each stored hand, by the game's payoffs (no remembered value)."""
        game = game_of(spec)
        rows = store.load_observations(sid, after=after)
        return [game.winnings(game.hand_of_key(r.position, r.history, r.cards)) for r in rows]

    async def run() -> None:
        with ThreadPoolExecutor(1) as executor:
            store = CountingStore(db)
            manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=Limits())
            sid = (await manager.create("", spec)).session_id
            session = await manager.get("", sid)
            assert (await manager.observe(session, list(enumerate(hands[:40], 1))))[1] is None
            assert await manager.winnings(session, 0, 10_000) == (recomputed(store, sid), 40)
            # a poll after new hands reads nothing, and answers the new hands exactly
            assert (await manager.observe(session, list(enumerate(hands[40:90], 41))))[1] is None
            reads = store.reads
            chips, observed = await manager.winnings(session, 30, 10_000)
            assert store.reads == reads
            assert (chips, observed) == (recomputed(store, sid, after=30), 90)
            await manager.drain()
            store.close()

            store = CountingStore(db)  # a reload: a fresh manager over the stored session
            manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=Limits())
            session = await manager.get("", sid)
            reads = store.reads
            chips, observed = await manager.winnings(session, 0, 10_000)
            assert store.reads == reads + 1  # rebuilt from the store, once
            assert (chips, observed) == (recomputed(store, sid), 90)
            assert (await manager.observe(session, list(enumerate(hands[90:], 91))))[1] is None
            reads = store.reads
            answers = [await manager.winnings(session, after, 10_000) for after in (0, 89, 150)]
            assert store.reads == reads
            for after, answer in zip((0, 89, 150), answers, strict=True):
                assert answer == (recomputed(store, sid, after=after), 150)
            store.close()

    asyncio.run(run())


def test_a_payoff_needs_only_the_cards_that_decide_the_pot() -> None:
    game = limit_game("leduc3p")
    # a folded player's cards, and every card but ours in a hand won by folds, cannot change it
    full = game.returns("rrcf/rc", ["Ks", "Kh", "Qh"], ["", "Ah"])  # position 0 folds
    assert game.returns("rrcf/rc", [None, "Kh", "Qh"], ["", "Ah"]).tolist() == full.tolist()
    assert game.returns("rff", [None, None, "Qh"]).tolist() == [2.0, -1.0, -1.0]
    with pytest.raises(InvalidArgumentError, match=r"hole\[1\]: in the showdown"):
        game.returns("ccc/ccc", ["Ah", None, "Qs"], ["", "Jh"])
