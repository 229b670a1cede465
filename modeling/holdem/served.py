"""Limit hold'em in the service's game interface (:mod:`oppmodel.modeling.games.interface`).

Hold'em is too big to compile, so a hold'em session's model is MBBR over the abstract game of the
bundled blueprint (:class:`~oppmodel.modeling.holdem.response.HoldemMBBR`: the posterior of
:mod:`~oppmodel.modeling.holdem.posterior`, its response solved every ``REFRESH`` hands, a
share of the hands within a safety budget against the blueprint). :class:`HoldemServed` is that
abstract game as a :class:`~oppmodel.modeling.games.interface.CompiledGame` with what differs:

- observations are MATCHSTATE lines of the real game (real cards), validated as the compiled
  games' are; a decision's information set is the abstract game's for our real cards on the real
  board (:class:`~oppmodel.modeling.holdem.posterior.AbstractSpots`);
- information states are the abstract game's (``"<view>:<betting>"``, the blueprint's keys);
- the prior is the blueprint: a session takes no ``prior_mean`` or ``default_strategy``; the
  posterior is ``dirichlet`` with the ``informed`` prior (unset: these; the safety budget unset:
  ``BUDGET`` mbb/h, hold'em's); no change detection; 2 players (the posterior's). Each is refused
  naming its field.

GetAction's row is the response's or the blueprint's for the whole hand: the hand's draw is a
fixed function of the seed, the hands observed and our position (:func:`hand_draw`), so every
decision of a hand (same hands observed) plays the same one, in any process and after a reload,
and the expected loss against the blueprint is the share's (``HoldemMBBR``'s text).

The response is solved beside the model (``HoldemMBBR``'s ``lag``): a solve begun after hand h
(~0.3 s, every ``REFRESH`` hands) runs on a thread of its own and takes effect after hand
h + ``SOLVE_LAG``, the old response answering until then; the session's model lock (and a model
worker) is held only for the copy of the fits it starts from. The lag is in hands, not seconds,
so the decisions are a function of the hands observed: a reload, a restored snapshot (which
carries the running solve's copy) and ``acpc-agent --in-process`` play what the session played.
At 100 hands/s the lag is 0.5 s; a solve not ready by then holds the observation of hand
h + ``SOLVE_LAG`` until it is.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.limit import best_response, expected_values
from oppmodel.modeling.games.acpc.bundled import GAMES_FOLDER, HOLDEM_BLUEPRINTS, HOLDEM_GAMES
from oppmodel.modeling.games.acpc.compiler import bundled_name, limit_game_of
from oppmodel.modeling.games.acpc.gamedef import GameDef, parse_game_def, read_game_def
from oppmodel.modeling.games.acpc.holdem_abstract import abstract_game, holdem_unsupported
from oppmodel.modeling.games.interface import (
    CompiledGame,
    Decision,
    Hand,
    ServedGame,
    ServedModel,
    compiled,
    read_matchstate,
)
from oppmodel.modeling.holdem.blueprint import abstract_profile
from oppmodel.modeling.holdem.posterior import (
    AbstractSpots,
    HoldemPosterior,
    cards_of,
)
from oppmodel.modeling.holdem.response import BUDGET, HoldemMBBR
from oppmodel.modeling.holdem.sets import FIRST_CAPACITY, LazySets
from oppmodel.modeling.holdem.styles import bundled_blueprint
from oppmodel.modeling.holdem.window import BOUND, WINDOW
from oppmodel.modeling.mbbr.base import MBBRModel, OpponentInsight
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Prior, Response
from oppmodel.modeling.mbbr.snapshot import SnapshotError, decode_snapshot, encode, section, take
from oppmodel.modeling.observation import (
    LimitObservation,
    limit_observation_cards,
    limit_observation_of,
)

CHECK_DEALS = 500  # deals of the check game the safety share is measured on (the field's)
SOLVE_LAG = 50  # hands from a solve's start to its effect (the module's text)
PLAYERS = 2  # the hold'em posterior's
SNAPSHOT_POSTERIOR = "holdem-dirichlet"  # the snapshot header's posterior
DRAWS_KEPT = 1024  # hand_draw's kept draws: a hand's, for each of many sessions a worker holds


def served_limit_game(gamedef: GameDef) -> ServedGame:
    """The served game of ACPC limit rules: hold'em's (a 52-card deck, two hole cards, boards of
    0, 3, 1, 1 cards) over the bundled blueprint of the same rules, any other compiled.
    InvalidArgumentError naming ``game`` for hold'em rules no blueprint is bundled for, or a
    hold'em the posterior does not model (not 2 or 3 players). 3-player hold'em's abstract game
    does not compile: it is served by :mod:`~oppmodel.modeling.holdem.served_lazy`."""
    if holdem_unsupported(gamedef):
        return compiled(limit_game_of(gamedef))
    short = _holdem_name(gamedef)
    if short is None:
        raise InvalidArgumentError(
            "game",
            "hold'em rules without a bundled blueprint; the service models hold'em by "
            f"{', '.join(HOLDEM_BLUEPRINTS)}'s rules",
        )
    if gamedef.num_players == 3:
        from oppmodel.modeling.holdem.served_lazy import lazy_holdem_served  # it imports this

        return lazy_holdem_served(short)
    if gamedef.num_players != PLAYERS:
        raise InvalidArgumentError(
            "game",
            f"hold'em opponent models are 2- and 3-player; {short} has "
            f"{gamedef.num_players} players",
        )
    return holdem_served(short)


def game_short_name(gamedef: GameDef) -> str | None:
    """The short name of bundled rules (``leduc3p``, ``holdem2p``), or None."""
    return bundled_name(gamedef) or _holdem_name(gamedef)


def _holdem_name(gamedef: GameDef) -> str | None:
    for name in HOLDEM_BLUEPRINTS:
        if parse_game_def(_rules(name)) == gamedef:
            return name
    return None


@functools.cache
def _rules(short: str) -> str:
    return (GAMES_FOLDER / HOLDEM_GAMES[short]).read_text(encoding="ascii")


@functools.cache  # per game: the abstract games and the blueprint are built once, read-only
def holdem_served(short: str) -> HoldemServed:
    """The served hold'em game of a short name with a bundled blueprint (``holdem2p``)."""
    return HoldemServed(short)


