"""3-player limit hold'em in the service: the game whose abstract game does not compile (the ACPC
``holdem3p``: 23.9 million public nodes), served with the model the hold'em field plays and
``oppmodel replay`` scores (:func:`~oppmodel.modeling.holdem.served.lazy_holdem_mbbr`).

What differs from 2-player hold'em's :class:`~oppmodel.modeling.holdem.served.HoldemServed`:

- **Sets numbered as met, per session.** Each session's posterior numbers the abstract game's
  information sets as its hands meet them (:class:`~oppmodel.modeling.holdem.sets.LazySets`), so
  there is no game-wide index of sets: GetModel names the sets the session has numbered
  (``OpponentInsight.names``: ``"<view>:<betting>"``, the blueprint's keys), and a decision's
  ``infoset`` is the view of our cards in its round, named with its betting
  (:meth:`LazyHoldemServed.decision_string`).
- **The response is made at each decision** (``HoldemMBBR.decide``): GetAction looks the line up
  where the model is (``ModelHost.decide``) and may deviate from the blueprint within the
  safety bank; GetResponse (a whole response table) is refused naming ``kind``, and GetModels
  answers the models alone (``response_table``). A decision's
  samples are drawn from a generator seeded by the session's seed, the hands observed, our
  position and the betting, so a decision is a function of the hands observed and the decisions
  asked before it in the session (their deviations book the bank), in any process.
- **Snapshots** carry the numbering (the bettings of the numbered nodes, in order), each fit's
  classes, prior parameters and folded counts (modeling/holdem/window.py), the tilts of the last
  refit, the counts of the nodes a renumbering dropped, kept whole and archived (the numbering's
  bound, ``HoldemPosterior.refit``), the bank and the guard's evidence; a restore numbers the same
  bettings in the same order, in arrays of the same capacity, and so gets the same indices. A
  reload replays the hands after the snapshot without their decisions: what those decisions
  booked is not booked again (the bank of a reload is that much higher; at most the hands since
  the snapshot).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import zlib
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS, HandState
from oppmodel.modeling.games.acpc.gamedef import GameDef, read_game_def
from oppmodel.modeling.games.acpc.holdem_abstract import view_strings
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.interface import (
    Decision,
    Hand,
    HandKey,
    KuhnFields,
    KuhnInfoState,
    ServedGame,
    ServedModel,
    read_matchstate,
)
from oppmodel.modeling.holdem.blueprint import range_views
from oppmodel.modeling.holdem.policy import Spot
from oppmodel.modeling.holdem.posterior import cards_of
from oppmodel.modeling.holdem.response import HoldemMBBR
from oppmodel.modeling.holdem.served import (
    HoldemRules,
    canonical_hand,
    lazy_holdem_mbbr,
)
from oppmodel.modeling.holdem.sets import CARD_INDEX, FIRST_CAPACITY, LazySets
from oppmodel.modeling.holdem.strength import hole_rows
from oppmodel.modeling.holdem.styles import bundled_blueprint
from oppmodel.modeling.holdem.tilt import Archive, Dropped
from oppmodel.modeling.mbbr.base import MBBRModel, OpponentInsight
from oppmodel.modeling.mbbr.config import MBBRConfig, Response
from oppmodel.modeling.mbbr.snapshot import SnapshotError, decode_snapshot, encode, section, take
from oppmodel.modeling.observation import (
    LimitObservation,
    limit_observation_cards,
    limit_observation_of,
    validate_rules_observation,
)

SNAPSHOT_POSTERIOR = "holdem-lazy-dirichlet"  # the snapshot header's posterior
NO_TABLE = (
    "3-player hold'em has no response table: its abstract game (23.9 million public nodes) does "
    "not compile, so no whole response is solved; the response is made at each decision "
    "(GetAction), and GetModels answers the models alone"
)


class LazyRules:
    """The rules of a game too large to compile, as the service reads a compiled game's name,
    size and positions (``ServedGame.compiled`` and ``names``): no game-wide sets."""

    num_actions = 3
    num_infosets = 0  # sets are numbered per session (the module's text)

    def __init__(self, short: str, gamedef: GameDef) -> None:
        self.name = short
        self.gamedef = gamedef
        self.num_players = gamedef.num_players
        self.rate_unit = gamedef.rate_unit

    def check_position(self, position: int, field: str = "position") -> None:
        if not 0 <= position < self.num_players:
            raise InvalidArgumentError(field, f"{position} not in 0..{self.num_players - 1}")

    def infosets(self, position: int) -> Sequence[int]:
        return ()

    def infoset_string(self, position: int, index: int) -> str:
        raise InvalidArgumentError("infostate", "3-player hold'em names a set with its betting")


@functools.cache  # per game: one object, so caches keyed by it hit
def lazy_holdem_served(short: str) -> LazyHoldemServed:
    """The served game of bundled hold'em rules whose abstract game does not compile."""
    return LazyHoldemServed(short)


