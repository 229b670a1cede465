"""Conversion between the protobuf messages of ``oppmodel.v1`` and the domain types.

Every conversion from a request validates as it goes and raises a domain error whose field is the
request's field path (``config.mbbr.k``, ``observation.revealed[1].card``, ``matchstate``), so the
caller learns exactly what to fix; nothing is changed by a request that fails here.

A MATCHSTATE line (``GetActionRequest.matchstate``) is read by the one MATCHSTATE parser,
:mod:`oppmodel.modeling.games.acpc.matchstate`, against the ACPC definition of the session's Kuhn
game (the bundled ``kuhn<n>p`` file: the highest n + 1 ranks of spades, so in 3-player Kuhn
``Js Qs Ks As`` are cards 0..3); the viewer's own card must be shown and be a card of that deck.
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError, InvalidStrategyError
from oppmodel.modeling.games.acpc.gamedef import GameDef, read_game_def
from oppmodel.modeling.games.acpc.matchstate import parse_matchstate
from oppmodel.modeling.games.kuhn import BET, PASS, KuhnGame, kuhn_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import HandObservation, validate_observation
from oppmodel.modeling.strategy import strategy_from_dict
from oppmodel.server.sessions import ActionChoice, SessionInfo, SessionSpec
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1_enums import POSTERIOR, PRIOR, RESPONSE_KIND, UNSPECIFIED, EnumNames

_GAME_RE = re.compile(r"kuhn_poker(?:\(players=([0-9]+)\))?")
_CONFIG_FIELDS = {"seed": "config.seed"}


def renamed(exc: InvalidArgumentError, field: str) -> InvalidArgumentError:
    """The same error class and message, reported against ``field`` instead."""
    message = str(exc)
    prefix = f"{exc.field}: "
    if message.startswith(prefix):
        message = message[len(prefix) :]
    return type(exc)(field, message)


def _choice(table: EnumNames, value: int, field: str, *, unset: str | None) -> str | None:
    """The domain name of an enum field's value, ``unset`` for UNSPECIFIED; InvalidArgumentError
    naming ``field`` for a value the table does not know."""
    if value == UNSPECIFIED:
        return unset
    name = table.name(value)
    if name is None:
        raise InvalidArgumentError(field, f"unknown value {value}")
    return name


# -- games and information states -----------------------------------------------------------------
def parse_game(name: str) -> tuple[str, KuhnGame]:
    """(canonical name, game) of an OpenSpiel-style game string."""
    match = _GAME_RE.fullmatch(name.strip())
    if match is None:
        raise InvalidArgumentError(
            "config.game", f"unknown game {name!r}; try 'kuhn_poker(players=3)'"
        )
    players = int(match.group(1) or 2)
    try:
        game = kuhn_game(players)
    except InvalidArgumentError as exc:
        raise renamed(exc, "config.game") from None
    return f"kuhn_poker(players={players})", game


@cache
def position_infosets(game: KuhnGame, position: int) -> tuple[tuple[int, str], ...]:
    """(index, OpenSpiel string) of every information set of ``position``, sorted by index."""
    return tuple((i, game.infoset_string(position, i)) for i in game.infosets(position))


def policy_to_proto(game: KuhnGame, position: int, table: np.ndarray) -> list[pb.InfosetPolicy]:
    """One InfosetPolicy per information set of ``position`` from a (num_infosets, 2) table."""
    return [
        pb.InfosetPolicy(infostate=name, probabilities=table[index].tolist())
        for index, name in position_infosets(game, position)
    ]


# -- sessions --------------------------------------------------------------------------------------
def _labels(config: pb.SessionConfig, num_players: int, max_length: int) -> tuple[str, ...]:
    labels = (config.our_label, *config.opponent_labels)
    if len(config.opponent_labels) != num_players - 1:
        raise InvalidArgumentError(
            "config.opponent_labels",
            f"{num_players}-player game needs {num_players - 1} labels, "
            f"got {len(config.opponent_labels)}",
        )
    for i, label in enumerate(labels):
        name = "config.our_label" if i == 0 else f"config.opponent_labels[{i - 1}]"
        if not label or len(label) > max_length:
            raise InvalidArgumentError(name, f"must be 1..{max_length} characters")
        if label in labels[:i]:
            raise InvalidArgumentError(name, f"{label!r} is used twice")
    return tuple(config.opponent_labels)


def _prior_mean(
    game: KuhnGame, strategies: list[pb.PositionStrategy]
) -> tuple[tuple[tuple[float, ...], ...], ...]:
    """Validate a supplied prior mean into a (num_players, num_infosets, 2) nested tuple."""
    table = np.full((game.num_players, game.num_infosets, game.num_actions), 0.5)
    seen_positions: set[int] = set()
    for i, strategy in enumerate(strategies):
        where = f"config.mbbr.prior_mean[{i}]"
        position = strategy.position
        game.check_position(position, f"{where}.position")
        if position in seen_positions:
            raise InvalidArgumentError(f"{where}.position", f"position {position} given twice")
        seen_positions.add(position)
        entries: dict[str, list[float]] = {}
        for j, infoset in enumerate(strategy.infosets):
            if infoset.infostate in entries:
                raise InvalidArgumentError(
                    f"{where}.infosets[{j}].infostate", f"{infoset.infostate!r} given twice"
                )
            probabilities = list(infoset.probabilities)
            if not all(math.isfinite(x) for x in probabilities):
                raise InvalidStrategyError(
                    f"{where}.infosets[{j}].probabilities",
                    f"contains NaN or infinity: {probabilities}",
                )
            entries[infoset.infostate] = probabilities
        try:
            table[position] = strategy_from_dict(game, position, entries, f"{where}.infosets")
        except InvalidArgumentError as exc:
            if exc.field.startswith(where):
                raise
            raise renamed(exc, f"{where}.infosets") from None
    if len(seen_positions) != game.num_players:
        raise InvalidArgumentError("config.mbbr.prior_mean", "must give every position")
    return tuple(tuple(tuple(float(x) for x in row) for row in pos) for pos in table)


def spec_from_proto(config: pb.SessionConfig, *, max_label_length: int) -> SessionSpec:
    """Validate a SessionConfig into a SessionSpec (MBBR defaults fill unset parameters)."""
    game_name, game = parse_game(config.game)
    opponent_labels = _labels(config, game.num_players, max_label_length)
    if config.method not in (pb.METHOD_UNSPECIFIED, pb.METHOD_MBBR):
        raise InvalidArgumentError("config.method", f"unsupported method {config.method}")
    params = config.mbbr
    kwargs: dict[str, Any] = {"seed": int(config.seed)}  # fields chosen at run time
    for name in ("epsilon", "k", "hands_default", "eta", "safety_budget", "change_hazard"):
        if params.HasField(name):
            kwargs[name] = getattr(params, name)
    kwargs["prior"] = _choice(PRIOR, params.prior, "config.mbbr.prior", unset="informed")
    kwargs["response"] = _choice(
        RESPONSE_KIND, params.response, "config.mbbr.response", unset="mean"
    )
    posterior = _choice(POSTERIOR, params.posterior, "config.mbbr.posterior", unset=None)
    if posterior is not None:  # unset: MBBRConfig's default (dirichlet)
        kwargs["posterior"] = posterior
    mbbr = MBBRConfig(**kwargs)
    try:
        mbbr.validate()
    except InvalidArgumentError as exc:
        raise renamed(exc, _CONFIG_FIELDS.get(exc.field, f"config.mbbr.{exc.field}")) from None
    prior_mean = None
    if params.prior_mean:
        if mbbr.prior == "uninformed":
            raise InvalidArgumentError(
                "config.mbbr.prior_mean", "cannot be used with an uninformed prior"
            )
        prior_mean = _prior_mean(game, list(params.prior_mean))
    return SessionSpec(
        game=game_name,
        num_players=game.num_players,
        our_label=config.our_label,
        opponent_labels=opponent_labels,
        config=mbbr,
        prior_mean=prior_mean,
    )


def _strategy_to_proto(game: KuhnGame, table: tuple) -> list[pb.PositionStrategy]:
    array = np.asarray(table, dtype=np.float64)
    return [
        pb.PositionStrategy(position=p, infosets=policy_to_proto(game, p, array[p]))
        for p in range(game.num_players)
    ]


def session_to_proto(info: SessionInfo) -> pb.Session:
    """The Session message of a session, with every default filled in."""
    spec, cfg = info.spec, info.spec.config
    game = kuhn_game(spec.num_players)
    return pb.Session(
        session_id=info.session_id,
        config=pb.SessionConfig(
            game=spec.game,
            our_label=spec.our_label,
            opponent_labels=list(spec.opponent_labels),
            method=pb.METHOD_MBBR,
            mbbr=pb.MbbrParams(
                epsilon=cfg.epsilon,
                k=cfg.k,
                hands_default=cfg.hands_default,
                eta=cfg.eta,
                prior=PRIOR.values[cfg.prior],
                response=RESPONSE_KIND.values[cfg.response],
                posterior=POSTERIOR.values[cfg.posterior],
                safety_budget=cfg.safety_budget,
                change_hazard=cfg.change_hazard,
                prior_mean=[]
                if spec.prior_mean is None
                else _strategy_to_proto(game, spec.prior_mean),
            ),
            seed=cfg.seed,
        ),
        hands_observed=info.hands_observed,
        created_unix_ms=info.created_unix_ms,
    )


def kind_from_proto(kind: int) -> str | None:
    """'mean', 'bayes', or None for the session default."""
    return _choice(RESPONSE_KIND, kind, "kind", unset=None)


def kind_to_proto(kind: str) -> pb.ResponseKind:
    """The ResponseKind enum value of 'mean' or 'bayes'."""
    return RESPONSE_KIND.values[kind]


# -- observations ----------------------------------------------------------------------------------
def _history(game: KuhnGame, message: pb.Observation | pb.InfoState, prefix: str) -> str:
    which = message.WhichOneof("betting")
    if which is None:
        return ""
    text = getattr(message, which)
    if which == "acpc_betting":
        try:
            return game.acpc_to_history(text)
        except InvalidArgumentError as exc:
            raise renamed(exc, f"{prefix}acpc_betting") from None
    if any(ch not in "pb" for ch in text):
        raise InvalidArgumentError(f"{prefix}history", f"{text!r}: letters must be 'p' or 'b'")
    return text


def observation_from_proto(game: KuhnGame, message: pb.Observation) -> tuple[int, HandObservation]:
    """(sequence, validated HandObservation) of an Observation message."""
    n = game.num_players
    position = message.position
    game.check_position(position, "observation.position")
    if not message.HasField("our_card"):
        raise InvalidArgumentError("observation.our_card", "is required")
    if message.WhichOneof("betting") is None:
        raise InvalidArgumentError("observation.history", "is required (or acpc_betting)")
    history = _history(game, message, "observation.")
    cards: list[int | None] = [None] * n
    cards[position] = message.our_card
    field_of_position = {position: "observation.our_card"}
    for j, revealed in enumerate(message.revealed):
        where = f"observation.revealed[{j}]"
        game.check_position(revealed.position, f"{where}.position")
        if revealed.position in field_of_position:
            raise InvalidArgumentError(
                f"{where}.position",
                f"position {revealed.position} already has a card (ours goes in our_card)",
            )
        cards[revealed.position] = revealed.card
        field_of_position[revealed.position] = f"{where}.card"
    obs = HandObservation(position=position, history=history, cards=tuple(cards))
    try:
        validate_observation(game, obs)
    except InvalidArgumentError as exc:
        raise renamed(exc, _observation_field(exc.field, message, field_of_position)) from None
    return int(message.sequence), obs


def _observation_field(field: str, message: pb.Observation, by_position: dict[int, str]) -> str:
    """The request field that a core validation field ('history', 'cards[2]', ...) refers to."""
    if field == "history":
        return f"observation.{message.WhichOneof('betting')}"
    match = re.fullmatch(r"cards\[([0-9]+)\]", field)
    if match:
        return by_position.get(int(match.group(1)), "observation.revealed")
    if field == "cards":
        return "observation.revealed"
    return f"observation.{field}"


# -- information states ----------------------------------------------------------------------------
@cache
def _acpc_game(num_players: int) -> GameDef:
    """The ACPC game definition of n-player Kuhn."""
    return read_game_def(f"kuhn{num_players}p")


def matchstate_info_state(game: KuhnGame, line: str) -> tuple[int, int, str]:
    """(position, our card, history) of an ACPC MATCHSTATE line; every error names
    ``matchstate``."""
    gamedef = _acpc_game(game.num_players)
    try:
        state, _ = parse_matchstate(gamedef, line.strip())
    except InvalidArgumentError as exc:
        raise type(exc)("matchstate", str(exc)) from None
    ours = state.hole[state.position]
    if ours not in gamedef.deck:
        raise InvalidArgumentError(
            "matchstate",
            f"position {state.position}'s card {ours!r} is not a card of this deck "
            f"({' '.join(gamedef.deck)})",
        )
    return state.position, gamedef.deck.index(ours), game.acpc_to_history(state.betting)


def info_state_from_proto(game: KuhnGame, request: pb.GetActionRequest) -> tuple[int, int, str]:
    """(position, card, history) of a GetActionRequest's information state."""
    which = request.WhichOneof("state")
    if which == "matchstate":
        return matchstate_info_state(game, request.matchstate)
    if which is None:
        raise InvalidArgumentError("info_state", "is required (or matchstate)")
    state = request.info_state
    if not state.HasField("card"):
        raise InvalidArgumentError("info_state.card", "is required")
    return state.position, state.card, _history(game, state, "info_state.")


def action_to_proto(choice: ActionChoice, history: str) -> pb.GetActionResponse:
    """GetActionResponse with the ACPC letter ('c'/'r' unopened, 'f'/'c' facing a bet)."""
    facing_bet = "b" in history
    letters = {PASS: "f" if facing_bet else "c", BET: "c" if facing_bet else "r"}
    return pb.GetActionResponse(
        action=choice.action,
        acpc_action=letters[choice.action],
        probabilities=list(choice.probabilities),
        infostate=choice.infostate,
        default_policy=choice.default_policy,
        hands_observed=choice.hands_observed,
    )
