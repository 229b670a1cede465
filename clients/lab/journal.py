"""A resumable record of a long experiment's finished jobs.

A journal is a file of JSON lines, one per finished job: its key, its value, the seconds it took
and the run's settings (``run``: game, hands, seed, ...). A benchmark started again with the same
journal skips the jobs it holds for the same settings, so a run that was stopped keeps what it did
and a finished one can be reported again without playing. Progress is the caller's progress bar
(``oppmodel.clients.progress``).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path


class Journal:
    """The finished jobs of one run's settings in a JSON-lines file (none without a path).

    ``run`` holds the settings every entry is written with and read back under; ``defaults``
    gives the value of a setting that older entries were written without.
    """

    def __init__(
        self,
        path: Path | None,
        run: Mapping[str, object],
        *,
        defaults: Mapping[str, object] | None = None,
    ) -> None:
        self.path = path
        self.run = dict(run)
        self.defaults = dict(defaults or {})

    def entries(self) -> dict[tuple, dict]:
        """Each journalled job of this run's settings, by key (a tuple): its entry."""
        if self.path is None or not self.path.exists():
            return {}
        found = {}
        for line in self.path.read_text().splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            settings = {name: entry.get(name, self.defaults.get(name)) for name in self.run}
            if settings == self.run:
                found[_key(entry["key"])] = entry
        return found

    def record(self, key: Hashable, value: object, seconds: float) -> None:
        """Append a finished job (if there is a file)."""
        if self.path is not None:
            entry = {"key": key, "value": value, "seconds": seconds, **self.run}
            with self.path.open("a") as journal:
                journal.write(json.dumps(entry) + "\n")


def _key(raw: Iterable[object]) -> tuple:
    """A journalled key as the tuple it was written from (JSON turns tuples into lists)."""
    return tuple(_key(part) if isinstance(part, list) else part for part in raw)
