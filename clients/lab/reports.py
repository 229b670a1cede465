"""Where an experiment or a benchmark writes its report, and what every report records."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path


def output_dir(chosen: Path | None, quick: bool, results: Path) -> Path:
    """Where a script writes its files: the folder asked for; else its ``results`` folder for a
    full run and a new temporary folder for a ``--quick`` one (a quick run checks that the script
    works; its numbers are not results, and the checkout stays clean)."""
    if chosen is not None:
        return chosen
    return Path(tempfile.mkdtemp(prefix="oppmodel-quick-")) if quick else results


def report_written(path: Path) -> None:
    """Say on stderr which file a benchmark wrote (stdout stays the table or the JSON)."""
    print(f"wrote {path}", file=sys.stderr)


def report_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``--json`` and ``--out FILE`` options whose values :func:`emit_report` takes."""
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--out", type=Path, help="also write the JSON result to this file")


def emit_report(report: dict, out: Path | None, as_json: bool) -> bool:
    """Write ``report`` as JSON to ``out`` (if given) and print it (if ``as_json``); whether it
    was printed, so the caller prints its table otherwise."""
    if out:
        out.write_text(json.dumps(report, indent=1))
        report_written(out)
    if as_json:
        print(json.dumps(report, indent=1))
    return as_json


def machine() -> dict:
    """Where a result was measured."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
    }
