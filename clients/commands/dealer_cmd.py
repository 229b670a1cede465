"""``oppmodel dealer``: an ACPC dealer, wire-compatible with the reference ``dealer``."""

from __future__ import annotations

import argparse
from pathlib import Path

from oppmodel.clients.acpc.dealer import (
    DEFAULT_T_HAND_MS,
    DEFAULT_T_PER_HAND_MS,
    DEFAULT_T_RESPONSE_MS,
    DEFAULT_T_VERSION_MS,
    DealerConfig,
    MatchDealer,
)
from oppmodel.clients.commands._types import int_in, non_negative_int, port, positive_int, seed
from oppmodel.clients.interrupt import noting
from oppmodel.clients.progress import Progress
from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES, game_path
from oppmodel.modeling.games.acpc.gamedef import read_game_def

EPILOG = f"""\
The dealer opens one TCP port per seat and prints them, in seat order, as the first line on stdout;
seat i is the i-th port and plays as the i-th NAME. Agents connect (the reference calling
convention is `AGENT HOST PORT`), send VERSION:2.0.0 and answer the MATCHSTATE lines where they are
to act. The button moves every hand (seat s plays position (s - h) mod n) unless -f is given.
The log goes to MATCHNAME.log; the final SCORE line (totals in seat order) to stdout and stderr.
A timeout aborts the match with exit status 1 and no SCORE. GAMEFILE (any limit game) is a path
or the short name of a bundled game ({", ".join(BUNDLED_GAMES)}).

Unlike the reference, which waits forever, the dealer gives up on a seat that connects but sends
no VERSION line within --t_version (0 waits forever, as the reference does).

example (3 agents, 3000 hands, the reference's seed-42 cards):
  oppmodel dealer m1 kuhn3p 3000 42 Alice Bob Carol -p 18791,18792,18793 -q &
  for p in 18791 18792 18793; do
    oppmodel acpc-agent kuhn3p 127.0.0.1 $p --agent n1 &
  done

example (3-player Leduc: two rounds, a board card, the bundled CFR strategy):
  oppmodel dealer m2 leduc3p 3000 42 Alice Bob Carol -p 18791,18792,18793 -q &
  for p in 18791 18792 18793; do
    oppmodel acpc-agent leduc3p 127.0.0.1 $p --agent cfr --seed $p &
  done
"""


def _ports(text: str) -> tuple[int, ...]:
    try:
        return tuple(port(p) for p in text.split(","))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of ports: {exc}"
        ) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``dealer`` subcommand."""
    parser = subparsers.add_parser(
        "dealer",
        help="run an ACPC dealer (wire-compatible with the reference dealer)",
        description="Deal an ACPC match to agents that connect over TCP.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("match", metavar="MATCHNAME", help="match name; the log is MATCHNAME.log")
    parser.add_argument(
        "gamefile", metavar="GAMEFILE", help="ACPC game definition file, or a bundled game's name"
    )
    parser.add_argument("hands", metavar="HANDS", type=int_in(0, 2**32 - 1), help="number of hands")
    parser.add_argument("seed", metavar="SEED", type=seed, help="card seed (MT19937, 0..2^32-1)")
    parser.add_argument("names", metavar="NAME", nargs="+", help="one player name per seat")
    parser.add_argument(
        "-p", dest="ports", type=_ports, help="ports per seat, e.g. 18791,18792,18793"
    )
    parser.add_argument("-f", dest="fixed", action="store_true", help="fixed seats (no rotation)")
    parser.add_argument(
        "-q", dest="quiet", action="store_true", help="no TO/FROM traffic on stderr"
    )
    log = parser.add_mutually_exclusive_group()
    log.add_argument("-l", dest="log", action="store_false", help="do not write MATCHNAME.log")
    log.add_argument("-L", dest="log", action="store_true", help="write MATCHNAME.log (default)")
    parser.add_argument(
        "--t_response",
        type=positive_int,
        default=DEFAULT_T_RESPONSE_MS,
        metavar="MS",
        help="abort if a reply takes longer (default %(default)s)",
    )
    parser.add_argument(
        "--t_hand",
        type=positive_int,
        default=DEFAULT_T_HAND_MS,
        metavar="MS",
        help="per seat and hand time budget (default %(default)s)",
    )
    parser.add_argument(
        "--t_per_hand",
        type=positive_int,
        default=DEFAULT_T_PER_HAND_MS,
        metavar="MS",
        help="per seat average time per hand over the match (default %(default)s)",
    )
    parser.add_argument(
        "--start_timeout",
        type=positive_int,
        metavar="MS",
        help="give up if the seats have not all connected by then (default: wait forever)",
    )
    parser.add_argument(
        "--t_version",
        type=non_negative_int,
        default=DEFAULT_T_VERSION_MS,
        metavar="MS",
        help="give up on a seat that sends no VERSION line within MS after the seats connected "
        "(default %(default)s; 0: wait forever, as the reference)",
    )
    parser.add_argument(
        "--bind",
        default="127.0.0.1",
        metavar="ADDR",
        help="address to listen on (default 127.0.0.1; the reference listens on all interfaces)",
    )
    parser.set_defaults(func=run, log=True)


def dealer_config(args: argparse.Namespace) -> DealerConfig:
    """The match the command line asks for (the game file read, not yet validated)."""
    path = game_path(args.gamefile)
    return DealerConfig(
        match=args.match,
        # the log header names the file as given, as the reference's does; a bundled game by name
        game_file=args.gamefile if Path(args.gamefile).expanduser().exists() else path.name,
        game=read_game_def(path),
        hands=args.hands,
        seed=args.seed,
        names=tuple(args.names),
        ports=args.ports,
        fixed_seats=args.fixed,
        quiet=args.quiet,
        write_log=args.log,
        t_response_ms=args.t_response,
        t_hand_ms=args.t_hand,
        t_per_hand_ms=args.t_per_hand,
        start_timeout_ms=args.start_timeout,
        version_timeout_ms=args.t_version or None,  # 0: wait forever, as the reference
        bind=args.bind,
    )


def run(args: argparse.Namespace) -> int:
    """Play the match; 0 when it finished, 1 when it was aborted."""
    config = dealer_config(args)
    log = config.log_path or Path(f"{config.match}.log")
    with (
        noting(kept=lambda: f"the hands dealt are in {log}" if config.write_log else ""),
        Progress(config.hands, desc="oppmodel dealer", unit="hand", show=False) as hands,
    ):
        dealer = MatchDealer(config, on_hand=lambda _hand: hands.update())
        try:
            dealer.listen()
            return dealer.run().status
        finally:
            dealer.close()
