"""Choices as string enums: a member is its name, so it compares, hashes and serialises as the
string stored in session specs, snapshots, solver states and JSON, and given on the command line
(``Posterior.SAMPLES == "samples"``, ``json.dumps`` writes ``"samples"``)."""

from __future__ import annotations

import enum


class Choice(enum.StrEnum):
    """A closed set of named options (subclass it with the members)."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The members' names in order, as plain strings: for messages and argparse ``choices``
        (whose error message shows the repr of each choice)."""
        return tuple(member.value for member in cls)
