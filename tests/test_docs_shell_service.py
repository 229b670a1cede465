"""The shell examples of docs/service.md, docs/ui.md, docs/scale-out.md and
docs/benchmarks.md run in the bounded form
``docs_shell_support`` states (``test_docs_shell.py`` checks that every line runs somewhere)."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_shell_support import Block, blocks_run_in, run

pytestmark = pytest.mark.slow  # commands of a whole document: tens of CPU seconds a file


@blocks_run_in(__file__)
def test_shell_block_runs(block: Block, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    run(block, tmp_path, request)
