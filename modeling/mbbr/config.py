"""MBBR's parameters: the configuration record, its choices and the ranges it accepts.

The choices are string enums (``oppmodel.modeling.choice``) whose values are the names stored in
session specs and snapshots, given on the command line and in the JSON output.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

from oppmodel.modeling.choice import Choice
from oppmodel.modeling.errors import InvalidArgumentError

EPSILON_RANGE = (1e-6, 0.5)  # [low, high)
ETA_RANGE = (1e-3, 1e6)  # [low, high]
# The safety budget's default, in the game's unit as win rates are (``game.rate_unit``: mA/h in
# ante games such as Kuhn and Leduc, mbb/h with blinds): the exact learning cost against pairs of
# N1, N2 and N3 (3-player Kuhn) or against opponents playing the default strategy (other games;
# ``safety.py``) is at most this by construction; math.inf turns the bankroll off.
SAFETY_BUDGET = 0.5
CHANGE_HAZARD_RANGE = (0.0, 0.1)  # [low, high]
INTEGER_RANGES = {"k": (1, math.inf), "hands_default": (0, math.inf), "seed": (0, 2**63 - 1)}
# Fields added after sessions and snapshots were first stored, with the value their absence means
# (what a stored config without them was built with): ``SessionSpec.from_json`` fills them in, and
# a snapshot's header leaves them out at that value, so earlier snapshots still restore
# (mixture_eta's absence, in a mixture-prior session, means eta: ``SessionSpec.from_json``).
FIELDS_ADDED_LATER: dict[str, object] = {
    "safety_budget": math.inf,
    "change_hazard": 0.0,
    "mixture_eta": 4.0,
    "weak_eta": 1.0,  # read only by the eta mixture, which did not exist before it
}


class Prior(Choice):
    """The prior over each opponent's strategy (``oppmodel.modeling.mbbr.priors``)."""

    INFORMED = "informed"  # Dirichlet(eta * the prior mean clipped to [epsilon, 1 - epsilon])
    UNINFORMED = "uninformed"  # Dirichlet(2) everywhere
    TYPED = "typed"  # in-support or error-prone player (``mixture_prior``); Dirichlet only
    # informed, uninformed or card-blind player, weighed by its revealed moves
    # (``mixture_prior``); limit games and the Dirichlet posterior only
    MIXTURE = "mixture"
    # informed, its concentration per opponent eta or weak_eta, weighed by the revealed moves
    # (``mixture_prior``); the samples draw alternately at each
    ETA_MIXTURE = "eta-mixture"
    # Dirichlet per information set fitted across the opponents met before
    # (``oppmodel.modeling.population``), its types tilted as the tilted prior (``tilted_prior``)
    POPULATION = "population"
    # the eta mixture, its prior mean tilted to the opponent every 100 hands (``tilted_prior``)
    TILTED = "tilted"


class Posterior(Choice):
    """How the posterior is represented; the default first."""

    DIRICHLET = "dirichlet"  # one Dirichlet per information set, variational Bayes
    SAMPLES = "samples"  # the paper's k importance-weighted samples


class Response(Choice):
    """What the agent plays after the default phase."""

    MEAN = "mean"  # best response to the opponents' posterior-mean models (the paper's)
    BAYES = "bayes"  # the Bayesian best response to the joint posterior


_DIRICHLET_ONLY = (Prior.TYPED, Prior.MIXTURE, Prior.TILTED)  # priors with no sample form
# An unset prior's value per posterior (another's: the eta mixture); samples take no tilt
DEFAULT_PRIOR = {Posterior.DIRICHLET: Prior.TILTED, Posterior.SAMPLES: Prior.ETA_MIXTURE}
_CHOICES: tuple[tuple[str, type[Choice]], ...] = (
    ("prior", Prior),
    ("response", Response),
    ("posterior", Posterior),
)


