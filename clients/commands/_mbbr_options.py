"""The ``--mbbr-*`` command-line options, shared by every subcommand that plays MBBR.

One definition of the flags (``MBBRConfig``'s defaults: Ganzfried et al. 2024's parameters with the
Dirichlet posterior; ``--mbbr-posterior samples`` is the paper's k samples) and of the
``MBBRConfig`` they build, so ``match``, ``acpc-agent`` and ``replay`` accept the same options with
the same meaning. ``--mbbr-h`` is kept as a short alias of ``--mbbr-hands-default``.
``--mbbr-prior-strategy`` (also on ``demo``) gives MBBR a strategy file as its prior mean and its
default strategy, as the service's ``prior_mean_json`` and ``default_strategy_json`` and the
library's ``prior_mean`` / ``default_strategy`` arguments do. ``--mbbr-population`` plays the
population prior of a file ``oppmodel population`` wrote, where MBBR runs in this process.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import parse_profile
from oppmodel.modeling.mbbr.config import DEFAULT_PRIOR, MBBRConfig, Posterior, Prior, Response
from oppmodel.modeling.population import Population

PRIOR_STRATEGY = "--mbbr-prior-strategy"
POPULATION = "--mbbr-population"


def config_field(name: str, convert: Callable[[str], int | float]) -> Callable[[str], int | float]:
    """An argparse type for MBBRConfig's field ``name``: the value must pass the config's own
    validation, so the flag's range is the library's (one definition) and a bad value is a usage
    error naming the flag."""

    def parse(text: str) -> int | float:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {convert.__name__}") from None
        try:
            change: dict[str, Any] = {name: value}  # the field is named at run time
            dataclasses.replace(MBBRConfig(), **change).validate()
        except InvalidArgumentError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{name}: ")) from None
        return value

    parse.__name__ = name
    return parse


def add_mbbr_arguments(
    parser: argparse.ArgumentParser, *, limit_prior: Prior | None = None
) -> None:
    """Add MBBR's parameters as ``--mbbr-*`` flags (defaults as in MBBRConfig; ``--mbbr-prior``
    defaults to None, which :func:`mbbr_config` reads as ``limit_prior`` in a limit game if
    given, else as the posterior's default prior, ``config.DEFAULT_PRIOR``)."""
    group = parser.add_argument_group(
        "MBBR parameters (Ganzfried et al. 2024's, except the posterior: Dirichlet by default)"
    )
    defaults = MBBRConfig()
    _add_posterior_arguments(group, defaults)
    _add_prior_arguments(group, defaults, limit_prior)
    _add_play_arguments(group, defaults)
    add_prior_strategy_argument(group)
    group.add_argument(
        POPULATION,
        type=Path,
        metavar="FILE",
        help="MBBR's prior: the population prior in FILE (`oppmodel population` writes it), in "
        "place of --mbbr-prior; only where MBBR runs in this process (the service fits its "
        "callers' populations itself: FitPopulation)",
    )


def _add_posterior_arguments(group: argparse._ArgumentGroup, defaults: MBBRConfig) -> None:
    """Which posterior MBBR keeps (and its samples) and what it responds to."""
    group.add_argument(
        "--mbbr-posterior",
        choices=Posterior.names(),
        default=defaults.posterior,
        help="dirichlet: one Dirichlet per opponent information set, fitted by variational "
        "Bayes; it keeps learning where the samples collapse onto one. samples: the paper's k "
        "importance-weighted Dirichlet samples per opponent (as Ganzfried et al. 2024 publish it) "
        "(%(default)s)",
    )
    group.add_argument(
        "--mbbr-k",
        type=config_field("k", int),
        metavar="K",
        help=f"samples per opponent model; only with --mbbr-posterior samples ({defaults.k})",
    )
    group.add_argument(
        "--mbbr-response",
        choices=Response.names(),
        default=defaults.response,
        help="mean: best response to the opponents' mean models (paper); bayes: exact Bayesian "
        "best response to the joint posterior (%(default)s)",
    )


