"""MBBR's posterior in 2-player limit hold'em: a Dirichlet per (our position, abstract information
set of the opponent), fitted from hands of the real game.

The posterior lives on the abstract game of a blueprint
(:func:`~oppmodel.modeling.games.acpc.holdem_abstract.abstract_game`): the opponent's strategy
is a row per (view, exact betting), the rows the blueprint's strategy file keys. Its prior is
MBBR's informed prior around the blueprint (:func:`~oppmodel.modeling.mbbr.priors.prior_alpha`,
``eta`` times the blueprint's rows clipped to ``[epsilon, 1 - epsilon]``), and its fit is MBBR's
own, unchanged: :class:`~oppmodel.modeling.mbbr.dirichlet.DirichletPosterior` (CVB0; one exact
conjugate count when nothing is hidden).

What is new is the evidence of a hand. The abstract game's chance is a sample of deals, so a real
hand is in it only by accident, and :func:`~oppmodel.modeling.mbbr.evidence.hand_evidence`
(which finds the sample's deals that agree with what we saw) does not apply. Here the evidence
is built from the real cards: every hole pair the opponent may hold given what we saw (none of
our cards, none of the board's dealt so far: :func:`~oppmodel.modeling.holdem.policy.live_holes`;
the one pair it showed at a showdown) is an assignment, equally likely before the actions, and
its moves are at the information sets the card abstraction gives that pair on the hand's boards
(:meth:`~oppmodel.modeling.games.acpc.abstraction.CardAbstraction.range_buckets`, a whole range
in one pass per board). That is the :class:`~oppmodel.modeling.mbbr.evidence.Evidence` the fit
reads, so the expectation step over hidden cards is the limit games' own: each pair's
responsibility is the product of the model's probabilities of the opponent's moves at its
information sets, normalised over the pairs (a pair's cards do not change the chance of the
board: every pair is dealt alike). Pairs at the same information sets all along are one row
weighted by their number, which is exact (their responsibilities are equal, and add up): a hand
folded on the river is some 70 rows, not 1,225.

The prior's mean is refitted on demand (:meth:`HoldemPosterior.refit`): the blueprint tilted per
betting situation and node toward what the opponent did (:mod:`~oppmodel.modeling.holdem.tilt`).
"""

from __future__ import annotations

import functools

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.abstraction import CardAbstraction
from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS, NUM_ACTIONS, ROUND_SEPARATOR
from oppmodel.modeling.games.acpc.flop_table import FlopTable
from oppmodel.modeling.games.acpc.hand_rank import card_index
from oppmodel.modeling.games.acpc.holdem_abstract import AbstractGameConfig
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.holdem.blueprint import range_views
from oppmodel.modeling.holdem.policy import live_holes
from oppmodel.modeling.holdem.strength import hole_rows
from oppmodel.modeling.holdem.tilt import TiltMap, fit_tilt
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior
from oppmodel.modeling.mbbr.evidence import Evidence, hand_likelihood
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.observation import LimitObservation, validate_limit_observation

REFIT_SWEEPS = 2  # steps over the hidden hands after a refit of the prior (incremental EM goes on)
NO_DEAL = -1  # ``Evidence.deal`` of a real hand: no deal of the abstract game's sample holds it


class AbstractSpots:
    """Where real cards and bettings meet the abstract game: the information set a hole pair is
    at after a betting, for a whole range at once."""

    def __init__(
        self,
        game: LimitGame,
        config: AbstractGameConfig,
        cards: CardAbstraction,
        flops: FlopTable | None = None,
    ) -> None:
        """``flops``: the flops' buckets computed ahead (a blueprint's ``flops``), read instead
        of bucketing a new flop (10-60 ms of CPU)."""
        if cards.config != config.abstraction:
            raise InvalidArgumentError("cards", "is not the abstraction of the abstract game")
        self.game = game
        self.config = config
        self.cards = cards
        self.flops = flops

    def views(self, board: tuple[int, ...], round_: int, holes: np.ndarray) -> np.ndarray:
        """(k,) the view in ``round_`` of each hole pair ((k, 2) card integers) on ``board``
        (card integers, at least the cards dealt by that round); InvalidArgumentError if a pair
        holds a board card."""
        return range_views(self.config, self.cards, self.flops, board, round_, hole_rows(holes))

    def infosets(self, betting: str, board: tuple[int, ...], holes: np.ndarray) -> np.ndarray:
        """(k,) the information set of the player to act after ``betting`` holding each pair."""
        node = self.game.node(betting)
        round_ = int(self.game.tree.node_round[node])
        return int(self.game.tree.node_base[node]) + self.views(board, round_, holes)

    def moves(self, betting: str) -> tuple[tuple[int, int, int, int], ...]:
        """Every move of a betting: (node before it, its round, the mover, the action code)."""
        return _moves(self.game, betting)


@functools.cache  # per (game, betting): a match meets the same bettings over and over
def _moves(game: LimitGame, betting: str) -> tuple[tuple[int, int, int, int], ...]:
    tree = game.tree
    out = []
    for k, letter in enumerate(betting):
        if letter == ROUND_SEPARATOR:
            continue
        node = game.node(betting[:k])
        out.append(
            (
                node,
                int(tree.node_round[node]),
                int(tree.node_player[node]),
                ACTION_LETTERS.index(letter),
            )
        )
    return tuple(out)


