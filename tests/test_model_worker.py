"""The model worker: a real child process holding objects by key (server/model_worker.py), and a
real server whose models live in one, killed mid-session."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from service_support import GAME, kuhn_library, random_observations, running_server

from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError, UnavailableError
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.strategy import strategy_to_dict
from oppmodel.server.model_worker import ModelWorker
from oppmodel.server.storage_sqlite import SQLiteStore


def _put(objects: dict, key: str, value: object) -> int:
    objects[key] = value
    return len(objects)


def _get(objects: dict, key: str) -> object:
    return objects[key]


def _refuse(objects: dict, key: str) -> None:
    raise InvalidArgumentError("config.k", f"{key} is refused")


class _Unpicklable(Exception):
    def __reduce__(self) -> tuple:
        raise TypeError("not picklable")


def _fail_oddly(objects: dict, key: str) -> None:
    raise _Unpicklable("odd")


def _sleep(objects: dict, key: str, seconds: float) -> str:
    time.sleep(seconds)
    return key


def _pid(objects: dict, key: str) -> int:
    return os.getpid()


def test_calls_return_results_and_errors_in_order() -> None:
    async def main() -> None:
        worker = ModelWorker(preload=[])
        try:
            assert await worker.call(_put, "a", np.arange(3)) == 1
            results = await asyncio.gather(
                worker.call(_put, "b", {"x": 1}),
                worker.call(_get, "a"),
                worker.call(_get, "b"),
            )
            assert results[0] == 2
            np.testing.assert_array_equal(results[1], np.arange(3))
            assert results[2] == {"x": 1}
            with pytest.raises(InvalidArgumentError, match=r"config\.k: s is refused") as caught:
                await worker.call(_refuse, "s")
            assert caught.value.field == "config.k"  # the domain error, whole
            with pytest.raises(RuntimeError, match="_Unpicklable: odd"):
                await worker.call(_fail_oddly, "t")
            assert await worker.call(_get, "b") == {"x": 1}  # errors leave the worker serving
        finally:
            await worker.close()

    asyncio.run(main())


def test_a_caller_that_gives_up_leaves_the_next_answers_right() -> None:
    async def main() -> None:
        worker = ModelWorker(preload=[])
        try:
            slow = asyncio.ensure_future(worker.call(_sleep, "slow", 0.3))
            await asyncio.sleep(0.05)
            slow.cancel()
            assert await worker.call(_sleep, "next", 0.0) == "next"
        finally:
            await worker.close()

    asyncio.run(main())


def test_a_killed_worker_fails_its_callers_and_a_new_one_starts() -> None:
    lost: list[ModelWorker] = []

    async def main() -> None:
        worker = ModelWorker(preload=[], on_lost=lost.append)
        try:
            await worker.call(_put, "a", 1)
            pid = await worker.call(_pid, "")
            waiting = asyncio.ensure_future(worker.call(_sleep, "w", 5.0))
            await asyncio.sleep(0.1)
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(UnavailableError, match="model worker stopped"):
                await asyncio.wait_for(waiting, 5)
            assert lost == [worker]
            assert await worker.call(_pid, "") != pid  # a new process, holding nothing
            with pytest.raises(KeyError):
                await worker.call(_get, "a")
        finally:
            await worker.close()

    asyncio.run(main())


_PARENT_LEAVES_MID_REQUEST = """
import os, pickle, socket, struct, time
from oppmodel.server.model_worker import serve_objects

def slow(objects, key):
    time.sleep(0.5)
    return b"x" * (1 << 22)  # more than a socket buffer: the send meets the closed socket

parent, child = socket.socketpair()
pid = os.fork()
if pid == 0:
    parent.close()
    serve_objects(child)
    os._exit(0)
child.close()
header = struct.Struct("<Q")
assert parent.recv(header.size) == header.pack(0)  # ready
body = pickle.dumps((slow, "k", ()))
parent.sendall(header.pack(len(body)) + body)
parent.close()  # the server stops (Ctrl-C) while the worker runs the request
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