def _add_prior_arguments(
    group: argparse._ArgumentGroup, defaults: MBBRConfig, limit_prior: Prior | None
) -> None:
    """The prior over the opponents' strategies: its kind, clipping and concentrations."""
    prior_default = ", ".join(f"{p} with the {q} posterior" for q, p in DEFAULT_PRIOR.items())
    if limit_prior:
        prior_default += f"; in a limit game {limit_prior}"
    group.add_argument(
        "--mbbr-prior",
        # the population prior needs a fitted population: --mbbr-population gives one
        choices=[name for name in Prior.names() if name != Prior.POPULATION],
        help="informed: Dirichlet around N3, its probabilities clipped to [epsilon, 1 - epsilon]; "
        "uninformed: Dirichlet(2) everywhere; typed (dirichlet posterior only): informed as a "
        "hypothesis, each opponent either never makes a move N3 never makes or is the informed "
        "prior's error-prone player, weighed by its revealed cards; mixture (limit games, "
        "dirichlet posterior): each opponent plays like informed, uninformed or without looking "
        "at its cards (one strategy per betting node), weighed by its revealed moves; "
        "eta-mixture: informed, its concentration eta or --mbbr-weak-eta per opponent, weighed "
        "by its revealed moves; tilted (limit games, dirichlet posterior): the eta mixture, its "
        "prior mean refitted every 100 hands toward the moves the opponent made, per betting "
        f"situation and node ({prior_default})",
    )
    group.add_argument(
        "--mbbr-epsilon",
        type=config_field("epsilon", float),
        default=defaults.epsilon,
        help="prior means clipped to [eps, 1 - eps] (%(default)s)",
    )
    concentrations = {  # the Dirichlet priors' concentrations around the prior mean
        "eta": "concentration eta of the Dirichlet prior around the prior mean (informed and "
        "typed priors, the eta mixture's strong type; the mixture's informed type has "
        "--mbbr-mixture-eta)",
        "weak_eta": "the eta mixture's weak concentration: against an opponent whose revealed "
        "moves scatter away from the prior mean the prior weighs as this many observations of "
        "each information set, not eta",
        "mixture_eta": "the mixture prior's informed type, Dirichlet(this x the prior mean): a "
        "type that plays like the prior mean, weighed against the others by the revealed moves",
    }
    for field, text in concentrations.items():
        group.add_argument(
            f"--mbbr-{field.replace('_', '-')}",
            type=config_field(field, float),
            default=getattr(defaults, field),
            help=f"{text} (%(default)s)",
        )


def _add_play_arguments(group: argparse._ArgumentGroup, defaults: MBBRConfig) -> None:
    """When MBBR leaves its default strategy, how far (the safety budget), and when it forgets
    (change detection)."""
    group.add_argument(
        "--mbbr-hands-default",
        "--mbbr-h",
        type=config_field("hands_default", int),
        default=defaults.hands_default,
        help="hands of default play (N1) before best-responding, H (%(default)s)",
    )
    group.add_argument(
        "--mbbr-safety-budget",
        type=config_field("safety_budget", float),
        default=defaults.safety_budget,
        metavar="B",
        help="risk budget B in the game's unit (milli-antes per hand with antes, as Kuhn and "
        "Leduc; milli-big-blinds per hand with blinds): deviate from the default strategy only "
        "as far as a bankroll per hypothesis 'the opponents play N1, N2 or N3' (other games: "
        "the default strategy) covers, so against such opponents the expected winnings stay "
        "within B of the default's; a hypothesis dies at the first move it cannot explain. "
        "'inf': off, the plain response (%(default)s)",
    )
    group.add_argument(
        "--mbbr-change-hazard",
        type=config_field("change_hazard", float),
        default=defaults.change_hazard,
        metavar="H",
        help="prior probability per hand that the opponents change strategy: change-point "
        "detection over a bank of posteriors follows opponents who switch style; 0 assumes they "
        "never do, as Ganzfried et al. 2024 assume (%(default)s)",
    )


