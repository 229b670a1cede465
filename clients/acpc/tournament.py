"""Duplicate tournaments through the project's dealer over TCP.

Any limit game the dealer deals (Kuhn, Leduc, ...). n agents play every seating (all n!
assignments of agents to seats: 6 for 3 players) with the same cards, and this is repeated for
``duplicates`` sets with card seeds ``seed, seed + 1, ...``. Playing the same cards from every
seat removes most of the luck of the deal (duplicate poker), which is how Ganzfried et al. 2024
evaluate MBBR (3000 hands, the 6 seatings, 10 sets).

Estimate: for agent ``a`` let ``x[d, h]`` be its payoff in hand ``h`` of duplicate set ``d``,
averaged over the n! seatings (each seating deals hand ``h`` of set ``d`` identically). The result
is ``mean(x)`` in the game's unit (``GameDef.rate_unit``: milli-antes per hand in an ante game such
as Kuhn or Leduc, milli-big-blinds per hand with blinds) with the standard error
``sd(x) / sqrt(#x)``, treating the duplicate hands as independent. Per-seating results are the
plain means of each match.

An agent is ``NAME=COMMAND``: ``builtin:POLICY`` runs the project's agent in-process (over a real
socket, one thread per seat, seeded from the tournament seed) and anything else is an executable
command line that gets ``HOST PORT`` appended (the reference calling convention); its stdout and
stderr go to files beside the match log.
"""

from __future__ import annotations

import io
import itertools
import math
import shlex
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from oppmodel.clients.acpc.agent import AgentResult, Policy, connect, make_policy, play_match
from oppmodel.clients.acpc.dealer import DealerConfig, MatchDealer
from oppmodel.clients.acpc.log import LoggedHand
from oppmodel.clients.progress import counted
from oppmodel.modeling.errors import FailedPreconditionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.gamedef import GameDef

BUILTIN = "builtin:"
HOST = "127.0.0.1"


@dataclass(frozen=True)
class AgentSpec:
    """A named agent: ``builtin:POLICY`` or an external command (``HOST PORT`` get appended)."""

    name: str
    command: str

    @classmethod
    def parse(cls, text: str) -> AgentSpec:
        """Parse ``NAME=COMMAND``; InvalidArgumentError naming ``agent`` if malformed."""
        name, sep, command = text.partition("=")
        if not sep or not name or not command.strip():
            raise InvalidArgumentError("agent", f"{text!r} is not NAME=COMMAND")
        if any(c in name for c in ":| "):
            raise InvalidArgumentError("agent", f"name {name!r} may not contain ':', '|' or space")
        return cls(name, command.strip())

    @property
    def builtin(self) -> str | None:
        """The policy name of a built-in agent, else None."""
        return self.command[len(BUILTIN) :] if self.command.startswith(BUILTIN) else None


@dataclass(frozen=True)
class TournamentConfig:
    """What to play. Times are the dealer's limits in milliseconds."""

    game: GameDef
    game_file: str
    agents: tuple[AgentSpec, ...]
    hands: int
    duplicates: int
    seed: int
    out_dir: Path
    t_response_ms: int = 60_000
    start_timeout_ms: int = 120_000  # a live agent loading a model on a busy machine
    mbbr_prior_strategy: str | None = None  # a strategy file's text: builtin:mbbr's prior

    def validate(self) -> None:
        """InvalidArgumentError naming the first bad field."""
        n = self.game.num_players
        if len(self.agents) != n:
            raise InvalidArgumentError("agent", f"the game has {n} players, got {len(self.agents)}")
        names = [a.name for a in self.agents]
        if len(set(names)) != len(names):
            raise InvalidArgumentError("agent", f"names must be distinct, got {names}")
        for agent in self.agents:
            if agent.builtin is not None:
                make_policy(agent.builtin, self.game, 0, prior_strategy=self.mbbr_prior_strategy)
                continue
            try:
                program = shlex.split(agent.command)[0]
            except ValueError as exc:  # an unclosed quote
                raise InvalidArgumentError("agent", f"{agent.name}: {exc}") from exc
            if shutil.which(program) is None:
                raise InvalidArgumentError(
                    "agent", f"{agent.name}: {program!r} is not an executable program"
                )
        if self.hands < 1:
            raise InvalidArgumentError("hands", "must be at least 1")
        if self.duplicates < 1:
            raise InvalidArgumentError("duplicates", "must be at least 1")
        if not 0 <= self.seed <= 0xFFFFFFFF - self.duplicates:
            raise InvalidArgumentError("seed", "seed + duplicates must stay below 2^32")

    def seatings(self) -> list[tuple[int, ...]]:
        """Every assignment of agents (by index) to seats, in lexicographic order."""
        return list(itertools.permutations(range(len(self.agents))))


@dataclass(frozen=True)
class MatchRecord:
    """One finished match: which agent sat where, and each agent's payoff per hand."""

    duplicate: int
    seating: tuple[str, ...]
    log: Path
    payoffs: dict[str, np.ndarray] = field(repr=False)


