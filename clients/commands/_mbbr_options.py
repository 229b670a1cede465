"""The ``--mbbr-*`` command-line options, shared by every subcommand that plays MBBR.

One definition of the flags (paper 003's defaults, from ``MBBRConfig``) and of the
``MBBRConfig`` they build, so ``match``, ``acpc-agent`` and ``replay`` accept the same options
with the same meaning. ``--mbbr-h`` is kept as a short alias of ``--mbbr-hands-default``.
"""

from __future__ import annotations

import argparse

from modeling.mbbr import POSTERIORS, PRIORS, RESPONSES, MBBRConfig


def add_mbbr_arguments(parser: argparse.ArgumentParser) -> None:
    """Add MBBR's parameters as ``--mbbr-*`` flags (defaults: paper 003's, as in MBBRConfig)."""
    defaults = MBBRConfig()
    group = parser.add_argument_group("MBBR parameters (paper 003's defaults)")
    group.add_argument(
        "--mbbr-posterior",
        choices=POSTERIORS,
        default=defaults.posterior,
        help="samples: k importance-weighted Dirichlet samples per opponent (paper); dirichlet: "
        "one Dirichlet per information set fitted by variational Bayes, which keeps learning "
        "where the samples collapse (%(default)s)",
    )
    group.add_argument(
        "--mbbr-k",
        type=int,
        default=defaults.k,
        help="samples per opponent model, samples posterior only (%(default)s)",
    )
    group.add_argument(
        "--mbbr-response",
        choices=RESPONSES,
        default=defaults.response,
        help="mean: best response to the opponents' mean models (paper); bayes: exact Bayesian "
        "best response to the joint posterior (%(default)s)",
    )
    group.add_argument(
        "--mbbr-prior",
        choices=PRIORS,
        default=defaults.prior,
        help="informed: Dirichlet around N3, its probabilities clipped to [epsilon, 1 - epsilon]; "
        "uninformed: Dirichlet(2) everywhere; typed (dirichlet posterior only): informed as a "
        "hypothesis, each opponent either never makes a move N3 never makes or is the informed "
        "prior's error-prone player, weighed by its revealed cards (%(default)s)",
    )
    group.add_argument(
        "--mbbr-epsilon",
        type=float,
        default=defaults.epsilon,
        help="prior means clipped to [eps, 1 - eps] (%(default)s)",
    )
    group.add_argument(
        "--mbbr-eta",
        type=float,
        default=defaults.eta,
        help="Dirichlet concentration of the samples (%(default)s)",
    )
    group.add_argument(
        "--mbbr-hands-default",
        "--mbbr-h",
        type=int,
        default=defaults.hands_default,
        help="hands of default play (N1) before best-responding, H (%(default)s)",
    )


def mbbr_config(args: argparse.Namespace, *, seed: int = 0) -> MBBRConfig:
    """The validated MBBRConfig of the ``--mbbr-*`` flags with ``seed``; InvalidArgumentError if
    a value is out of range."""
    config = MBBRConfig(
        epsilon=args.mbbr_epsilon,
        k=args.mbbr_k,
        hands_default=args.mbbr_hands_default,
        eta=args.mbbr_eta,
        prior=args.mbbr_prior,
        response=args.mbbr_response,
        posterior=args.mbbr_posterior,
        seed=seed,
    )
    config.validate()
    return config
