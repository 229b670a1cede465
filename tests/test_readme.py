"""The README's Python examples run as written (against a real server where they need one)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from service_support import running_server

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
DEFAULT_ADDRESS = "127.0.0.1:50051"


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, tmp_path):
    code = BLOCKS[index]
    if DEFAULT_ADDRESS not in code:
        exec(compile(code, f"README.md example {index}", "exec"), {})
        return
    with running_server(tmp_path / "readme.sqlite") as port:
        code = code.replace(DEFAULT_ADDRESS, f"127.0.0.1:{port}")
        exec(compile(code, f"README.md example {index}", "exec"), {})