@dataclass(frozen=True)
class AgentSummary:
    """An agent's duplicate result (a win rate in the game's unit) with its standard error."""

    name: str
    rate: float
    standard_error: float
    hands: int


def _agent_seed(seed: int, duplicate: int, seating: int, seat: int) -> int:
    return int(np.random.SeedSequence([seed, duplicate, seating, seat]).generate_state(1)[0])


def play_tournament_match(
    config: TournamentConfig,
    *,
    duplicate: int,
    seating_index: int,
    seating: Sequence[int],
    on_hand: Callable[[LoggedHand], None] | None = None,
) -> MatchRecord:
    """Play one match of the tournament; FailedPreconditionError if the dealer aborts it."""
    agents = [config.agents[i] for i in seating]
    names = tuple(a.name for a in agents)
    match = f"dup{duplicate}-seating{''.join(map(str, seating))}"
    out = config.out_dir
    payoffs = {name: np.zeros(config.hands) for name in names}

    def record(hand: LoggedHand) -> None:
        for name, value in zip(hand.names, hand.payoffs, strict=True):
            payoffs[name][hand.hand] = value
        if on_hand is not None:
            on_hand(hand)

    dealer_err = (out / f"{match}.err").open("w", encoding="utf-8")
    dealer = MatchDealer(
        _dealer_config(config, match, names, duplicate),
        stdout=io.StringIO(),
        stderr=dealer_err,
        on_hand=record,
    )
    processes: list[tuple[str, subprocess.Popen, str]] = []  # (who, process, its stderr file)
    threads: list[threading.Thread] = []
    results: dict[int, AgentResult | Exception] = {}
    finished = threading.Event()
    try:
        ports = dealer.listen()
        for seat, (agent, port) in enumerate(zip(agents, ports, strict=True)):
            if agent.builtin is None:
                processes.append(_start_external(agent, port, seat, out / match))
                continue
            seed = _agent_seed(config.seed, duplicate, seating_index, seat)
            policy = make_policy(
                agent.builtin, config.game, seed, prior_strategy=config.mbbr_prior_strategy
            )
            thread = threading.Thread(
                target=_run_builtin,
                args=(config.game, port, policy),
                kwargs={"results": results, "seat": seat},
                name=f"{match}-seat{seat + 1}",
                daemon=True,
            )
            thread.start()
            threads.append(thread)
        watcher = threading.Thread(
            target=_watch_processes, args=(dealer, processes, finished), daemon=True
        )
        watcher.start()
        outcome = dealer.run()
    except BaseException:  # Ctrl-C, say: the external agents are ended now, not waited for
        for _, process, _ in processes:
            process.terminate()
        raise
    finally:
        finished.set()
        dealer.close()
        dealer_err.close()
        _wait_for_agents(threads, [process for _, process, _ in processes])
    if outcome.status != 0:
        crashed = "".join(
            f"; seat {seat + 1} agent failed: {r!r}"
            for seat, r in sorted(results.items())
            if isinstance(r, Exception)
        )
        raise FailedPreconditionError(
            f"match {match} aborted after {outcome.hands_played} hands: {outcome.error}{crashed} "
            f"(the dealer's log: {out / (match + '.err')})"
        )
    return MatchRecord(duplicate, names, out / f"{match}.log", payoffs)


def _dealer_config(
    config: TournamentConfig, match: str, names: tuple[str, ...], duplicate: int
) -> DealerConfig:
    """The dealer of one match: the duplicate set's card seed, the tournament's time limits, its
    log beside the match's other files."""
    return DealerConfig(
        match=match,
        game_file=config.game_file,
        game=config.game,
        hands=config.hands,
        seed=config.seed + duplicate,
        names=names,
        quiet=True,
        log_path=config.out_dir / f"{match}.log",
        t_response_ms=config.t_response_ms,
        start_timeout_ms=config.start_timeout_ms,
        version_timeout_ms=config.t_response_ms,
    )


def _start_external(
    agent: AgentSpec, port: int, seat: int, match_path: Path
) -> tuple[str, subprocess.Popen, str]:
    """Start an external agent's command with ``HOST PORT`` appended, its stdout and stderr in
    files beside the match's; (who, the process, its stderr file)."""
    argv = [*shlex.split(agent.command), HOST, str(port)]
    output = match_path.with_name(f"{match_path.name}.seat{seat + 1}.{agent.name}")
    with (
        output.with_name(output.name + ".out").open("wb") as so,
        output.with_name(output.name + ".err").open("wb") as se,
    ):
        process = subprocess.Popen(argv, stdout=so, stderr=se)
    return f"seat {seat + 1} agent {agent.name}", process, se.name