def add_prior_strategy_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The ``--mbbr-prior-strategy FILE`` flag (one definition, for every command that builds
    MBBR)."""
    parser.add_argument(
        PRIOR_STRATEGY,
        metavar="FILE",
        help="a strategy file (as `oppmodel solve` writes them; in Kuhn also OpenSpiel's keys) as "
        "MBBR's prior mean AND its default strategy, the one it plays for the first hands (the "
        "service's prior_mean_json and default_strategy_json; the library's prior_mean and "
        "default_strategy). Default: the game's solved strategy, bundled or solved on first use "
        "(3-player Kuhn: N3 as prior mean, N1 as default)",
    )


def prior_strategy_json(args: argparse.Namespace, game: LimitGame) -> str | None:
    """The text of ``--mbbr-prior-strategy``'s file, checked against ``game`` now, so that a bad
    file is a usage error naming it before anything starts; None when the flag is not given."""
    path = getattr(args, "mbbr_prior_strategy", None)
    if path is None:
        return None
    if getattr(args, "mbbr_prior", None) == Prior.UNINFORMED:
        raise InvalidArgumentError(PRIOR_STRATEGY, "the uninformed prior has no prior mean")
    try:
        text = Path(path).read_text()
        parse_profile(game, text, path)
    except OSError as exc:
        raise InvalidArgumentError(PRIOR_STRATEGY, f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(PRIOR_STRATEGY, f"cannot read {path}: {exc}") from None
    except InvalidArgumentError as exc:  # what is wrong with the file, under the flag's name
        raise type(exc)(PRIOR_STRATEGY, str(exc)) from None
    return text


def prior_strategy_profile(game: LimitGame, text: str | None) -> np.ndarray | None:
    """The profile of a strategy file's text for the model builders' ``prior_mean`` and
    ``default_strategy`` (None: the game's defaults)."""
    return None if text is None else parse_profile(game, text, PRIOR_STRATEGY)


def mbbr_config(
    args: argparse.Namespace, *, seed: int = 0, limit_prior: Prior | None = None
) -> MBBRConfig:
    """The validated MBBRConfig of the ``--mbbr-*`` flags with ``seed`` (an unset prior:
    ``limit_prior`` if given, the game being a limit game, else MBBRConfig's);
    InvalidArgumentError if a value is out of range, or if ``--mbbr-k`` is given to a posterior
    that has no samples (it would be silently ignored)."""
    if args.mbbr_k is not None and args.mbbr_posterior != Posterior.SAMPLES:
        raise InvalidArgumentError(
            "--mbbr-k",
            f"the {args.mbbr_posterior} posterior has no samples; add --mbbr-posterior samples "
            "for the paper's k samples",
        )
    given: dict[str, Any] = {  # each field's flag is --mbbr-<field>; unset (None): the default
        field.name: getattr(args, f"mbbr_{field.name}")
        for field in dataclasses.fields(MBBRConfig)
        if getattr(args, f"mbbr_{field.name}", None) is not None
    }
    given["prior"] = args.mbbr_prior or limit_prior  # None: the posterior's default prior
    config = MBBRConfig(**given, seed=seed)
    config.validate()
    return config


def mbbr_population(
    args: argparse.Namespace, game: LimitGame, config: MBBRConfig
) -> tuple[MBBRConfig, Population | None]:
    """``config`` with the population prior and the population of ``--mbbr-population``'s file
    read for ``game`` (a usage error naming the flag if it is not one); ``(config, None)``
    without the flag."""
    path = getattr(args, "mbbr_population", None)
    if path is None:
        return config, None
    try:
        population = Population.from_bytes(game, Path(path).read_bytes())
    except OSError as exc:
        raise InvalidArgumentError(POPULATION, f"cannot read {path}: {exc.strerror}") from None
    except InvalidArgumentError as exc:
        raise type(exc)(POPULATION, str(exc).removeprefix("population: ")) from None
    return dataclasses.replace(config, prior=Prior.POPULATION), population