class LazyHoldemServed(HoldemRules, ServedGame):
    """3-player hold'em served (the module's text)."""

    runs_inline = False  # a hand's update is ~10 ms, a decision ~80: never on the event loop
    response_table = False  # the response is made at each decision (the module's text)

    def __init__(self, short: str) -> None:
        self.short = short
        self.gamedef = read_game_def(short)
        self.config = bundled_blueprint(short).config
        rules = LazyRules(short, self.gamedef)
        super().__init__(cast(LimitGame, rules), rules)

    def field_observation(self, fields: KuhnFields) -> Hand:
        raise InvalidArgumentError("observation.matchstate", f"is required ({self.name})")

    def field_decision(self, state: KuhnInfoState | None) -> Decision:
        raise InvalidArgumentError("matchstate", f"is required ({self.name})")

    def matchstate_observation(self, line: str) -> Hand:
        field = "observation.matchstate"
        state = read_matchstate(self.gamedef, line, field)
        obs = LimitObservation(
            state.position, state.betting, tuple(h or None for h in state.hole), state.board
        )
        try:
            validate_rules_observation(self.gamedef, CARD_INDEX, obs)
        except InvalidArgumentError as exc:
            raise type(exc)(field, str(exc)) from None
        return obs

    def matchstate_decision(self, line: str) -> Decision:
        return self.read_decision(line)[0]

    def read_decision(self, line: str) -> tuple[Decision, Spot, list[int]]:
        """A MATCHSTATE line of our decision: the decision (its ``infoset`` the view of our cards
        in the round), its spot and our hole cards; errors name ``matchstate``."""
        state = read_matchstate(self.gamedef, line, "matchstate")
        try:
            betting = HandState.from_betting(self.gamedef, state.betting).state
            if betting.player != state.position:
                to_act = betting.player
                who = "the hand is over" if to_act < 0 else f"position {to_act} is to act"
                raise InvalidArgumentError(
                    "matchstate", f"{state.betting!r}: {who}, not position {state.position}"
                )
            hole = cards_of(state.hole[state.position])
            if not hole:
                raise InvalidArgumentError("matchstate", "our own hole cards are missing")
            spot = Spot(self.gamedef, tuple(cards_of("".join(state.board))), betting)
            blueprint = bundled_blueprint(self.short)
            holes = hole_rows(np.array([hole], dtype=np.int64))
            view = range_views(
                self.config, blueprint.cards, blueprint.flops, spot.board, spot.round, holes
            )[0]
        except InvalidArgumentError as exc:
            message = str(exc).removeprefix(f"{exc.field}: ")
            raise InvalidArgumentError("matchstate", message) from None
        return Decision(state.position, int(view), state.betting), spot, hole

    def decision_string(self, decision: Decision) -> str:
        round_ = decision.betting.count("/")
        return f"{view_strings(self.config, round_)[decision.infoset]}:{decision.betting}"

    def action_letter(self, betting: str, action: int) -> str:
        return ACTION_LETTERS[action]

    def hand_key(self, hand: Hand) -> HandKey:
        obs = cast(LimitObservation, hand)
        return (obs.position, obs.betting, limit_observation_cards(obs))

    def hand_of_key(self, position: int, betting: str, cards: Sequence[object]) -> Hand:
        text = tuple(None if c is None else str(c) for c in cards)
        return limit_observation_of(position, betting, text, self.num_players)

    def _new_model(self, config: MBBRConfig) -> ServedModel:
        return cast(ServedModel, LazyHoldemServedModel(self, config))

    def compiled_profile(
        self, profile: np.ndarray | None, solved: np.ndarray | None
    ) -> np.ndarray | None:
        raise AssertionError("3-player hold'em has no compiled profiles")

    def served_model(self, model: MBBRModel) -> ServedModel:
        raise AssertionError("3-player hold'em builds its own model (build_model)")

    def winnings(self, hand: Hand) -> float:
        obs = cast(LimitObservation, hand)
        state = HandState.from_betting(self.gamedef, obs.betting)
        holes = [h or "" for h in obs.hole]
        return float(state.payoffs(holes, obs.board)[obs.position])