@dataclasses.dataclass(frozen=True)
class MBBRConfig:
    """MBBR's parameters (Ganzfried, Wang & Chiswick 2024 use epsilon 0.05, k 10, H 100 and
    ``prior="informed", posterior="samples"`` at eta 4); the defaults here are the Dirichlet
    posterior and the tilted prior, the eta mixture refitted to the opponent, which learn more
    where information sets are rarely met (experiments/RESULTS.md); unset, ``DEFAULT_PRIOR``.

    The choice fields take a member or its name; a name is stored as its member. Nothing is
    checked on construction: :meth:`validate` names the first bad field.
    """

    epsilon: float = 0.05
    k: int = 10
    hands_default: int = 100  # H: hands of default play before exploiting
    eta: float = 4.0
    prior: Prior = None  # type: ignore[assignment]  # set on construction (None: unset)
    response: Response = Response.MEAN
    seed: int = 0
    posterior: Posterior = Posterior.DIRICHLET
    # B in the game's unit: deviate from the default only as far as a bankroll per hypothesis
    # covers (``safety.py``); math.inf: off, the plain response
    safety_budget: float = SAFETY_BUDGET
    # prior probability per hand that the opponents change strategy (``change.py``); 0: never
    change_hazard: float = 1e-5
    # the type mixture's informed type, Dirichlet(mixture_eta x the clipped prior mean), in place
    # of eta (``mixture_prior.py`` says why it has its own)
    mixture_eta: float = 4.0
    # the eta mixture's weak concentration (the strong one is eta; benchmarks/RESULTS.md,
    # "Unseen games")
    weak_eta: float = 1.0

    def __post_init__(self) -> None:
        unset = DEFAULT_PRIOR.get(self.posterior, Prior.ETA_MIXTURE)
        object.__setattr__(self, "prior", unset if self.prior is None else self.prior)
        for name, choice in _CHOICES:
            with contextlib.suppress(ValueError):  # not a name: validate() reports it
                object.__setattr__(self, name, choice(getattr(self, name)))

    def validate(self) -> None:
        """Raise InvalidArgumentError naming the first bad field."""
        _check_number("epsilon", self.epsilon, *EPSILON_RANGE, closed=False)
        for name, (low, high) in INTEGER_RANGES.items():  # [low, high]
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InvalidArgumentError(
                    name, f"must be an integer in [{low}, {high}], got {value!r}"
                )
        for name in ("eta", "mixture_eta", "weak_eta"):
            _check_number(name, getattr(self, name), *ETA_RANGE)
        _check_number("change_hazard", self.change_hazard, *CHANGE_HAZARD_RANGE)
        for name, choice in _CHOICES:
            value = getattr(self, name)
            if not isinstance(value, choice):
                raise InvalidArgumentError(name, f"must be one of {choice.names()}, got {value!r}")
        if self.prior in _DIRICHLET_ONLY and self.posterior != Posterior.DIRICHLET:
            raise InvalidArgumentError(
                "prior",
                f"'{self.prior.value}' needs the 'dirichlet' posterior (it has no sample form)",
            )
        budget = self.safety_budget
        if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget >= 0:
            raise InvalidArgumentError(
                "safety_budget",
                f"must be a number >= 0 (the game's unit per hand; inf: off), got {budget!r}",
            )

    def stored_fields(self) -> dict[str, object]:
        """The fields as a snapshot's header spells them: one of ``FIELDS_ADDED_LATER`` left out
        at the value its absence means, so headers written before it existed still match."""
        return {
            name: value
            for name, value in dataclasses.asdict(self).items()
            if name not in FIELDS_ADDED_LATER or value != FIELDS_ADDED_LATER[name]
        }

    def informed_eta(self) -> float:
        """The informed prior's concentration: ``mixture_eta`` under the mixture prior, else eta."""
        return self.mixture_eta if self.prior == Prior.MIXTURE else self.eta


def _check_number(name: str, value: object, low: float, high: float, closed: bool = True) -> None:
    """InvalidArgumentError naming ``name`` unless ``value`` is a number (not a bool) in
    [low, high] (``closed``) or [low, high)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (number and low <= value <= high and (closed or value < high)):  # type: ignore[operator]
        end = "]" if closed else ")"
        raise InvalidArgumentError(name, f"must be in [{low:g}, {high:g}{end}, got {value!r}")