def lazy_holdem_mbbr(
    short: str,
    config: MBBRConfig,
    bettings: Iterable[str] = (),
    *,
    budget: float = BUDGET,
    numbered: Sequence[str] = (),
    capacity: int = FIRST_CAPACITY,
    bound: float | None = BOUND,
) -> HoldemMBBR:
    """MBBR of bundled hold'em rules whose abstract game does not compile (``holdem3p``): the
    posterior around the bundled blueprint on sets numbered as met, the moves of the finished
    ``bettings`` numbered first, in order (what observing those hands would number; or the
    nodes of ``numbered``, in order: ``LazySets.bettings`` of a model restored, in arrays of
    ``capacity`` sets: its capacity), and the response made at each decision (``HoldemMBBR``'s
    text), its deviations within ``budget`` mbb/h; each fit keeps ``WINDOW`` classes at a refit,
    the older folded, and the numbering is renumbered beyond ``bound`` times the sets they use
    (holdem/window.py; None: never, where sets are read by a numbering made ahead).
    The model the hold'em field and the cycle benchmark play, ``oppmodel replay`` scores and a
    3-player session serves (:mod:`~oppmodel.modeling.holdem.served_lazy`)."""
    blueprint = bundled_blueprint(short)
    gamedef = read_game_def(short)
    sets = LazySets.of_blueprint(gamedef, blueprint, bettings=numbered, capacity=capacity)
    spots = AbstractSpots(None, blueprint.config, blueprint.cards, blueprint.flops, sets=sets)
    for betting in bettings:
        spots.moves(betting)
    posterior = HoldemPosterior(spots, None, config, window=WINDOW, bound=bound)
    return HoldemMBBR(posterior, None, config, budget=budget)


