"""The PerfectInfoService servicer and its proto <-> domain conversions.

Thin, like ``server/servicer.py``: each RPC converts and validates its request (raising domain
errors whose field is the request's field path, e.g. ``observations[2].likelihoods`` or
``position.hands[1]``), calls ``PerfectInfoManager`` (``server/perfect_info_manager.py``) or the
Spades search, and converts the result back. Authentication, metrics and the error table are
shared with the opponent-model service (``oppmodel.server.servicer._rpc`` and
``server/errors.py``).

The prob-max^n query runs ``oppmodel.modeling.perfect_info.spades_search.probmaxn_search`` (paper
000; the rules are those of ``oppmodel.modeling.perfect_info.search.probmaxn``) on the worker pool
with a fresh transposition table, so the answer depends only on the request (and, with a session, on
its learned weights).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError, ResourceExhaustedError, renamed
from oppmodel.modeling.games.spades import bidding
from oppmodel.modeling.games.spades.cards import (
    MAX_HAND_SIZE,
    N_PLAYERS,
    NO_CARD,
    card_str,
    cards_to_mask,
    parse_card,
)
from oppmodel.modeling.games.spades.scoring import MODEL_LABELS, UtilityModel
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.modeling.perfect_info.model_weights import choice_likelihood
from oppmodel.modeling.perfect_info.spades_search import ProbMaxnResult, probmaxn_search
from oppmodel.server.errors import error_details
from oppmodel.server.metrics import Metrics
from oppmodel.server.perfect_info_manager import PerfectInfoInfo, PerfectInfoManager
from oppmodel.server.perfect_info_spec import (
    GibbsConfig,
    OpponentSpec,
    PerfectInfoLimits,
    PerfectInfoSpec,
    check_count,
)
from oppmodel.server.perfect_info_store import Choice
from oppmodel.server.perfect_info_weights import WeightsSummary
from oppmodel.server.servicer import _rpc
from oppmodel.v1 import perfect_info_pb2 as pb
from oppmodel.v1 import perfect_info_pb2_grpc as pb_grpc

DEFAULT_EPSILON = 0.1
DEFAULT_SEARCHER_WEIGHTS = (0.5, 0.5)
_SUM_TOLERANCE = 1e-9


# -- sessions --------------------------------------------------------------------------------------
def spec_from_proto(config: pb.PerfectInfoSessionConfig) -> PerfectInfoSpec:
    """A PerfectInfoSpec with defaults filled in (validated by the manager)."""
    opponents = []
    for o in config.opponents:
        alpha = tuple(o.alpha)
        if not alpha:
            alpha = (1.0,) * len(o.models)
        elif len(alpha) == 1:
            alpha = alpha * len(o.models)
        opponents.append(OpponentSpec(o.label, tuple(o.models), alpha))
    g = config.gibbs
    defaults = GibbsConfig()
    gibbs = GibbsConfig(
        sweeps=g.sweeps if g.HasField("sweeps") else defaults.sweeps,
        burn_in=g.burn_in if g.HasField("burn_in") else defaults.burn_in,
        chains=g.chains if g.HasField("chains") else defaults.chains,
        level=g.level if g.HasField("level") else defaults.level,
    )
    return PerfectInfoSpec(
        game=config.game.strip(), opponents=tuple(opponents), gibbs=gibbs, seed=int(config.seed)
    )


def session_to_proto(info: PerfectInfoInfo) -> pb.PerfectInfoSession:
    """The PerfectInfoSession message, every default filled in."""
    spec = info.spec
    return pb.PerfectInfoSession(
        session_id=info.session_id,
        config=pb.PerfectInfoSessionConfig(
            game=spec.game,
            opponents=[
                pb.OpponentModels(label=o.label, models=list(o.models), alpha=list(o.alpha))
                for o in spec.opponents
            ],
            gibbs=pb.GibbsSettings(
                sweeps=spec.gibbs.sweeps,
                burn_in=spec.gibbs.burn_in,
                chains=spec.gibbs.chains,
                level=spec.gibbs.level,
            ),
            seed=spec.seed,
        ),
        choices_observed=info.choices_observed,
        created_unix_ms=info.created_unix_ms,
    )


# -- choices ---------------------------------------------------------------------------------------
def _finite(values: list[float], where: str) -> None:
    for j, x in enumerate(values):
        if not math.isfinite(x):
            raise InvalidArgumentError(f"{where}[{j}]", f"must be finite, got {x}")


def choice_from_proto(
    spec: PerfectInfoSpec, message: pb.ChoiceObservation, *, k: int, limits: PerfectInfoLimits
) -> tuple[int, Choice]:
    """(sequence, Choice) of the k-th observation of a request; L computed from utilities."""
    where = f"observations[{k}]"
    index = spec.opponent_index(message.opponent, f"{where}.opponent")
    n_models = len(spec.opponents[index].models)
    which = message.WhichOneof("evidence")
    if which is None:
        raise InvalidArgumentError(f"{where}.likelihoods", "is required (or utilities)")
    if which == "likelihoods":
        field = f"{where}.likelihoods"
        values = list(message.likelihoods.values)
        if len(values) != n_models:
            raise InvalidArgumentError(
                field, f"needs {n_models} entries (one per model), got {len(values)}"
            )
        _finite(values, f"{field}.values")
        for j, x in enumerate(values):
            if x < 0:
                raise InvalidArgumentError(f"{field}.values[{j}]", f"must be >= 0, got {x}")
        if not any(x > 0 for x in values):
            raise InvalidArgumentError(field, "all zero: no model can make this choice")
        return int(message.sequence), Choice(index, tuple(float(x) for x in values))
    u = message.utilities
    field = f"{where}.utilities"
    check_count(
        len(u.children), f"{field}.children", limits.max_children, "child", "children per choice"
    )
    for c, child in enumerate(u.children):
        if len(child.values) != n_models:
            raise InvalidArgumentError(
                f"{field}.children[{c}]",
                f"needs {n_models} utilities (one per model), got {len(child.values)}",
            )
        _finite(list(child.values), f"{field}.children[{c}].values")
    if not 0 <= u.chosen < len(u.children):
        raise InvalidArgumentError(
            f"{field}.chosen", f"must be in 0..{len(u.children) - 1}, got {u.chosen}"
        )
    if not 0.0 <= u.epsilon <= 1.0:  # NaN fails too
        raise InvalidArgumentError(f"{field}.epsilon", f"must be in [0, 1], got {u.epsilon}")
    table = np.array([list(child.values) for child in u.children], dtype=np.float64)
    likelihoods = choice_likelihood(table, u.chosen, u.epsilon)
    if not (likelihoods > 0).any():
        raise InvalidArgumentError(
            f"{field}.chosen", "no model can make this choice (every likelihood is 0)"
        )
    return int(message.sequence), Choice(index, tuple(float(x) for x in likelihoods))


def weights_to_proto(s: WeightsSummary) -> pb.ModelWeights:
    """The ModelWeights message of a posterior summary."""
    return pb.ModelWeights(
        opponent=s.opponent,
        models=list(s.models),
        mean=list(s.mean),
        std_error=list(s.std_error),
        lower=list(s.lower),
        upper=list(s.upper),
        level=s.level,
        rhat=list(s.rhat),
        ess=list(s.ess),
        choices=s.choices,
    )


# -- Spades positions ------------------------------------------------------------------------------
def _cards(text: str, field: str) -> list[int]:
    try:
        cards = [parse_card(t) for t in text.split()]
    except InvalidArgumentError as exc:
        raise renamed(exc, field) from None
    seen: set[int] = set()
    for c in cards:
        if c in seen:
            raise InvalidArgumentError(field, f"{card_str(c)} is listed twice")
        seen.add(c)
    return cards


def _seat(value: int, field: str) -> int:
    if not 0 <= value < N_PLAYERS:
        raise InvalidArgumentError(field, f"must be 0, 1 or 2, got {value}")
    return value


def position_from_proto(
    message: pb.SpadesPosition, limits: PerfectInfoLimits
) -> tuple[SpadesState, tuple[int, int, int]]:
    """(validated SpadesState, bids) of a SpadesPosition; bids from the fixed rule if not given."""
    n = N_PLAYERS
    if len(message.hands) != n:
        raise InvalidArgumentError("position.hands", f"needs {n} hands, got {len(message.hands)}")
    hands = [_cards(h, f"position.hands[{p}]") for p, h in enumerate(message.hands)]
    for p, hand in enumerate(hands):
        if len(hand) > limits.max_search_cards:
            raise ResourceExhaustedError(
                f"position.hands[{p}]: at most {limits.max_search_cards} cards per hand are "
                "searched on this server"
            )
    trick = [NO_CARD] * n
    if message.trick:
        if len(message.trick) != n:
            raise InvalidArgumentError(
                "position.trick", f"needs {n} entries (one per seat, '' if none) or none"
            )
        for p, text in enumerate(message.trick):
            cards = _cards(text, f"position.trick[{p}]")
            if len(cards) > 1:
                raise InvalidArgumentError(f"position.trick[{p}]", "one card or '' per seat")
            if cards:
                trick[p] = cards[0]
    tricks = [0] * n
    if message.tricks:
        if len(message.tricks) != n:
            raise InvalidArgumentError("position.tricks", f"needs {n} entries or none")
        tricks = list(message.tricks)
    position = SpadesState(
        hands=tuple(cards_to_mask(h) for h in hands),  # type: ignore[arg-type]
        trick=tuple(trick),  # type: ignore[arg-type]
        leader=_seat(message.leader, "position.leader"),
        turn=_seat(message.turn, "position.turn"),
        tricks=tuple(tricks),  # type: ignore[arg-type]
    )
    try:
        position.validate()
    except InvalidArgumentError as exc:
        raise renamed(exc, f"position.{exc.field}") from None
    if position.is_terminal:
        raise InvalidArgumentError("position", "the hand is over; there is nothing to search")
    if message.bids:
        if len(message.bids) != n or any(not 0 <= b <= MAX_HAND_SIZE for b in message.bids):
            raise InvalidArgumentError(
                "position.bids", f"must be {n} integers in 0..{MAX_HAND_SIZE}"
            )
        bids = tuple(int(b) for b in message.bids)
    else:
        if any(tricks) or position.n_in_trick:
            raise InvalidArgumentError(
                "position.bids", "required once a card has been played (the rule sees full hands)"
            )
        bids = bidding.bids(position.hands)
    return position, bids  # type: ignore[return-value]


def _weight_row(values: list[float], field: str) -> np.ndarray:
    if len(values) != len(UtilityModel):
        raise InvalidArgumentError(field, f"needs (P(MT), P(mOT)), got {len(values)} values")
    if not all(math.isfinite(x) and x >= 0 for x in values):
        raise InvalidArgumentError(field, f"entries must be finite and >= 0, got {values}")
    if abs(sum(values) - 1.0) > _SUM_TOLERANCE:
        raise InvalidArgumentError(field, f"must sum to 1, got {sum(values)}")
    return np.array(values, dtype=np.float64)


def _rows(matrix: np.ndarray) -> list[pb.ModelValues]:
    return [pb.ModelValues(values=row.tolist()) for row in np.asarray(matrix)]


def _move_to_proto(
    result: ProbMaxnResult, weights: np.ndarray, bids: tuple[int, ...]
) -> pb.GetProbMaxnMoveResponse:
    reply = pb.GetProbMaxnMoveResponse(
        mover=result.mover,
        weights=_rows(weights),
        bids=list(bids),
        utility=_rows(result.u),
        u_true=result.u_true,
        moves=[card_str(c) for c in result.moves],
        multiplicities=list(result.multiplicities),
        prob_choice=result.prob_choice.tolist(),
        child_u_true=result.child_true.tolist(),
        n_cards=result.n_cards,
        nodes=result.nodes,
        child_mover_utility=_rows(result.child_u[:, result.mover, :]),
        epsilon=result.eps,
    )
    if result.move is not None:
        reply.move = card_str(result.move)
    return reply


# -- the servicer ----------------------------------------------------------------------------------
class PerfectInfoServicer(pb_grpc.PerfectInfoServiceServicer):
    """Serves perfect-information sessions of a PerfectInfoManager.

    ``owner(context)`` authenticates the caller exactly as the opponent-model service does (it is
    that servicer's method), so both services share tokens and ownership rules.
    """

    def __init__(
        self,
        manager: PerfectInfoManager,
        *,
        metrics: Metrics,
        owner: Callable[[grpc.aio.ServicerContext], str],
    ) -> None:
        self.manager = manager
        self.metrics = metrics
        self.owner = owner
        self.limits = manager.limits

    @_rpc("CreatePerfectInfoSession")
    async def CreatePerfectInfoSession(self, request, context, owner):
        info = await self.manager.create(owner, spec_from_proto(request.config))
        return pb.CreatePerfectInfoSessionResponse(session=session_to_proto(info))

    @_rpc("GetPerfectInfoSession")
    async def GetPerfectInfoSession(self, request, context, owner):
        session = await self.manager.get(owner, request.session_id)
        return pb.GetPerfectInfoSessionResponse(session=session_to_proto(session.info()))

    @_rpc("DeletePerfectInfoSession")
    async def DeletePerfectInfoSession(self, request, context, owner):
        await self.manager.delete(owner, request.session_id)
        return pb.DeletePerfectInfoSessionResponse()

    async def ObserveChoices(
        self, request_iterator: AsyncIterator[pb.ObserveChoicesRequest], context: Any
    ) -> AsyncIterator[pb.ObserveChoicesResponse]:
        """Store each request's choices (all or none), then answer with acks and posteriors."""
        try:
            owner = self.owner(context)
            async for request in request_iterator:
                session = await self.manager.get(owner, request.session_id)
                observations = request.observations
                if not observations:
                    raise InvalidArgumentError("observations", "is empty")
                if len(observations) > self.limits.max_choices_per_message:
                    raise ResourceExhaustedError(
                        f"observations: at most {self.limits.max_choices_per_message} per message"
                    )
                items = [
                    choice_from_proto(session.spec, message, k=k, limits=self.limits)
                    for k, message in enumerate(observations)
                ]
                acks, observed, session = await self.manager.observe(session, items)
                touched = sorted({choice.opponent for _, choice in items})
                weights = [await self.manager.weights(session, i) for i in touched]
                yield pb.ObserveChoicesResponse(
                    session_id=session.session_id,
                    acks=[pb.ChoiceAck(sequence=a.sequence, duplicate=a.duplicate) for a in acks],
                    choices_observed=observed,
                    weights=[weights_to_proto(w) for w in weights],
                )
        except Exception as exc:
            code, message, metadata = error_details(exc)
            self.metrics.count("ObserveChoices", code, None)
            context.set_trailing_metadata(metadata)
            await context.abort(code, message)
        self.metrics.count("ObserveChoices", grpc.StatusCode.OK, None)

    @_rpc("GetModelWeights")
    async def GetModelWeights(self, request, context, owner):
        session = await self.manager.get(owner, request.session_id)
        spec = session.spec
        if request.opponent:
            indices = [spec.opponent_index(request.opponent, "opponent")]
        else:
            indices = list(range(len(spec.opponents)))
        observed = len(session.choices)
        weights = [await self.manager.weights(session, i) for i in indices]
        return pb.GetModelWeightsResponse(
            weights=[weights_to_proto(w) for w in weights], choices_observed=observed
        )

    @_rpc("GetProbMaxnMove")
    async def GetProbMaxnMove(self, request, context, owner):
        position, bids = position_from_proto(request.position, self.limits)
        searcher = _seat(request.searcher, "searcher")
        true_model = request.true_model or UtilityModel.MT.label
        if true_model not in MODEL_LABELS:
            raise InvalidArgumentError("true_model", f"must be one of {MODEL_LABELS}")
        eps = request.epsilon if request.HasField("epsilon") else DEFAULT_EPSILON
        if not 0.0 <= eps <= 1.0:
            raise InvalidArgumentError("epsilon", f"must be in [0, 1], got {eps}")
        which = request.WhichOneof("weights")
        if which == "given":
            if len(request.given.seats) != N_PLAYERS:
                raise InvalidArgumentError(
                    "given.seats", f"needs {N_PLAYERS} rows, got {len(request.given.seats)}"
                )
            weights = np.stack(
                [
                    _weight_row(list(row.values), f"given.seats[{p}]")
                    for p, row in enumerate(request.given.seats)
                ]
            )
        elif which == "session_id":
            own = (
                _weight_row(list(request.searcher_weights.values), "searcher_weights")
                if request.HasField("searcher_weights")
                else np.array(DEFAULT_SEARCHER_WEIGHTS)
            )
            session = await self.manager.get(owner, request.session_id)
            weights = np.zeros((N_PLAYERS, len(UtilityModel)))
            weights[searcher] = own
            learned = await self.manager.learned_weights(session)
            for i, row in enumerate(learned):
                weights[(searcher + 1 + i) % N_PLAYERS] = row
        else:
            raise InvalidArgumentError("weights", "give session_id (learned) or given")
        result = await self.manager.cpu(
            lambda: probmaxn_search(
                position, bids, me=searcher, true_model=true_model, weights=weights, eps=eps
            )
        )
        return _move_to_proto(result, weights, bids)
