"""The package ships the cache files its bundled hold'em blueprints need, and a fresh cache
folder reads them instead of computing them (about a minute of CPU: solved.cache_file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oppmodel.modeling.games.acpc import abstraction
from oppmodel.modeling.games.acpc.solved import CACHE_ENV, SHIPPED_CACHE
from oppmodel.modeling.holdem.served import HoldemServed
from oppmodel.modeling.holdem.styles import bundled_blueprint


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("computed what the package ships")


def test_the_bundled_blueprints_start_from_the_shipped_files_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    abstraction.preflop_table.cache_clear()
    monkeypatch.setattr(abstraction, "_computed_preflop_table", _refuse)
    monkeypatch.setattr(abstraction, "_canonical_strengths", _refuse)  # every board's values
    # its warm-up plays a hand, which values the boards it meets as any play does
    monkeypatch.setattr(HoldemServed, "_warm_up", lambda self: None)
    served = HoldemServed("holdem2p")  # its card abstraction, the blueprint's deals, the check's
    assert served.blueprint.shape[0] == 2
    bundled_blueprint("holdem3p")
    assert abstraction.preflop_table().shape == (13, 13)  # a preflop hand's value, at play
    shipped = sorted(p.name for p in (SHIPPED_CACHE / "abstractions").iterdir())
    read = sorted(p.name for p in (tmp_path / "abstractions").glob("*.npz"))
    assert read == shipped  # each one used, and nothing computed beside them
    abstraction.preflop_table.cache_clear()