class LazyHoldemServedModel:
    """``lazy_holdem_mbbr``'s model as a session's (``ServedModel``; the module's text)."""

    def __init__(
        self,
        game: LazyHoldemServed,
        config: MBBRConfig,
        numbered: Sequence[str] = (),
        capacity: int = FIRST_CAPACITY,
    ) -> None:
        """``numbered``: the bettings of the nodes to number first, in order, in arrays of
        ``capacity`` sets (a snapshot's: a renumbering may have shrunk them)."""
        self.game = game
        self.config = config
        budget = config.safety_budget
        self.mbbr: HoldemMBBR = lazy_holdem_mbbr(
            game.short, config, numbered=numbered, budget=budget, capacity=capacity
        )

    @property
    def hands_observed(self) -> int:
        return self.mbbr.hands

    def observe(self, hand: Hand) -> None:
        self.mbbr.observe(canonical_hand(cast(LimitObservation, hand)))

    def matchstate_action(self, line: str) -> tuple[Decision, np.ndarray]:
        """Our decision of a MATCHSTATE line and the row played there (``HoldemMBBR.decide``,
        its samples seeded by the session's seed, the hands, our position and the betting)."""
        decision, spot, hole = self.game.read_decision(line)
        decisions = self.mbbr.decisions
        assert decisions is not None  # the lazy model decides at each decision
        key = [self.config.seed, self.hands_observed, decision.position]
        decisions.rng = np.random.default_rng([*key, zlib.crc32(decision.betting.encode())])
        return decision, np.asarray(self.mbbr.decide(spot, hole), dtype=np.float64).copy()

    def action_probabilities(self, our_position: int, infoset: int) -> np.ndarray:
        raise InvalidArgumentError("matchstate", "3-player hold'em decides by MATCHSTATE line")

    def opponent_model(self, our_position: int, opponent_position: int) -> tuple[np.ndarray, float]:
        insight = self.opponent_insight(our_position, opponent_position)
        return insight.model, insight.spread

    def opponent_insight(self, our_position: int, opponent_position: int) -> OpponentInsight:
        """The opponent's posterior mean on the sets this session has numbered at its decision
        nodes, named ``"<view>:<betting>"`` (``names``)."""
        rules = self.game.names
        rules.check_position(our_position, "our_position")
        rules.check_position(opponent_position, "opponent_position")
        if opponent_position == our_position:
            raise InvalidArgumentError("opponent_position", "is our own position")
        posterior = self.mbbr.posterior
        sets = cast(LazySets, posterior.sets)
        d = posterior.seats[our_position].index(opponent_position)
        fit = posterior.fits[our_position]
        names = []
        for betting in sets.bettings:
            base, round_, player = sets.node(betting)
            if player == opponent_position:
                views = view_strings(self.game.config, round_)
                names += [(base + v, f"{view}:{betting}") for v, view in enumerate(views)]
        prior = fit.alpha0[d] - posterior.folded[our_position][d]
        prior = prior / prior.sum(axis=1, keepdims=True).clip(min=1e-300)
        concentration = fit.concentration(d + 1)
        rows = [i for i, _ in names]
        mbbr = self.mbbr
        return OpponentInsight(
            model=posterior.models_profile(our_position)[opponent_position].copy(),
            spread=float(concentration[rows].min()) if rows else 0.0,
            prior=prior,
            concentration=concentration,
            run_start=0,
            safety_bankroll=math.inf if mbbr.ruled_out else mbbr.bank + mbbr.budget_chips,
            names=tuple(names),
        )

    def response(
        self, our_position: int, kind: Response | str | None = None
    ) -> tuple[np.ndarray, float]:
        raise InvalidArgumentError("kind", NO_TABLE)

    def played(self, our_position: int) -> tuple[np.ndarray, float]:
        raise InvalidArgumentError("kind", NO_TABLE)

    def opponent_counts(self) -> np.ndarray:
        posterior = self.mbbr.posterior
        counts = np.zeros_like(posterior.blueprint)
        for p, fit in enumerate(posterior.fits):
            counts[posterior.seats[p]] += fit.expected + posterior.folded[p]
        return counts

    def nbytes(self) -> int:
        posterior = self.mbbr.posterior
        sets = cast(LazySets, posterior.sets)
        arrays = [sets.legal_mask, sets.blueprint, sets.situation, posterior.blueprint]
        arrays += [posterior.base, *posterior.folded]
        arrays += [a for row in posterior.archives for archive in row for a in archive]
        kept = [
            a for row in posterior.dropped for dropped in row for a in dropped.arrays().values()
        ]
        arrays += kept
        return sum(fit.nbytes() for fit in posterior.fits) + sum(a.nbytes for a in arrays)

    # -- snapshots --------------------------------------------------------------------------------
    def _identity(self) -> dict[str, Any]:
        return {
            "posterior": SNAPSHOT_POSTERIOR,
            "num_players": self.game.num_players,
            "game": self.game.name,
            "config": json.dumps(dataclasses.asdict(self.config), sort_keys=True, default=str),
            "window": self.mbbr.posterior.window,
        }

    def snapshot(self) -> bytes:
        """The state after the hands so far (the module's text)."""
        mbbr = self.mbbr
        posterior = mbbr.posterior
        sets = cast(LazySets, posterior.sets)
        arrays = {"bettings": np.array(sets.bettings, dtype=str).reshape(len(sets.bettings))}
        for p, fit in enumerate(posterior.fits):
            fit_keys, state = fit.state()
            keys = [_key_text(k) for k in fit_keys]
            arrays.update({f"fit{p}.{name}": a for name, a in state.items()})
            arrays[f"alpha0_{p}"] = fit.alpha0
            arrays[f"folded{p}"] = posterior.folded[p]
            arrays[f"keys{p}"] = np.array(keys, dtype=str).reshape(len(keys))
            for d, theta in enumerate(posterior.thetas[p]):
                if theta is not None:
                    arrays[f"theta{p}.{d}"] = theta
            for d, archive in enumerate(posterior.archives[p]):
                arrays.update({f"archive{p}.{d}.{k}": a for k, a in archive._asdict().items()})
                kept = posterior.dropped[p][d].arrays()
                arrays.update({f"dropped{p}.{d}.{k}": a for k, a in kept.items()})
        scalars = [mbbr.solved_at, mbbr.bank, mbbr.ruled_out, posterior.log_odds, mbbr.booked]
        arrays["scalars"] = np.array(scalars, dtype=np.float64)
        arrays["counters"] = np.array([mbbr.deviations, mbbr.refused], dtype=np.int64)
        return encode({**self._identity(), "hands_observed": self.hands_observed}, arrays)

    def restore(self, blob: bytes) -> None:
        """Replace the state with a ``snapshot()``'s; SnapshotError, nothing changed, if it is
        not one of this game and configuration."""
        hands, arrays = decode_snapshot(blob, self._identity())
        try:
            bettings = [str(b) for b in take(arrays, "bettings", "U", (None,))]
            capacity = take(arrays, "alpha0_0", "f8", (None, None, 3)).shape[1]
            fresh = LazyHoldemServedModel(self.game, self.config, bettings, capacity)
            fresh._set(hands, arrays)
        except SnapshotError:
            raise
        except (KeyError, TypeError, ValueError, InvalidArgumentError) as exc:
            raise SnapshotError(f"not a 3-player hold'em snapshot of this model ({exc})") from None
        self.mbbr = fresh.mbbr

    def _set(self, hands: int, arrays: dict[str, np.ndarray]) -> None:
        mbbr, posterior = self.mbbr, self.mbbr.posterior
        posterior.models_profile(0)  # the arrays at the numbering's capacity
        for p, fit in enumerate(posterior.fits):
            fit.alpha0[:] = take(arrays, f"alpha0_{p}", "f8", fit.alpha0.shape)  # in place
            posterior.folded[p][:] = take(arrays, f"folded{p}", "f8", fit.alpha0.shape)
            texts = take(arrays, f"keys{p}", "U", (None,))
            keys = [_key_of(str(text), self.game.num_players) for text in texts]
            fit.restore(keys, section(arrays, f"fit{p}."))
            posterior.thetas[p] = [arrays.get(f"theta{p}.{d}") for d in range(len(fit.seats))]
            for d in range(len(fit.seats)):
                name = f"archive{p}.{d}."
                if f"{name}counts" in arrays:  # none in a snapshot older than the sets' bound
                    counts = take(arrays, f"{name}counts", "f8", (None, 3))
                    posterior.archives[p][d] = Archive(
                        take(arrays, f"{name}log_base", "f8", (len(counts), 3)),
                        counts,
                        take(arrays, f"{name}situation", "i8", (len(counts),)),
                    )
                if f"dropped{p}.{d}.starts" in arrays:  # none in a snapshot older than them
                    posterior.dropped[p][d] = Dropped.of_arrays(section(arrays, f"dropped{p}.{d}."))
        solved_at, bank, ruled_out, log_odds, booked = take(arrays, "scalars", "f8", (5,))
        mbbr.solved_at, mbbr.bank, mbbr.booked = int(solved_at), float(bank), float(booked)
        mbbr.ruled_out, posterior.log_odds = bool(ruled_out), float(log_odds)
        mbbr.deviations, mbbr.refused = (int(x) for x in take(arrays, "counters", "i8", (2,)))
        posterior.hands = hands


def _key_text(key: object) -> str:
    """A fit's class key as text: an observation, or (observation, opponent offset) for a class
    per opponent (``HoldemPosterior.observe``)."""
    obs, d = key if isinstance(key, tuple) else (key, 0)
    obs = cast(LimitObservation, obs)
    return json.dumps([obs.position, obs.betting, list(limit_observation_cards(obs)), d])


def _key_of(text: str, players: int) -> object:
    position, betting, cards, d = json.loads(text)
    obs = limit_observation_of(position, betting, cards, players)
    return (obs, d) if d else obs
