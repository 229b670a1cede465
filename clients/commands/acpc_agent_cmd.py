"""``oppmodel acpc-agent``: play in an ACPC match (any dealer speaking protocol 2.0.0)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import numpy as np

from oppmodel.clients.acpc.agent import (
    LimitModelPolicy,
    Policy,
    ServedModelPolicy,
    connect,
    make_policy,
    play_match,
    policy_names,
    strategy_policy,
)
from oppmodel.clients.acpc.service_policy import (
    BACKGROUND_DEADLINE,
    MAX_BACKGROUND_DEADLINE,
    SERVICE_WAIT_S,
    ServicePolicy,
)
from oppmodel.clients.cli import run_command
from oppmodel.clients.commands._mbbr_options import (
    POPULATION,
    PRIOR_STRATEGY,
    add_mbbr_arguments,
    mbbr_config,
    mbbr_population,
    prior_strategy_json,
    prior_strategy_profile,
)
from oppmodel.clients.commands._types import non_negative_float, port, positive_float, seed
from oppmodel.clients.interrupt import noting
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import CALL, RAISE, BettingState, after, is_legal, opening
from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES, BUNDLED_STRATEGIES
from oppmodel.modeling.games.acpc.compiler import limit_game_of
from oppmodel.modeling.games.acpc.gamedef import GameDef, kuhn_unsupported, read_game_def
from oppmodel.modeling.holdem.match import is_holdem
from oppmodel.modeling.holdem.served import NO_PROFILES, served_limit_game
from oppmodel.modeling.mbbr.config import DEFAULT_PRIOR, Prior
from oppmodel.modeling.mbbr.model import build_model

REFERENCE_TIME_PER_HAND_MS = 7000.0  # the reference dealer's --t_per_hand default

EPILOG = f"""\
The agent connects to HOST PORT, sends VERSION:2.0.0, answers every MATCHSTATE where it is to act
and plays until the dealer closes the connection. Comments and unexpected lines are ignored.
At the end it prints a one-line tally on stderr (or JSON on stdout with --json): the hands, the
chips won and the win rate in the game's unit, milli-antes per hand (mA/h) when every player
antes the same (Kuhn, Leduc), else milli-big-blinds per hand (mbb/h, 1000 x chips won per hand /
the largest blind). It plays any
limit game (Kuhn, Leduc, any ACPC limit game file): several rounds, board cards, the legal
actions of the reference dealer's rules.

Fixed strategies: --agent cfr plays the game's solved strategy: the one bundled with the game
({", ".join(BUNDLED_STRATEGIES)}), else the one cached in the user's cache folder, else solved
now with CFR+ and cached (docs/modeling.md); --strategy FILE plays a strategy file (as `oppmodel
solve` writes them: every position's [p_fold, p_call, p_raise] keyed by information-state strings
such as "Js:" or "Ks/Qh:rc/cr"; a Kuhn game also reads OpenSpiel's "2ppb" keys, as `oppmodel eval`
does); --agent example plays the reference example_player's weights. The styles
(always-bet, calling-station, tight-passive, maniac, bluffer[:B]) are defined from hand strength
and play every game; STYLE@S plays a style at a share S of the decisions and the equilibrium at
the rest (cfr, or N2 in 3-player Kuhn). In Kuhn games n1, n2, n3 and MBBR are agents too.
In limit Texas hold'em (holdem.limit.2p.reverse_blinds.game, holdem.limit.3p.game: too big to
compile) the agents are uniform, always-call and the styles defined by HS, the share of an
opponent's hands beaten now (see `oppmodel match --help`), example, and in the 2-player game cfr,
the bundled blueprint; with --service or --in-process (2 players) MBBR over the blueprint's
abstraction (the informed prior, hold'em's only; the same model either way), the blueprint the
service's fallback.