def test_a_worker_whose_parent_leaves_mid_request_ends_quietly() -> None:
    # Ctrl-C on `oppmodel demo` closed the worker's socket mid-request, and the worker's answer
    # printed a BrokenPipeError traceback under the command's one line (the CI of stop 46).
    done = subprocess.run(
        [sys.executable, "-c", _PARENT_LEAVES_MID_REQUEST],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stderr == ""
    assert done.stdout.strip() == "0"


def test_a_fork_server_whose_preload_fails_is_unavailable_naming_it(tmp_path: Path) -> None:
    # The service's warm-up built a model of MBBRConfig's default prior with the sample posterior;
    # with the tilted prior the default (session 50) that raised, the fork server exited, and
    # every session's first call failed with a bare EOFError from multiprocessing. In a child
    # process: the fork server is one per process, and this test's must import the failing module.
    (tmp_path / "failing_preload.py").write_text("raise RuntimeError('the warm-up failed')\n")
    done = subprocess.run(
        [sys.executable, "-c", _PRELOAD_FAILS],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert done.stdout.strip() == (
        "UnavailableError: the model worker did not start: its fork server exited while "
        "importing failing_preload (its traceback is on the server's stderr)"
    ), done.stderr
    assert "RuntimeError: the warm-up failed" in done.stderr  # the cause, where the message says


_PRELOAD_FAILS = """
import asyncio
from oppmodel.modeling.errors import UnavailableError
from oppmodel.server.model_worker import ModelWorker

async def main():
    worker = ModelWorker(preload=["failing_preload"])
    try:
        await worker.start()
    except UnavailableError as exc:
        print(f"UnavailableError: {exc}")
    finally:
        await worker.close()

asyncio.run(main())
"""


def _model_workers() -> list[multiprocessing.process.BaseProcess]:
    return [p for p in multiprocessing.active_children() if p.name == "oppmodel-models"]


def test_a_session_survives_its_model_worker_killed_mid_match(tmp_path: Path) -> None:
    """Kill -9 of the worker holding the models: the calls meanwhile get UNAVAILABLE, nothing
    acknowledged is lost, and the reloaded posterior equals the library's bit for bit."""
    config = MBBRConfig(k=10, hands_default=5, seed=3)
    hands = random_observations(60, seed=11)
    with (
        running_server(tmp_path / "w.sqlite", model_workers=1) as port,
        OpponentModelClient(f"127.0.0.1:{port}", timeout=20) as client,
    ):
        sid = client.create_session(config=config, opponent_labels=["a", "b"]).session_id
        client.observe(sid, hands[:30], first_sequence=1)
        (worker,) = _model_workers()
        os.kill(worker.pid, signal.SIGKILL)  # type: ignore[arg-type]
        worker.join(10)
        acknowledged = 30
        for sequence in range(31, 61):
            try:
                client.observe(sid, [hands[sequence - 1]], first_sequence=sequence)
                acknowledged = sequence
            except UnavailableError:
                break  # the hand was not applied; it is sent again below
        client.observe(sid, hands[acknowledged:], first_sequence=acknowledged + 1)
        assert client.get_session(sid).hands_observed == 60
        got = client.model(sid, "a", 1)
    library = kuhn_library(config, hands)
    want, ess = library.opponent_model(0, 1)
    assert got.effective_sample_size == ess
    assert got.strategy.as_dict() == {
        s: tuple(p) for s, p in strategy_to_dict(GAME, 1, want).items()
    }


def _nice(objects: dict, key: str) -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(sys.platform != "linux", reason="the nice value is per thread on Linux only")
def test_the_worker_and_the_writer_run_at_the_loops_priority(tmp_path: Path) -> None:
    """A decision waits for the worker (GetAction runs there, behind the updates queued before
    it) and for the writer (commits): neither is work with slack. At nice +10 the model worker
    got ~41 ms of CPU in two minutes beside two busy loops at the loop's nice value and a
    hold'em session fell back for hundreds of hands (benchmarks/RESULTS.md, issue 35)."""
    loop_nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    async def worker_nice() -> int:
        worker = ModelWorker(preload=[])
        try:
            return await worker.call(_nice, "")
        finally:
            await worker.close()

    assert asyncio.run(worker_nice()) == loop_nice
    store = SQLiteStore(tmp_path / "s.sqlite")
    try:
        assert store.run(lambda db: _nice({}, "")) == loop_nice
    finally:
        store.close()
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == loop_nice  # ours stays
