"""``oppmodel demo``: the table says what mbb/h means, and a failed demo leaves nothing behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from oppmodel.clients.cli import main
from oppmodel.clients.commands import demo_cmd


def test_the_demo_explains_its_units_and_says_where_the_data_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    assert main(["demo", "--hands", "20", "--duplicates", "1", "--data-dir", str(data)]) == 0
    out, err = capsys.readouterr()
    assert "mbb/h: milli-chips won per hand (1000 x chips per hand" in out
    assert "s.e.: its standard error over the duplicates" in out
    assert f"data: {data / 'oppmodel.sqlite'} (6 sessions" in out
    assert err == ""  # no progress bar: stderr is not a terminal


def test_a_demo_that_fails_removes_the_folder_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug mid-match")

    monkeypatch.setattr(demo_cmd, "run_duplicate", broken)
    with pytest.raises(RuntimeError, match="a bug mid-match"):  # a bug keeps its traceback
        main(["demo", "--hands", "20", "--duplicates", "1"])
    assert list(tmp_path.iterdir()) == []