With --service ADDR the agent is MBBR played by the oppmodel service: it creates a session (the
--mbbr-* parameters, --seed), its first decision waiting up to --service-wait seconds (30) for a
service that does not answer yet (a server started a moment before warms up for seconds), and asks
GetAction for every decision, waiting at most --decision-budget-ms for each answer. A background
thread sends every finished hand as this seat saw it (folded and uncontested cards stay hidden),
so a decision never waits for it; a send a busy service answers too late is no outage: it goes
again with its deadline doubled ({BACKGROUND_DEADLINE:g} s, at most {MAX_BACKGROUND_DEADLINE:g}).
If a decision call fails (unreachable, too slow, any error) the agent says so on stderr and plays
the fallback, MBBR's default strategy (N1 in 3-player Kuhn, the game's solved cfr strategy else),
while the background thread probes the service; it returns to the service as soon as the service
answers, and resends the hands it missed. The tally counts the decisions each source made and the
hands each outage lasted. --in-process plays the same MBBR model inside this process instead.
--mbbr-prior-strategy FILE gives MBBR a strategy file as its prior mean and default strategy (the
service's session gets the file; the fallback plays it too).
MBBR plays every limit game: Kuhn games with the Kuhn model, the others (Leduc) with the
limit-game model; both play within the safety budget (--mbbr-safety-budget) and follow opponents
who change (--mbbr-change-hazard; the service's limit sessions only when it is given). GAMEFILE is a
path or a bundled game's name ({", ".join(BUNDLED_GAMES)}).

The decision budget: the reference dealer aborts a match when a seat exceeds --t_per_hand (7000
ms per hand on average over the match; also --t_response and --t_hand, 600000 ms by default). The
agent cannot read the dealer's options, so its default budget assumes the reference's: half of
7000 ms shared by the most decisions a seat makes in one hand: 1750 ms in Kuhn (2 decisions), 875
ms in 2-player Leduc (4), 583 ms in 3-player Leduc (6). Even if every
decision waited that long the seat would use half its time. Against a dealer with tighter limits
give at most t_per_hand / 2 / decisions per hand (and well below t_response).

examples:
  oppmodel acpc-agent kuhn3p 127.0.0.1 18791 --agent n1 --seed 7
  oppmodel acpc-agent leduc3p 127.0.0.1 18791 --agent cfr --seed 7
  oppmodel acpc-agent leduc3p 127.0.0.1 18792 --agent maniac@0.35 --seed 7
  oppmodel acpc-agent leduc2p 127.0.0.1 18791 --strategy my-leduc2p.json
  oppmodel serve --db oppmodel.sqlite --port 50051 &
  oppmodel acpc-agent kuhn3p 127.0.0.1 18791 --service 127.0.0.1:50051 --seed 7
  oppmodel acpc-agent kuhn3p 127.0.0.1 18791 --in-process --mbbr-posterior samples
  oppmodel acpc-agent leduc3p 127.0.0.1 18791 --service 127.0.0.1:50051 --seed 7
  oppmodel acpc-agent leduc3p 127.0.0.1 18792 --in-process --seed 8
  oppmodel acpc-agent leduc2p 127.0.0.1 18792 --in-process --mbbr-prior-strategy my-leduc2p.json
  oppmodel acpc-agent-script n1.sh kuhn3p --agent n1   # an `exe HOST PORT` wrapper
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The agent's arguments (shared with the stand-alone entry point :func:`main`)."""
    parser.add_argument(
        "gamefile", metavar="GAMEFILE", help="ACPC game definition file, or a bundled game's name"
    )
    parser.add_argument("host", metavar="HOST", help="dealer host")
    parser.add_argument("port", metavar="PORT", type=port, help="this seat's dealer port")
    parser.add_argument(
        "--agent",
        metavar="NAME",
        help=f"strategy to play: {', '.join(policy_names())} (default: mbbr with --service or "
        "--in-process, else n1 in Kuhn games and cfr in others)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--strategy",
        metavar="FILE",
        help="play the fixed strategy of this strategy file (every position's, keyed by "
        "information-state strings)",
    )
    where.add_argument(
        "--service", metavar="ADDR", help="play MBBR through the oppmodel service at HOST:PORT"
    )
    where.add_argument(
        "--in-process", action="store_true", help="play MBBR in this process (no service)"
    )
    add_mbbr_arguments(parser)
    parser.add_argument(
        "--decision-budget-ms",
        "--rpc-deadline-ms",
        type=positive_float,
        metavar="MS",
        help="the longest a decision waits for the service (GetAction's deadline) before playing "
        "the fallback (default: the reference dealer's 7000 ms per hand / 2 / the most decisions "
        "per hand, 1750 in Kuhn; see below)",
    )
    add_service_wait(parser, default=SERVICE_WAIT_S)
    parser.add_argument(
        "--seed", type=seed, default=0, help="seed of the agent's action draws (default 0)"
    )
    parser.add_argument(
        "--connect-timeout",
        type=non_negative_float,
        default=10.0,
        metavar="SEC",
        help="keep retrying the connection this long (default %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print the tally as JSON on stdout")
    parser.set_defaults(func=run)


def add_service_wait(parser: argparse.ArgumentParser, default: float | None = None) -> None:
    """``--service-wait SEC``: how long a --service agent waits at the start for the service."""
    parser.add_argument(
        "--service-wait",
        type=non_negative_float,
        default=default,
        metavar="SEC",
        help="with --service: the first decision waits this long for the service to serve and "
        f"create the session (default {SERVICE_WAIT_S:g}; 0: begin on the fallback at once)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``acpc-agent`` subcommand."""
    parser = subparsers.add_parser(
        "acpc-agent",
        help="play as an agent in an ACPC match",
        description="Connect to an ACPC dealer and play one seat of a match.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Play the match."""
    game = read_game_def(args.gamefile)
    modeled = bool(args.service or args.in_process)
    kuhn = not kuhn_unsupported(game)
    agent = args.agent or ("mbbr" if modeled else "n1" if kuhn else "cfr")
    if modeled and agent != "mbbr":
        raise InvalidArgumentError("agent", "--service and --in-process play mbbr only")
    if args.strategy and args.agent:
        raise InvalidArgumentError("agent", "--strategy plays the file's strategy: drop --agent")
    policy, agent, budget_ms = choose_policy(args, game, agent, modeled=modeled)
    played = 0

    def count_hand() -> None:
        nonlocal played
        played += 1

    with noting(progress=lambda: f"after {played} hands", kept=lambda: kept(policy, args.service)):
        try:
            sock = connect(args.host, args.port, args.connect_timeout)
            result = play_match(game, sock, policy, on_hand=count_hand)
        except BaseException:  # Ctrl-C or a failed match: one last attempt, no wait
            if isinstance(policy, ServicePolicy):
                policy.close(patient=False)
            raise
        if isinstance(policy, ServicePolicy):
            policy.close()
    label = f"{agent} (service)" if args.service else agent
    extra = {}
    if isinstance(policy, ServicePolicy) and budget_ms is not None:  # set with --service
        extra = service_tally(policy, budget_ms)
    unit = game.rate_unit
    rate = unit.rate(result.total, result.hands) if result.hands else 0.0
    if args.json:
        tally = {"agent": label, **result.__dict__, unit.key: rate, "unit": unit.name, **extra}
        print(json.dumps(tally))
    else:
        print(
            f"acpc-agent {label}: {result.hands} hands, {result.total:+g} chips "
            f"({rate:+.1f} {unit.label}), {result.actions} actions, "
            f"{result.ignored_lines} lines ignored"
            + (f"; {describe_sources(extra)}" if extra else ""),
            file=sys.stderr,
        )
    return 0


def choose_policy(
    args: argparse.Namespace, game: GameDef, agent: str, *, modeled: bool
) -> tuple[Policy, str, float | None]:
    """The seat's policy (MBBR through the service or in this process, a file's strategy, or a
    named agent), its agent's label, and the service's decision budget (ms) where it has one."""
    holdem = is_holdem(game)
    config = mbbr_config(args, seed=args.seed)
    if holdem and config.prior == DEFAULT_PRIOR.get(config.posterior):  # hold'em's: informed
        config = dataclasses.replace(config, prior=Prior.INFORMED)
    if args.mbbr_prior_strategy and agent != "mbbr":
        raise InvalidArgumentError(PRIOR_STRATEGY, "is MBBR's: add --in-process or --service")
    if args.mbbr_population and not args.in_process:
        raise InvalidArgumentError(
            POPULATION, "is played by MBBR in this process: add --in-process"
        )
    budget_ms = args.decision_budget_ms
    policy: Policy
    if holdem and not modeled:  # too big to compile: the hold'em policies
        if args.strategy:
            raise InvalidArgumentError(
                "agent", "in limit hold'em the agent plays a hold'em style or MBBR: no --strategy"
            )
        policy = make_policy(agent, game, args.seed)
    elif holdem and args.in_process:  # the service's model of the game, in this process
        if args.mbbr_prior_strategy:  # as a hold'em session refuses one
            raise InvalidArgumentError(PRIOR_STRATEGY, NO_PROFILES)
        served = served_limit_game(game)
        config = served.played_config(config)  # its values for fields left at their defaults
        policy = ServedModelPolicy(served, served.build_model(config), args.seed)
    elif args.service:
        model_game = served_limit_game(game).compiled  # hold'em's: its abstract game
        budget_ms = budget_ms or default_decision_budget_ms(game)
        policy = ServicePolicy(
            game,
            args.service,
            config=config,
            deadline=budget_ms / 1000,
            prior_strategy=prior_strategy_json(args, model_game),
            startup_wait=args.service_wait,
        )
    elif agent == "mbbr":
        model_game = limit_game_of(game)
        profile = prior_strategy_profile(model_game, prior_strategy_json(args, model_game))
        config, population = mbbr_population(args, model_game, config)
        model = build_model(
            model_game, config, prior_mean=profile, default_strategy=profile, population=population
        )
        policy = LimitModelPolicy(model_game, model, args.seed)
    elif args.strategy:
        agent = f"strategy {args.strategy}"
        policy = strategy_policy(game, args.strategy, args.seed)
    else:
        policy = make_policy(agent, game, args.seed)
    return policy, agent, budget_ms


def kept(policy: Policy, service: str | None) -> str:
    """What an interrupted agent leaves behind: its session on the service, if it made one
    (asked once the policy is closed, its last hands sent)."""
    if isinstance(policy, ServicePolicy) and policy.session_id is not None:
        return f"the hands sent are in session {policy.session_id} on the service at {service}"
    return ""


def most_decisions_per_hand(gamedef: GameDef) -> int:
    """The most actions one position takes in a hand of ``gamedef`` (2 in every Kuhn game, 4 in
    2-player Leduc, 6 in 3-player Leduc: check, then call two raises, in each round; 15 in
    3-player hold'em: 3 preflop, 4 in each later round), by its betting rules: each round's most
    per position over its calls and raises (a fold never adds an action; the rounds start alike
    however the ones before went), summed over the rounds."""
    state, most = opening(gamedef), np.zeros(gamedef.num_players, dtype=np.int64)
    for round_ in range(gamedef.num_rounds):
        most += _most_in_round(gamedef, state, round_)
        while state.player >= 0 and state.round == round_:  # everyone checks on to the next
            state = after(gamedef, state, CALL)
    return int(most.max())


def _most_in_round(gamedef: GameDef, state: BettingState, round_: int) -> np.ndarray:
    """(n,) the most actions each position takes in round ``round_`` from ``state`` on."""
    most = np.zeros(gamedef.num_players, dtype=np.int64)
    if state.player < 0 or state.round != round_:
        return most
    for action in (CALL, RAISE):
        if is_legal(gamedef, state, action):
            after_it = _most_in_round(gamedef, after(gamedef, state, action), round_)
            after_it[state.player] += 1
            most = np.maximum(most, after_it)
    return most


def default_decision_budget_ms(gamedef: GameDef) -> float:
    """Half the reference dealer's time per hand, shared by the most decisions of one hand."""
    return REFERENCE_TIME_PER_HAND_MS / 2 / most_decisions_per_hand(gamedef)


def service_tally(policy: ServicePolicy, budget_ms: float) -> dict:
    """The service agent's part of the tally: decisions per source, outages, its session."""
    made = policy.service_decisions + policy.fallback_decisions
    return {
        "session_id": policy.session_id,
        "decision_budget_ms": budget_ms,
        "decisions": policy.decisions(),
        "service_decisions": policy.service_decisions,
        "fallback_decisions": policy.fallback_decisions,
        "fallback": policy.fallback_name,
        "service_share": policy.service_decisions / made if made else None,
        "service_decision_ms": latency_ms(policy.service_seconds),
        "outages": [dataclasses.asdict(outage) for outage in policy.outages],
    }


def latency_ms(seconds: list[float]) -> dict[str, float] | None:
    """The median, 99th percentile and largest of call times, in ms (None: no call)."""
    if not seconds:
        return None
    p50, p99 = np.percentile(seconds, [50, 99])
    return {"p50": 1000 * float(p50), "p99": 1000 * float(p99), "max": 1000 * max(seconds)}


def describe_sources(tally: dict) -> str:
    """One phrase: decisions per source, and the outages (hands on the fallback)."""
    made = tally["service_decisions"] + tally["fallback_decisions"]
    share = 100 * (tally["service_share"] or 0.0)
    text = (
        f"decisions: {tally['service_decisions']} by the service ({share:.1f}%), "
        f"{tally['fallback_decisions']} by the fallback {tally['fallback']} "
        f"({100 - share if made else 0.0:.1f}%)"
    )
    outages = tally["outages"]
    if outages:
        lengths = [
            "never back" if o["back_at_hand"] is None else str(o["back_at_hand"] - o["first_hand"])
            for o in outages
        ]
        text += f"; {len(outages)} outage(s), hands on the fallback: {', '.join(lengths)}"
    return text


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point, used by generated wrapper scripts (starts faster than the CLI)."""
    parser = argparse.ArgumentParser(prog="oppmodel acpc-agent", epilog=EPILOG)
    add_arguments(parser)
    return run_command(parser.prog, run, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