def cards_of(text: str) -> list[int]:
    """The card integers of an ACPC card text (``"AsKh"``)."""
    return [card_index(text[i : i + 2]) for i in range(0, len(text), 2)]


def holdem_evidence(spots: AbstractSpots, obs: LimitObservation) -> Evidence:
    """The evidence of a validated 2-player observation of real cards (see the module's text):
    one row per distinct sequence of the opponent's information sets over the hole pairs it may
    hold, its moves as (0, information set, action), weighted by its number of pairs."""
    game = spots.game
    q = 1 - obs.position
    ours = obs.hole[obs.position]
    assert ours is not None  # validated: our own cards are always there
    board = tuple(c for text in obs.board for c in cards_of(text))
    shown = obs.hole[q]
    if shown is not None:
        holes = np.array([cards_of(shown)], dtype=np.int64)
    else:
        holes = live_holes([*cards_of(ours), *board])
    moves = [(node, r, a) for node, r, mover, a in spots.moves(obs.betting) if mover == q]
    views = {r: spots.views(board, r, holes) for r in {r for _, r, _ in moves}}
    rows = np.zeros((len(holes), len(moves), 3), dtype=np.int64)
    for j, (node, r, a) in enumerate(moves):
        rows[:, j, 1] = int(game.tree.node_base[node]) + views[r]
        rows[:, j, 2] = a
    entries = rows[:, :, 1] * NUM_ACTIONS + rows[:, :, 2]  # offset 1: the table's first block
    _, first, weights = np.unique(entries, axis=0, return_index=True, return_counts=True)
    return Evidence(NO_DEAL, rows[first], (shown is not None,), entries[first], weights)


class HoldemPosterior:
    """Per position of ours, the Dirichlet posterior over the opponent's abstract strategy (see
    the module's text); 2 players."""

    def __init__(
        self,
        spots: AbstractSpots,
        blueprint: np.ndarray,
        config: MBBRConfig | None = None,
    ) -> None:
        """``blueprint``: (2, num_infosets, 3) the abstract game's profile the prior is around
        (:func:`abstract_profile`); ``config``: MBBR's, of which ``epsilon`` and ``eta`` are read
        (the informed prior)."""
        game = spots.game
        if game.num_players != 2:
            raise InvalidArgumentError("game", "hold'em opponent models are 2-player for now")
        config = config or MBBRConfig()
        config.validate()
        self.spots = spots
        self.blueprint = blueprint
        alpha = prior_alpha(
            game, blueprint, epsilon=config.epsilon, eta=config.eta, prior=Prior.INFORMED
        )
        self.eta = config.eta
        self.base = alpha / config.eta  # the clipped blueprint rows the tilt multiplies
        self.tilts = [TiltMap(game, 1 - p) for p in range(2)]
        self.fits = [
            DirichletPosterior(alpha[[1 - p]], blueprint.copy(), [1 - p]) for p in range(2)
        ]
        self.hands = 0
        # log of the likelihood ratio, the models' predictions against the blueprint's, of the
        # opponent's moves in every hand so far (each hand's prediction made before it)
        self.log_odds = 0.0

    def observe(self, obs: LimitObservation) -> Evidence:
        """Add a finished hand seen from ``obs.position`` (InvalidArgumentError /
        IllegalActionError naming the field, nothing changed, if the dealer could not have shown
        it); returns its evidence."""
        validate_limit_observation(self.spots.game, obs)
        evidence = holdem_evidence(self.spots, obs)
        p = obs.position
        model = hand_likelihood(evidence.rows, evidence.weights, p, self.models_profile(p))
        blueprint = hand_likelihood(evidence.rows, evidence.weights, p, self.blueprint)
        with np.errstate(divide="ignore"):
            self.log_odds += np.log(model) - np.log(blueprint)
        self.fits[obs.position].observe(obs, evidence)
        self.hands += 1
        return evidence

    def refit(self, sweeps: int = REFIT_SWEEPS) -> None:
        """Fit each position's tilted prior (:mod:`oppmodel.modeling.holdem.tilt`) to the
        expected counts now, make it the Dirichlets' prior mean (concentration ``eta``), and step
        the fit ``sweeps`` times over the hands with hidden cards under the new prior."""
        for p, fit in enumerate(self.fits):
            q = 1 - p
            mean = fit_tilt(self.tilts[p], self.base[q], fit.expected[0])
            fit.alpha0[0] = self.eta * mean  # in place: the fit's kernels read this array
            fit.converge(max_sweeps=sweeps)

    def models_profile(self, p: int) -> np.ndarray:
        """(2, num_infosets, 3): the opponent's posterior mean in its row, the blueprint in ours
        (kept up to date hand by hand: do not modify it)."""
        return self.fits[p].profile


def abstract_profile(game: LimitGame, positions: list[dict[str, list[float]]]) -> np.ndarray:
    """(n, num_infosets, 3) a strategy file's rows (``Blueprint.positions``, keyed
    ``<view>:<betting>``) as a profile of the abstract game; a row the file lacks checks or
    calls (the lazy solver's unvisited sets); padding rows call."""
    out = np.zeros((game.num_players, game.num_infosets, NUM_ACTIONS))
    out[:, :, 1] = 1.0
    for p in range(game.num_players):
        rows = positions[p]
        for i in game.infosets(p):
            row = rows.get(game.infoset_string(p, i))
            if row is not None:
                out[p, i] = row
    return out