class HoldemRules:
    """What both hold'em presentations (2 players compiled, 3 on sets numbered as met) do with a
    session's config: the blueprint is bundled, so nothing is solved and no profile is taken;
    hold'em's unset fields and checks; ``_new_model`` the presentation's served model."""

    def needs_solving(self, *, default_given: bool, prior_given: bool) -> bool:
        return False  # the blueprint is bundled

    def unset_config(self) -> dict[str, object]:
        return dict(HOLDEM_UNSET)

    def check_config(self, config: MBBRConfig) -> None:
        check_holdem_config(config)

    def strategy_from_dict(
        self, position: int, table: Mapping[str, object], field: str
    ) -> np.ndarray:
        raise InvalidArgumentError(field, NO_PROFILES)

    def parse_profile(self, text: str, source: str) -> np.ndarray:
        raise InvalidArgumentError(source, NO_PROFILES)

    def build_model(
        self,
        config: MBBRConfig,
        *,
        default_strategy: np.ndarray | None = None,
        prior_mean: np.ndarray | None = None,
        solved: np.ndarray | None = None,
        population: bytes | None = None,
    ) -> ServedModel:
        self.check_config(config)
        if default_strategy is not None or prior_mean is not None:
            raise InvalidArgumentError("config.mbbr", NO_PROFILES)
        return self._new_model(config)

    def _new_model(self, config: MBBRConfig) -> ServedModel:
        raise NotImplementedError  # each presentation's own


class HoldemServed(HoldemRules, CompiledGame):
    """Hold'em served over its bundled blueprint's abstract game (the module's text)."""

    runs_inline = False  # a hand's update is ~20 ms, a solve seconds: never on the event loop

    def __init__(self, short: str) -> None:
        blueprint = bundled_blueprint(short)
        game = abstract_game(short, blueprint.config)
        super().__init__(game)
        self.short = short
        self.spots = AbstractSpots(game, blueprint.config, blueprint.cards, blueprint.flops)
        self.blueprint = abstract_profile(game, blueprint.positions)
        self.blueprint.flags.writeable = False
        check = dataclasses.replace(
            blueprint.config, deals=CHECK_DEALS, seed=blueprint.config.seed + 1
        )
        self.check = abstract_game(short, check)
        self._warm_up()

    def _warm_up(self) -> None:
        """A decision in each round and the update of a shown and of a folded hand, on a
        throwaway model: the kernels they reach load from numba's cache here, with the game,
        not in a session's first decisions (a fresh process's first turn decision took 56 ms
        at load 19, 0.4 ms after; two of the first hand's decisions past their 292 ms budget
        were the served match's only fallbacks)."""
        for line in WARM_DECISIONS:
            self.matchstate_decision(line)
        model = HoldemServedModel(self, self.played_config(MBBRConfig()))
        for line in WARM_HANDS:
            model.observe(self.matchstate_observation(line))

    def matchstate_decision(self, line: str) -> Decision:
        state = read_matchstate(self.compiled.gamedef, line, "matchstate")
        hole = state.hole[state.position]
        board = "".join(state.board)
        # the compiled game's checks (our turn, our cards there), on a betting of the real game
        to_act = self.compiled.current_player(state.betting)
        if to_act != state.position:
            who = "the hand is over" if to_act < 0 else f"position {to_act} is to act"
            raise InvalidArgumentError(
                "matchstate", f"{state.betting!r}: {who}, not position {state.position}"
            )
        if not hole:
            raise InvalidArgumentError("matchstate", "our own hole cards are missing")
        try:
            cards = np.array([cards_of(hole)], dtype=np.int64)
            index = int(self.spots.infosets(state.betting, tuple(cards_of(board)), cards)[0])
        except InvalidArgumentError as exc:
            raise InvalidArgumentError("matchstate", str(exc)) from None
        return Decision(state.position, index, state.betting)

    def _new_model(self, config: MBBRConfig) -> ServedModel:
        return cast(ServedModel, HoldemServedModel(self, config))

    def served_model(self, model: MBBRModel) -> ServedModel:
        raise AssertionError("hold'em builds its own model (build_model)")


