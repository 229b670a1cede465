"""One session's backlog does not stall the others: a batch applied on the event loop yields to
other requests between slices of work, and the result is the one of applying every hand in turn."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from service_support import random_observations

from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.server.metrics import Metrics
from oppmodel.server.session_models import build_model
from oppmodel.server.session_spec import Limits, SessionSpec
from oppmodel.server.sessions import SessionManager
from oppmodel.server.storage_sqlite import SQLiteStore


def test_a_long_batch_of_one_session_lets_the_others_answer_between_its_hands(tmp_path):
    spec = SessionSpec("kuhn_poker(players=3)", 3, "us", ("a", "b"), MBBRConfig(hands_default=5))
    hands = list(enumerate(random_observations(60, seed=2), start=1))

    async def scenario() -> tuple[list[int], bytes]:
        store = SQLiteStore(tmp_path / "db.sqlite", synchronous="NORMAL")
        # a slice of zero seconds: yield after every hand; one commit for the whole batch
        limits = Limits(inline_slice_seconds=0.0, snapshot_seconds=1e9, snapshot_hands=10**9)
        try:
            with ThreadPoolExecutor(1) as executor:
                manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=limits)
                busy = await manager.get("", (await manager.create("", spec)).session_id)
                other = await manager.get("", (await manager.create("", spec)).session_id)
                await manager.observe(busy, hands[:16])  # measures the cost of a hand
                batch = asyncio.create_task(manager.observe(busy, hands[16:]))
                seen_during_batch = []
                while not batch.done():
                    await manager.response(other, 0, None)
                    seen_during_batch.append(busy.host.model.hands_observed)
                    await asyncio.sleep(0)
                acks, error = await batch
                assert error is None and len(acks) == len(hands) - 16
                return seen_during_batch, busy.host.model.snapshot()
        finally:
            store.close()

    seen, state = asyncio.run(scenario())
    # the other session answered at (nearly) every hand of the 44-hand batch, not only before
    # and after it
    assert len(set(seen) & set(range(17, 60))) >= 40
    one_by_one = build_model(spec)
    for _, hand in hands:
        one_by_one.observe(hand)
    assert state == one_by_one.snapshot()
