"""The fields of the papers' experiments: who plays whom, as match jobs and agent names.

Ganzfried et al. 2024's 3-player Kuhn field (Tables 1 and 6): MBBR, the robust equilibria N1-N3
and eight exploitable styles standing in for the paper's class-project agents; the competent
field dilutes every style with N2; every group of three plays duplicate matches, and MBBR meets
every pair of equilibrium agents head to head. The Leduc field's styles (``PLAIN``, and each
diluted with ``cfr``) are the same names defined from hand strength.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Prior
from oppmodel.modeling.play.tournament import AgentSpec, MatchJob

FIELD = (
    "mbbr",
    "n1",
    "n2",
    "n3",
    "always-bet",
    "calling-station",
    "tight-passive",
    "maniac",
    "bluffer",
    "switcher",
    "exploiter",
    "tilter",
)
EQUILIBRIA = ("n1", "n2", "n3")
# eps 0.05, k 10, H 100, eta 4, informed, mean; no safety budget, opponents never change
PAPER_MBBR = MBBRConfig(
    posterior=Posterior.SAMPLES,
    eta=4.0,
    prior=Prior.INFORMED,
    safety_budget=math.inf,
    change_hazard=0.0,
)
H2H_STREAM = 1_000_000  # streams of the head-to-head groups that are not field groups


def spec(name: str, mbbr: MBBRConfig) -> AgentSpec:
    return AgentSpec("mbbr", mbbr) if name == "mbbr" else AgentSpec(name)


FIELD_STYLES = FIELD[4:]  # the exploitable styles of the Kuhn field
# The competent field's share: the one at which N1, N2 and N3 earn what they earned in the paper's
# field (Table 1: 30-37 mbb/h; here 30-37 in a 300-hand trial). Set from the equilibria's results
# only, never from MBBR's.
DEFAULT_SHARE = 0.35


def competent_field(share: float) -> tuple[str, ...]:
    """The field with every style diluted to ``share`` of its decisions
    (``oppmodel.modeling.play.diluted``)."""
    return (*FIELD[:4], *(f"{style}@{share:g}" for style in FIELD_STYLES))


def field_groups(field: Sequence[str] = FIELD) -> list[tuple[str, ...]]:
    return list(itertools.combinations(field, 3))


def h2h_pairs() -> list[tuple[str, str]]:
    return list(itertools.combinations_with_replacement(EQUILIBRIA, 2))


def build_jobs(
    hands: int,
    reps: int,
    *,
    mbbr: MBBRConfig = PAPER_MBBR,
    uninformed: bool = True,
    field: Sequence[str] = FIELD,
    mbbr_only: bool = False,
) -> tuple[list[MatchJob], dict]:
    """Every job, and where each table's jobs are: index[(table, group)] = [job ids].

    ``mbbr`` is MBBR's config in Table 1 and head to head (its prior informed, typed or the eta
    mixture); Table 6 (if ``uninformed``) is the same config with the uninformed prior.
    ``mbbr_only``: only the groups MBBR sits in (the same cards as in the full run, so MBBR's
    figures are the same).
    """
    jobs: list[MatchJob] = []
    index: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    groups = field_groups(field)
    if mbbr.prior == "uninformed":
        raise ValueError("Table 1's MBBR has an informed (or typed) prior")
    configs = {"informed": mbbr}
    if uninformed:
        configs["uninformed"] = dataclasses.replace(mbbr, prior=Prior.UNINFORMED)

    tables = []  # (table, group, config, first stream)
    for g, group in enumerate(groups):
        if mbbr_only and "mbbr" not in group:
            continue
        for table, config in configs.items():  # same cards; identical jobs if no MBBR
            tables.append((table, group, config, 1000 * g))
    for i, (a, b) in enumerate(h2h_pairs()):
        group = ("mbbr", a, b)
        stream0 = 1000 * groups.index(group) if group in groups else H2H_STREAM + 1000 * i
        tables.append(("h2h", group, configs["informed"], stream0))
    # repetition-major: a run stopped after r repetitions of every group reports with --reps r
    # from its journal
    for r in range(reps):
        for table, group, config, stream0 in tables:
            agents = tuple(spec(name, config) for name in group)
            index.setdefault((table, group), []).append(len(jobs))
            jobs.append(MatchJob(len(jobs), stream0 + r, agents, hands))
    return jobs, index


# The limit games' panel (Leduc and the unseen games): the plain styles, then each diluted.
PLAIN = ("always-bet", "calling-station", "tight-passive", "maniac", "bluffer")
DILUTION = 0.35  # the styles' share of their decisions in the diluted field (the rest: cfr)
STYLES = ",".join([*PLAIN, *(f"{style}@{DILUTION}" for style in PLAIN)])


def labels(agents: list[str]) -> list[str]:
    """``oppmodel match``'s labels: a repeated name gets #2."""
    return [
        a if agents[:i].count(a) == 0 else f"{a}#{agents[:i].count(a) + 1}"
        for i, a in enumerate(agents)
    ]