NO_PROFILES = "a hold'em session's prior and default are its bundled blueprint: none is taken"
# a hold'em session's values of the fields it leaves unset (2 and 3 players)
HOLDEM_UNSET = {"change_hazard": 0.0, "prior": Prior.INFORMED, "safety_budget": BUDGET}


def check_holdem_config(config: MBBRConfig) -> None:
    """InvalidArgumentError naming the field of what a hold'em model does not run."""
    if config.posterior != Posterior.DIRICHLET:
        raise InvalidArgumentError("config.mbbr.posterior", "hold'em's is 'dirichlet' only")
    if config.prior != Prior.INFORMED:
        raise InvalidArgumentError(
            "config.mbbr.prior", "hold'em's is 'informed' only (around the blueprint)"
        )
    if config.change_hazard != 0.0:
        raise InvalidArgumentError(
            "config.mbbr.change_hazard", "hold'em sessions have no change detection (0)"
        )


# ``HoldemServed._warm_up``'s: a decision of each round, a shown and a folded hand (2 players)
WARM_DECISIONS = (
    "MATCHSTATE:1:0::|AsKd",
    "MATCHSTATE:0:0:cc/:AsKd|/2c3d4h",
    "MATCHSTATE:0:0:cc/cc/:AsKd|/2c3d4h/5s",
    "MATCHSTATE:0:0:cc/cc/cc/:AsKd|/2c3d4h/5s/9h",
)
WARM_HANDS = (
    "MATCHSTATE:0:0:cc/cc/cc/cc:AsKd|QhQd/2c3d4h/5s/9h",
    "MATCHSTATE:1:1:cc/cc/cc/rf:|AsKd/2c3d4h/5s/9h",
)


@functools.lru_cache(maxsize=DRAWS_KEPT)
def hand_draw(seed: int, hands: int, position: int) -> float:
    """The uniform draw that decides whether the response plays a hand (a fixed function of
    its keys: every decision of the hand gets the same). Kept for the hand's later decisions:
    a seeded Generator costs ~50-130 us, drawn once a hand instead of at each of its ~4."""
    return float(np.random.default_rng([seed, hands, position, 0x4845]).random())


