"""TurnTaking: deferrable work goes one piece per turn of the event loop, first come first served,
and all of it gets done."""

from __future__ import annotations

import asyncio

from oppmodel.server.turns import TurnTaking


class _Turns:
    """Counts the loop's turns: a callback that runs once in each."""

    def __init__(self) -> None:
        self.now = 0
        self.running = True

    def start(self) -> None:
        asyncio.get_running_loop().call_soon(self._tick)

    def _tick(self) -> None:
        self.now += 1
        if self.running:
            asyncio.get_running_loop().call_soon(self._tick)


def test_workers_woken_together_take_one_turn_each_in_the_order_they_asked():
    async def scenario() -> list[tuple[int, int]]:
        turns, taking = _Turns(), TurnTaking()
        pieces: list[tuple[int, int]] = []  # (turn, worker)

        async def worker(w: int) -> None:
            for _ in range(3):
                await taking.take()
                pieces.append((turns.now, w))

        turns.start()
        await asyncio.gather(*(worker(w) for w in range(5)))
        turns.running = False
        return pieces

    pieces = asyncio.run(scenario())
    assert len(pieces) == 15
    assert len({turn for turn, _ in pieces}) == 15  # never two pieces in one turn
    # first come first served: a worker that had its turn asks again behind those already
    # waiting (the first asked again before the others first asked)
    assert [w for _, w in pieces] == [0, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 1, 2, 3, 4]


def test_a_free_turn_is_taken_at_once():
    async def scenario() -> tuple[int, int]:
        turns, taking = _Turns(), TurnTaking()
        turns.start()
        await asyncio.sleep(0)
        before = turns.now
        await taking.take()
        turns.running = False
        return before, turns.now

    before, after = asyncio.run(scenario())
    assert after == before


def test_a_cancelled_caller_gives_up_its_place():
    async def scenario() -> list[str]:
        taking = TurnTaking()
        order: list[str] = []

        async def worker(name: str) -> None:
            await taking.take()
            order.append(name)

        # all three ask in the same turn: the first takes it, the others wait in line
        tasks = [asyncio.create_task(worker(name)) for name in ("first", "cancelled", "second")]
        await asyncio.sleep(0)
        tasks[1].cancel()
        await asyncio.wait_for(asyncio.gather(tasks[0], tasks[2]), timeout=1.0)
        return order

    assert asyncio.run(scenario()) == ["first", "second"]


def test_a_turn_left_taken_by_a_closed_loop_does_not_block_a_new_one():
    taking = TurnTaking()

    async def take_and_leave() -> None:
        await taking.take()  # the loop closes before its next turn releases it

    asyncio.run(take_and_leave())

    async def later() -> None:
        await asyncio.wait_for(taking.take(), timeout=1.0)

    asyncio.run(later())
