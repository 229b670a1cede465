"""MBBR's response in 2- and 3-player limit hold'em: a best response in the abstract game to the
posterior means, computed between hands every ``refresh`` hands, played per hand with a share kept
within a safety budget against the blueprint's own play.

- **The response** of our position p is the abstract game's pure best response
  (:func:`~oppmodel.modeling.evaluation.limit.best_response`, backward induction over its sample
  of deals) to the profile with the opponent's posterior mean in its row
  (:class:`~oppmodel.modeling.holdem.posterior.HoldemPosterior`). It plays the real game as the
  blueprint does, by the information set of our real cards (:class:`AbstractSpots`). It is solved
  again every ``refresh`` hands, not at each decision: one solve is a sweep of the 16,584 public
  nodes over every deal of the sample, ~0.1-0.3 s, which per hand would cap the cycle far below
  the 200 hands/s asked.
- **The safety share.** A best response to a model fitted on a sample of deals can lose to the
  blueprint in the real game: the model is wrong, and the response exploits the sample's
  accidents. So, after each solve, the response's loss against the blueprint's own play is
  measured in a second abstract game, the same abstraction on an independent sample of deals
  (``check``): loss = EV(blueprint vs blueprint) - EV(response vs blueprint) for our position.
  Each hand plays the response whole with probability ``share`` and the blueprint whole
  otherwise, one seeded draw per hand, so the expected loss against the blueprint is exactly
  ``share x loss`` (per-hand mixing keeps values linear; mixing per decision would not). A bank
  (modeling/mbbr/safety.py's rule for one guarded hypothesis, the blueprint) gains ``budget``
  (chips per hand: the budget in the game's unit, mbb/h) each hand and books each hand's
  ``share x loss``; the share is the largest in [0, 1] the bank and the hand's budget cover. Against
  the blueprint this loses at most the budget a hand over any number of hands in the check sample's
  expectation, up to that sample's error and the abstraction's. Once the posterior's evidence
  against the blueprint (``HoldemPosterior.log_odds``) reaches ``RULE_OUT_ODDS`` the guard ends and
  the response plays every hand (a real blueprint is ruled out with probability at most 1e-9).
- At each solve the posterior's tilted prior is fitted again (modeling/holdem/tilt.py).
- **Where the abstract game does not compile** (the ACPC 3-player game; ``check`` None, the
  posterior on sets numbered as met) there is no solve: each decision estimates its actions'
  values against the posterior means (:mod:`oppmodel.modeling.holdem.decision`) and deviates
  from the blueprint to the best action only where its gain exceeds its standard error and the
  bank covers the deviation: its loss against the blueprint's own play (the same estimate with
  the opponents playing the blueprint) plus that loss's standard error, booked when it is taken.
  Preflop, where a sample costs most, the loss is estimated on half the round's completions (the
  sample budget: a decision costs at most 1.5 estimates there; the wider standard error is in
  the cost, so the bank only refuses more).
  Once the blueprint is ruled out no loss is estimated or booked. Every ``refresh`` hands the
  tilted prior is refitted.
- For the first ``hands_default`` hands (MBBR's H) the agent plays the blueprint.
- **The solve beside the model** (``lag`` > 0, a served session's: ``served.SOLVE_LAG``): a solve
  due after hand h takes a copy of the fits (:meth:`HoldemPosterior.fit_states`, a few ms) and
  runs on a thread of its own (:class:`Solving`: the refit and the best responses on the copy,
  ~0.3 s), while the model goes on observing hands and answering decisions with the response
  in play. Its result takes effect after hand ``h + lag`` exactly, whenever it was ready (the
  observation of that hand waits for it if not): the refitted prior becomes the live fits' (and
  their ``REFIT_SWEEPS`` steps), the responses and their losses the ones played. So what a
  model plays is a function of the hands it observed alone, not of the machine's speed: a
  reload's replay, a restored snapshot (it carries the copy) and ``acpc-agent --in-process``
  play what the live session does. ``lag`` = 0 (the library's, the field's) solves inline.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import cast

import numpy as np

from oppmodel.modeling.evaluation.limit import best_response, expected_values
from oppmodel.modeling.games.acpc.betting import NUM_ACTIONS
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.holdem.decision import BLUEPRINT, MODEL, DecisionValues, gains
from oppmodel.modeling.holdem.match import HoldemGame, drawn_action
from oppmodel.modeling.holdem.policy import Spot
from oppmodel.modeling.holdem.posterior import HoldemPosterior
from oppmodel.modeling.holdem.sets import LazySets
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.safety import RULE_OUT_ODDS
from oppmodel.modeling.observation import LimitObservation

RULE_OUT_LOG_ODDS = math.log(RULE_OUT_ODDS)  # the models' evidence that ends the blueprint's guard
REFRESH = 100  # hands between two solves of the response
BUDGET = 10.0  # mbb/h: the most the response may lose against the blueprint's play, a hand


class HoldemMBBR:
    """The posterior, its response and the safety share of each of our positions (see the
    module's text)."""

    def __init__(
        self,
        posterior: HoldemPosterior,
        check: LimitGame | None,
        config: MBBRConfig | None = None,
        *,
        refresh: int = REFRESH,
        budget: float = BUDGET,
        lag: int = 0,
        decisions: DecisionValues | None = None,
    ) -> None:
        """``check``: the abstract game on an independent sample of deals (the same abstraction
        and recall, so the same information sets) the safety share is measured in, or None to
        respond at each decision (the module's text; ``decisions``: its estimator, seeded with
        ``config.seed`` if not given); ``budget`` in the game's unit (mbb/h); ``lag``: hands
        from a solve's start to its effect (0: inline; at most ``refresh``)."""
        if not 0 <= lag <= refresh or (check is None and lag):
            raise ValueError(f"lag {lag} is not within 0 and refresh ({refresh}), or not inline")
        self.posterior = posterior
        self.check = check
        self.config = config or MBBRConfig()
        self.refresh = refresh
        self.lag = lag
        self.pending: Solving | None = None  # the solve running beside the model (lag > 0)
        blueprint = posterior.blueprint
        self.decisions: DecisionValues | None = None
        if check is None:
            self.decisions = decisions or DecisionValues(posterior, seed=self.config.seed)
            self.budget_chips = posterior.sets.gamedef.rate_unit.to_chips(budget)
        else:
            self.budget_chips = check.rate_unit.to_chips(budget)
            self._blueprint_ev = expected_values(check, blueprint)
        self.deviations = 0  # decisions that deviated from the blueprint (check None)
        self.refused = 0  # deviations the bank did not cover (check None)
        self.booked = 0.0  # chips the deviations' losses booked (check None)
        n = len(blueprint)
        self.strategies = [blueprint[p] for p in range(n)]  # what the response plays, per p
        self.shares = [0.0] * n  # the response's share of the next hand, per p
        self.losses = [0.0] * n  # chips a hand the response loses to the blueprint (check)
        self.solved_at = -1  # hands seen by the solve whose responses play (its start)
        self.bank = 0.0  # chips: the budget of the hands so far less their booked loss
        self.ruled_out = False  # whether the blueprint hypothesis is ruled out

    @property
    def hands(self) -> int:
        return self.posterior.hands

    def observe(self, obs: LimitObservation) -> None:
        """Add a finished hand; solve the responses again when ``refresh`` hands have passed
        since the last solve began (from hand H on): inline, or beside the model (``lag``), a
        solve begun ``lag`` hands ago taking effect now."""
        p = obs.position
        self.bank += self.budget_chips - self.shares[p] * self.losses[p]
        self.posterior.observe(obs)
        if self.decisions is not None:
            self.decisions.new_hand()
        self.ruled_out = self.ruled_out or self.posterior.log_odds >= RULE_OUT_LOG_ODDS
        pending = self.pending
        if pending is not None and self.hands >= pending.started_at + self.lag:
            self.pending = None
            alpha0, thetas, strategies, losses = pending.result()
            self.posterior.set_prior(alpha0, thetas)
            self._take(strategies, losses, pending.started_at)
        began = self.solved_at if self.pending is None else self.pending.started_at
        due = self.hands >= self.config.hands_default
        if due and (began < 0 or self.hands - began >= self.refresh):
            if self.lag:
                self.begin_solve(self.hands, self.posterior.fit_states())
            else:
                self.solve()
        self._set_shares()

    def solve(self) -> None:
        """The best response of each position to its posterior mean now, and its share (the
        tilted prior refitted alone where responses are made at each decision)."""
        if self.check is None:
            self.posterior.refit()
            self.solved_at = self.hands
            return
        _, _, strategies, losses = solved(self.posterior, self.check, self._blueprint_ev)
        self._take(strategies, losses, self.hands)

    def decide(self, spot: Spot, hole: Sequence[int]) -> np.ndarray:
        """(3,) what to play holding ``hole`` at ``spot`` when responding at each decision
        (``check`` None; the module's text): the blueprint's row, or the deviation's action."""
        assert self.decisions is not None
        sets = cast(LazySets, self.posterior.sets)
        view = self.posterior.spots.views(spot.board, spot.round, np.asarray([hole]))[0]
        row = sets.rows_of(spot.betting)[1][view]
        if self.hands < self.config.hands_default:
            return row
        legal = spot.legal()
        gain, error = gains(self.decisions.values(spot, hole, MODEL), row, legal)
        if np.isnan(gain[legal]).any():  # the models give the opponents' moves no chance
            return row
        best = int(np.argmax(np.where(legal, gain, -np.inf)))
        if not gain[best] > error[best] or row[best] >= 1.0:
            return row
        cost = 0.0
        if not self.ruled_out:
            boards = self.decisions.boards if spot.round else max(2, self.decisions.boards // 2)
            estimate = self.decisions.values(spot, hole, BLUEPRINT, boards)
            loss, loss_error = gains(estimate, row, legal)
            if not np.isnan(loss[best]):  # NaN: the blueprint could not have made these moves
                cost = max(loss_error[best] - loss[best], 0.0)
            if cost > self.bank:
                self.refused += 1
                return row
        self.bank -= cost
        self.booked += cost
        self.deviations += 1
        return np.eye(NUM_ACTIONS)[best]

    def begin_solve(self, started_at: int, states: list[tuple[int, dict[str, np.ndarray]]]) -> None:
        """Start, on a thread of its own, the solve of the fits at ``states``: the posterior's
        ``fit_states()`` after hand ``started_at`` (now, or a restored snapshot's solve); the
        module's text. The prior is the fits' now: none changes while a solve runs."""
        alpha0 = [fit.alpha0.copy() for fit in self.posterior.fits]
        args = (self.posterior, states, alpha0, self.check, self._blueprint_ev)
        self.pending = Solving(started_at, states, _solved_detached, *args)

    def _take(self, strategies: list[np.ndarray], losses: list[float], solved_at: int) -> None:
        self.strategies, self.losses = list(strategies), list(losses)
        self.solved_at = solved_at
        self._set_shares()

    def _set_shares(self) -> None:
        """Each position's share of the next hand: none before the first solve, all once the
        blueprint is ruled out, else the largest the bank and this hand's budget cover."""
        for p, loss in enumerate(self.losses):
            if self.solved_at < 0:
                self.shares[p] = 0.0
            elif self.ruled_out or loss <= 0.0:
                self.shares[p] = 1.0
            else:
                self.shares[p] = min(1.0, max(self.bank + self.budget_chips, 0.0) / loss)

    def row(self, spot: Spot, hole: Sequence[int], respond: bool) -> np.ndarray:
        """(3,) what to play holding ``hole`` at ``spot``: the response's row if ``respond``,
        else the blueprint's."""
        p = spot.position
        infoset = int(
            self.posterior.spots.infosets(
                spot.betting.betting, spot.board, np.asarray([hole], dtype=np.int64)
            )[0]
        )
        table = self.strategies[p] if respond else self.posterior.blueprint[p]
        return table[infoset]


# the refitted prior's parameters and situations' tilts, the responses and their losses
Solution = tuple[list[np.ndarray], list[list[np.ndarray | None]], list[np.ndarray], list[float]]


def solved(posterior: HoldemPosterior, check: LimitGame, blueprint_ev: np.ndarray) -> Solution:
    """Refit ``posterior``'s prior (in place) and solve each position's best response to its
    posterior mean: the new prior's parameters and tilts (per position), the responses and their
    losses against the blueprint's own play in ``check`` (chips a hand; ``blueprint_ev``: the
    blueprint's values there)."""
    posterior.refit()
    blueprint = posterior.blueprint
    game = posterior.spots.game
    strategies, losses = [], []
    for p in range(game.num_players):
        strategy, _ = best_response(game, posterior.models_profile(p), p)
        against = blueprint.copy()
        against[p] = strategy
        losses.append(float(blueprint_ev[p] - expected_values(check, against)[p]))
        strategies.append(strategy)
    alpha0 = [fit.alpha0.copy() for fit in posterior.fits]
    return alpha0, [list(row) for row in posterior.thetas], strategies, losses


def _solved_detached(
    posterior: HoldemPosterior,
    states: list[tuple[int, dict[str, np.ndarray]]],
    alpha0: list[np.ndarray],
    check: LimitGame,
    blueprint_ev: np.ndarray,
) -> Solution:
    """:func:`solved` of ``posterior.detached(states, alpha0)``: on the solve's thread, so that
    the model's own thread only copies the fits' arrays (a new fit costs ~5-30 ms more)."""
    return solved(posterior.detached(states, alpha0), check, blueprint_ev)


class Solving:
    """``solve(*args)`` running on a thread of its own, begun after hand ``started_at`` from the
    fits at ``states`` (what a snapshot keeps of it)."""

    def __init__(
        self,
        started_at: int,
        states: list[tuple[int, dict[str, np.ndarray]]],
        solve: Callable[..., Solution],
        *args: object,
    ) -> None:
        self.started_at = started_at
        self.states = states
        self.future: Future[Solution] = Future()
        thread = threading.Thread(target=self._run, args=(solve, args), name="holdem-solve")
        thread.daemon = True  # a process may end with a solve running: its result is not needed
        thread.start()

    def _run(self, solve: Callable[..., Solution], args: tuple[object, ...]) -> None:
        try:
            self.future.set_result(solve(*args))
        except BaseException as exc:  # raised by ``result()``, in the model's observe
            self.future.set_exception(exc)

    def result(self) -> Solution:
        """The solution, once the thread has it."""
        return self.future.result()


class HoldemMBBRAgent:
    """MBBR as an agent of the hold'em match engine
    (:class:`~oppmodel.modeling.holdem.match.PolicyAgent`'s interface): one seeded draw per hand
    for the safety share, one per decision for the action."""

    def __init__(self, name: str, model: HoldemMBBR, seed: int) -> None:
        self.name = name
        self.model = model
        self.rng = np.random.default_rng(seed)
        self._respond: bool | None = None  # this hand's draw, made at its first decision
        self.responded = 0  # hands the response played

    def begin_match(self, game: HoldemGame, seat: int, names: Sequence[str]) -> None:
        """Nothing to set: the model learns from the hands."""

    def act(self, spot: Spot, hole: Sequence[int]) -> int:
        """0 fold, 1 call, 2 raise."""
        model = self.model
        if model.decisions is not None:
            return drawn_action(model.decide(spot, hole), spot, self.rng)
        if self._respond is None:
            self._respond = bool(self.rng.random() < model.shares[spot.position])
        return drawn_action(model.row(spot, hole, self._respond), spot, self.rng)

    def end_hand(self, obs: LimitObservation) -> None:
        """Learn from the hand, and draw the next hand's share afresh."""
        self.responded += bool(self._respond)
        self.model.observe(obs)
        self._respond = None