class HoldemServedModel:
    """``HoldemMBBR`` as a session's model (``ServedModel``), rows on the abstract game."""

    def __init__(self, game: HoldemServed, config: MBBRConfig) -> None:
        self.game = game
        self.config = config
        posterior = HoldemPosterior(game.spots, game.blueprint, config)
        budget = config.safety_budget
        self.mbbr = HoldemMBBR(posterior, game.check, config, budget=budget, lag=SOLVE_LAG)

    @property
    def posterior(self) -> HoldemPosterior:
        return self.mbbr.posterior

    @property
    def hands_observed(self) -> int:
        return self.mbbr.hands

    def observe(self, hand: Hand) -> None:
        obs = cast(LimitObservation, hand)
        # the key of the hand's class in the fit, as a stored hand reads back (so a reload's
        # replay meets the classes of the hands before it)
        self.mbbr.observe(canonical_hand(obs))

    def opponent_model(self, our_position: int, opponent_position: int) -> tuple[np.ndarray, float]:
        insight = self.opponent_insight(our_position, opponent_position)
        return insight.model, insight.spread

    def opponent_insight(self, our_position: int, opponent_position: int) -> OpponentInsight:
        game = self.game.compiled
        game.check_position(our_position, "our_position")
        if opponent_position == our_position:
            raise InvalidArgumentError("opponent_position", "is our own position")
        fit = self.posterior.fits[our_position]
        concentration = fit.concentration(1)
        rows = game.infosets(opponent_position)
        prior = fit.alpha0[0] / fit.alpha0[0].sum(axis=1, keepdims=True).clip(min=1e-300)
        bankroll = math.inf if self.mbbr.ruled_out else self.mbbr.bank + self.mbbr.budget_chips
        return OpponentInsight(
            model=self.posterior.models_profile(our_position)[opponent_position].copy(),
            spread=float(concentration[rows].min()),
            prior=prior,
            concentration=concentration,
            run_start=0,
            safety_bankroll=bankroll,
        )

    def response(
        self, our_position: int, kind: Response | str | None = None
    ) -> tuple[np.ndarray, float]:
        """The best response in the abstract game to the posterior mean now (a solve: ~0.3 s),
        and its value there."""
        self.game.compiled.check_position(our_position, "our_position")
        if kind not in (None, Response.MEAN):
            raise InvalidArgumentError("kind", "hold'em's response is 'mean' only")
        return best_response(
            self.game.compiled, self.posterior.models_profile(our_position), our_position
        )

    def played(self, our_position: int) -> tuple[np.ndarray, float]:
        """Each information set's row of the hand mixture (the response's at the share, the
        blueprint's else) and its value against the posterior-mean model."""
        game = self.game.compiled
        share = self.mbbr.shares[our_position]
        models = self.posterior.models_profile(our_position)
        values = []
        for table in (self.mbbr.strategies[our_position], self.game.blueprint[our_position]):
            profile = models.copy()
            profile[our_position] = table
            values.append(float(expected_values(game, profile)[our_position]))
        rows = share * self.mbbr.strategies[our_position]
        rows = rows + (1 - share) * self.game.blueprint[our_position]
        return rows, share * values[0] + (1 - share) * values[1]

    def action_probabilities(self, our_position: int, infoset: int) -> np.ndarray:
        u = hand_draw(self.config.seed, self.hands_observed, our_position)
        respond = u < self.mbbr.shares[our_position]
        table = self.mbbr.strategies[our_position] if respond else self.game.blueprint[our_position]
        return table[infoset].copy()

    def matchstate_action(self, line: str) -> tuple[Decision, np.ndarray]:
        """A MATCHSTATE line's decision and its :meth:`action_probabilities`: the service looks
        a hold'em decision up where the model is (``ModelHost.decide``), so the boards it
        buckets are those the hand's update finds bucketed (the buckets are kept per process)."""
        decision = self.game.matchstate_decision(line)
        return decision, self.action_probabilities(decision.position, decision.infoset)

    def opponent_counts(self) -> np.ndarray:
        counts = np.zeros_like(self.game.blueprint)
        for p, fit in enumerate(self.posterior.fits):
            counts[1 - p] += fit.expected[0]
        return counts

    def nbytes(self) -> int:
        strategies = sum(s.nbytes for s in self.mbbr.strategies)
        solving = self.mbbr.pending
        if solving is not None:  # its copy of the fits (and the thread's own, about as large)
            strategies += 2 * sum(a.nbytes for _, state in solving.states for a in state.values())
        return sum(fit.nbytes() for fit in self.posterior.fits) + strategies

    # -- snapshots --------------------------------------------------------------------------------
    def _identity(self) -> dict[str, Any]:
        return {
            "posterior": SNAPSHOT_POSTERIOR,
            "num_players": PLAYERS,
            "game": self.game.compiled.name,
            "config": json.dumps(dataclasses.asdict(self.config), sort_keys=True, default=str),
            "solve_lag": self.mbbr.lag,
        }

    def snapshot(self) -> bytes:
        """The state after the hands so far (``modeling/mbbr/snapshot.py``'s format): each
        position's fit (its classes' keys as stored hands), its prior's fitted mean, the
        response, the share's bank and the evidence against the blueprint; and a solve running
        beside the model, by the copy of the fits it started from (``solving``: its hand and
        each copy's classes; ``solving{p}.*``: the copies' arrays)."""
        mbbr, arrays = self.mbbr, {}
        for p, fit in enumerate(self.posterior.fits):
            fit_keys, state = fit.state()
            keys = [_key_text(cast(LimitObservation, k)) for k in fit_keys]
            arrays.update({f"fit{p}.{name}": a for name, a in state.items()})
            arrays[f"fit{p}.alpha0"] = fit.alpha0
            arrays[f"strategy{p}"] = mbbr.strategies[p]
            arrays[f"keys{p}"] = np.array(keys, dtype=str).reshape(len(keys))
        arrays["shares"] = np.array(mbbr.shares)
        arrays["losses"] = np.array(mbbr.losses)
        arrays["scalars"] = np.array(
            [mbbr.solved_at, mbbr.bank, mbbr.ruled_out, self.posterior.log_odds], dtype=np.float64
        )
        if mbbr.pending is not None:
            classes = [m for m, _ in mbbr.pending.states]
            arrays["solving"] = np.array([mbbr.pending.started_at, *classes], dtype=np.int64)
            for p, (_, state) in enumerate(mbbr.pending.states):
                arrays.update({f"solving{p}.{name}": a for name, a in state.items()})
        meta = {**self._identity(), "hands_observed": self.hands_observed}
        return encode(meta, arrays)

    def restore(self, blob: bytes) -> None:
        """Replace the state with a ``snapshot()``'s; SnapshotError, nothing changed, if it is
        not one of this game and configuration."""
        hands, arrays = decode_snapshot(blob, self._identity())
        fresh = HoldemServedModel(self.game, self.config)
        try:
            fresh._set(hands, arrays)
        except SnapshotError:
            raise
        except (KeyError, TypeError, ValueError, InvalidArgumentError) as exc:
            raise SnapshotError(f"not a hold'em snapshot of this model ({exc})") from None
        self.mbbr = fresh.mbbr

    def _set(self, hands: int, arrays: dict[str, np.ndarray]) -> None:
        mbbr, posterior = self.mbbr, self.posterior
        shape = self.game.blueprint.shape[1:]
        for p, fit in enumerate(posterior.fits):
            alpha0 = take(arrays, f"fit{p}.alpha0", "f8", fit.alpha0.shape)
            fit.alpha0[:] = alpha0  # in place: the fit's kernels read this array
            keys = [_key_of(str(text)) for text in take(arrays, f"keys{p}", "U", (None,))]
            fit.restore(keys, section(arrays, f"fit{p}."))
            mbbr.strategies[p] = take(arrays, f"strategy{p}", "f8", shape)
        mbbr.shares = [float(x) for x in take(arrays, "shares", "f8", (PLAYERS,))]
        mbbr.losses = [float(x) for x in take(arrays, "losses", "f8", (PLAYERS,))]
        solved_at, bank, ruled_out, log_odds = take(arrays, "scalars", "f8", (4,))
        mbbr.solved_at, mbbr.bank = int(solved_at), float(bank)
        mbbr.ruled_out, posterior.log_odds = bool(ruled_out), float(log_odds)
        posterior.hands = hands
        if "solving" in arrays:
            started_at, *classes = (int(x) for x in take(arrays, "solving", "i8", (1 + PLAYERS,)))
            if not solved_at < started_at <= hands < started_at + mbbr.lag:
                raise SnapshotError(f"a solve begun at hand {started_at} is not running at {hands}")
            states = [(m, section(arrays, f"solving{p}.")) for p, m in enumerate(classes)]
            posterior.detached(states, [fit.alpha0 for fit in posterior.fits])  # they fit, or raise
            mbbr.begin_solve(started_at, states)


def canonical_hand(obs: LimitObservation) -> LimitObservation:
    return limit_observation_of(
        obs.position, obs.betting, limit_observation_cards(obs), len(obs.hole)
    )


def _key_text(obs: LimitObservation) -> str:
    return json.dumps([obs.position, obs.betting, list(limit_observation_cards(obs))])


def _key_of(text: str) -> LimitObservation:
    position, betting, cards = json.loads(text)
    return limit_observation_of(position, betting, cards, PLAYERS)