def _wait_for_agents(threads: list[threading.Thread], processes: list[subprocess.Popen]) -> None:
    """Join the built-in agents' threads and reap the external agents' processes (killing one
    that has not exited 10 s after the match)."""
    for thread in threads:
        thread.join(timeout=10)
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _watch_processes(
    dealer: MatchDealer,
    processes: list[tuple[str, subprocess.Popen, str]],
    finished: threading.Event,
) -> None:
    """Cancel the match as soon as an external agent exits before it is over, rather than let the
    dealer wait for a connection or a version line that will never come; the reason names the
    file holding the agent's stderr, where it says why."""
    while not finished.wait(0.05):
        for who, process, errors in processes:
            code = process.poll()
            if code is not None:
                dealer.cancel(f"{who} exited with status {code} (its stderr: {errors})")
                return


def _run_builtin(
    game: GameDef,
    port: int,
    policy: Policy,
    *,
    results: dict[int, AgentResult | Exception],
    seat: int,
) -> None:
    """A built-in agent's thread: play the match, keep the tally or the error."""
    try:
        sock = connect(HOST, port, timeout=10)
        results[seat] = play_match(game, sock, policy, read_timeout=600)
    except Exception as exc:
        results[seat] = exc


def summarize(config: TournamentConfig, records: Sequence[MatchRecord]) -> list[AgentSummary]:
    """Each agent's duplicate mean win rate and standard error, in the order of
    ``config.agents``."""
    unit = config.game.rate_unit
    summaries = []
    for agent in config.agents:
        per_set = np.zeros((config.duplicates, config.hands))
        counts = np.zeros(config.duplicates)
        for rec in records:
            per_set[rec.duplicate] += rec.payoffs[agent.name]
            counts[rec.duplicate] += 1
        x = (per_set / counts[:, None]).ravel()
        se = float(np.std(x, ddof=1) / math.sqrt(x.size)) if x.size > 1 else float("nan")
        hands = int(counts.sum()) * config.hands
        summaries.append(AgentSummary(agent.name, unit.rate(float(x.mean())), unit.rate(se), hands))
    return summaries


def format_table(config: TournamentConfig, records: Sequence[MatchRecord]) -> str:
    """The results as text: the duplicate summary, then every match's win rate per agent."""
    names = [a.name for a in config.agents]
    unit = config.game.rate_unit
    width = max(8, *(len(n) for n in names))
    lines = [
        f"{counted(config.duplicates, 'duplicate set')} x {len(config.seatings())} seatings x "
        f"{counted(config.hands, 'hand')}, "
        f"card seeds {config.seed}..{config.seed + config.duplicates - 1}",
        "",
        f"{'agent':<{width}}  {unit.label:>9}  {'s.e.':>8}  {'hands':>8}",
    ]
    for s in summarize(config, records):
        lines.append(f"{s.name:<{width}}  {s.rate:>9.1f}  {s.standard_error:>8.1f}  {s.hands:>8}")
    lines += [
        "",
        f"per match ({unit.label}):",
        f"{'dup':>3}  {'seats 1..n':<{3 * width}}  " + "  ".join(f"{n:>{width}}" for n in names),
    ]
    for rec in records:
        seating = " ".join(rec.seating)
        values = "  ".join(f"{unit.rate(rec.payoffs[n].mean()):>{width}.1f}" for n in names)
        lines.append(f"{rec.duplicate:>3}  {seating:<{3 * width}}  {values}")
    lines += ["", unit.legend]
    return "\n".join(lines)


def results_json(config: TournamentConfig, records: Sequence[MatchRecord]) -> dict:
    """The results as a JSON-ready dict (summary, and every match with its log path)."""
    unit = config.game.rate_unit
    return {
        "game_file": config.game_file,
        "hands": config.hands,
        "duplicates": config.duplicates,
        "seed": config.seed,
        "agents": {a.name: a.command for a in config.agents},
        "unit": unit.name,
        "results": [
            {
                "agent": s.name,
                unit.key: s.rate,
                "standard_error": s.standard_error,
                "hands": s.hands,
            }
            for s in summarize(config, records)
        ],
        "matches": [
            {
                "duplicate": rec.duplicate,
                "card_seed": config.seed + rec.duplicate,
                "seating": list(rec.seating),
                unit.key: {n: unit.rate(float(v.mean())) for n, v in rec.payoffs.items()},
                "log": str(rec.log),
            }
            for rec in records
        ],
    }


def run_tournament(
    config: TournamentConfig, *, on_hand: Callable[[LoggedHand], None] | None = None
) -> list[MatchRecord]:
    """Play every duplicate set and seating in order; logs go to ``config.out_dir``."""
    config.validate()
    config.out_dir.mkdir(parents=True, exist_ok=True)
    records = []
    for duplicate in range(config.duplicates):
        for index, seating in enumerate(config.seatings()):
            records.append(
                play_tournament_match(
                    config,
                    duplicate=duplicate,
                    seating_index=index,
                    seating=seating,
                    on_hand=on_hand,
                )
            )
    return records
