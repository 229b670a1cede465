"""Conversion between the protobuf messages of ``oppmodel.v1`` and the domain types.

Every conversion from a request validates as it goes and raises a domain error whose field is the
request's field path (``config.mbbr.k``, ``observation.revealed[1].card``, ``matchstate``), so the
caller learns exactly what to fix; nothing is changed by a request that fails here.

A session's game (``session_spec.Game``, :mod:`oppmodel.modeling.games.interface`) is Kuhn
("kuhn_poker(players=n)": the compiled ``kuhn<n>p`` in OpenSpiel's conventions) or any ACPC limit
game, named by a bundled short name or given as the text of its definition (never as a path: the
server reads no file a client names). What differs between them (the observation fields it takes,
information-state strings, rows, action letters) the game answers; this module only reads and
writes the messages. A MATCHSTATE line (``Observation.matchstate``,
``GetActionRequest.matchstate``) is read by the one MATCHSTATE parser,
:mod:`oppmodel.modeling.games.acpc.matchstate`, against the game's rules (Kuhn's: the bundled
``kuhn<n>p`` file, the highest n + 1 ranks of spades, so in 3-player Kuhn ``Js Qs Ks As`` are
cards 0..3); the viewer's own cards must be shown and be cards of that deck.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import cache

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError, InvalidStrategyError, renamed
from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES, GAMES_FOLDER, HOLDEM_GAMES
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.interface import Decision, KuhnFields, KuhnInfoState
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel
from oppmodel.modeling.holdem.served import game_short_name, served_limit_game
from oppmodel.modeling.mbbr.base import OpponentInsight
from oppmodel.modeling.population_types import PopulationKind
from oppmodel.server.session_spec import (
    Ack,
    ActionChoice,
    Game,
    Observation,
    SessionInfo,
    SessionSpec,
    StrategyTable,
    game_of,
)
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1_codec import field_path, read_config, write_config
from oppmodel.v1_enums import POPULATION_KIND, RESPONSE_KIND, UNSPECIFIED, EnumNames

_GAME_RE = re.compile(r"kuhn_poker(?:\(players=([0-9]+)\))?")


def _choice(table: EnumNames, value: int, field: str, *, unset: str | None) -> str | None:
    """The domain name of an enum field's value, ``unset`` for UNSPECIFIED; InvalidArgumentError
    naming ``field`` for a value the table does not know."""
    if value == UNSPECIFIED:
        return unset
    name = table.name(value)
    if name is None:
        raise InvalidArgumentError(field, f"unknown value {value}")
    return name


def population_kind(value: int) -> PopulationKind:
    """``FitPopulationRequest.kind`` as the core's kind (unset: types); InvalidArgumentError
    naming ``kind`` for a value the API does not know."""
    name = _choice(POPULATION_KIND, value, "kind", unset=PopulationKind.TYPES.value)
    return PopulationKind(name or PopulationKind.TYPES)


# -- games and information states -----------------------------------------------------------------
def parse_game(name: str) -> tuple[str, Game, str | None]:
    """(canonical name, game, rules text or None for Kuhn) of ``SessionConfig.game``: an
    OpenSpiel-style Kuhn name, a bundled ACPC game's short name, or an ACPC game definition's
    text. Every error names ``config.game``."""
    text = name.strip()
    match = _GAME_RE.fullmatch(text)
    if match is not None:
        players = int(match.group(1) or 2)
        try:
            return f"kuhn_poker(players={players})", kuhn_openspiel(players), None
        except InvalidArgumentError as exc:
            raise renamed(exc, "config.game") from None
    if text.lower() in BUNDLED_GAMES | HOLDEM_GAMES:
        rules = (GAMES_FOLDER / (BUNDLED_GAMES | HOLDEM_GAMES)[text.lower()]).read_text("ascii")
    elif "\n" in text:
        rules = text
    else:
        raise InvalidArgumentError(
            "config.game",
            f"unknown game {name[:64]!r}; try 'kuhn_poker(players=3)', a bundled ACPC game "
            f"({', '.join(BUNDLED_GAMES | HOLDEM_GAMES)}) or the text of an ACPC limit game "
            "definition",
        )
    try:
        gamedef = parse_game_def(rules)
        game = served_limit_game(gamedef)
    except InvalidArgumentError as exc:  # UnknownGameError too: unsupported or too large
        raise renamed(exc, "config.game") from None
    return game_short_name(gamedef) or "acpc", game, gamedef.to_text()


@cache
def position_infosets(game: Game, position: int) -> tuple[tuple[int, str], ...]:
    """(index, OpenSpiel string) of every information set of ``position``, sorted by index."""
    return tuple((i, game.infoset_string(position, i)) for i in game.infosets(position))


def policy_to_proto(
    game: Game,
    position: int,
    table: np.ndarray,
    rows: Sequence[tuple[int, str]] | None = None,
) -> list[pb.InfosetPolicy]:
    """One InfosetPolicy per information set of ``position`` from a (num_infosets, actions)
    table (``rows``: (index, name) of the sets to give, if not the game's)."""
    return [
        pb.InfosetPolicy(infostate=name, probabilities=table[index].tolist())
        for index, name in (position_infosets(game, position) if rows is None else rows)
    ]


def model_to_proto(
    game: Game, position: int, insight: OpponentInsight, our_position: int, hands: int
) -> pb.GetModelResponse:
    """GetModel's answer: the model of the opponent in ``position`` and what reads it."""
    rows = position_infosets(game, position) if insight.names is None else insight.names
    reply = pb.GetModelResponse(
        infosets=policy_to_proto(game, position, insight.model, rows),
        effective_sample_size=float(insight.spread),
        our_position=our_position,
        hands_observed=hands,
        prior=policy_to_proto(game, position, insight.prior, rows),
        concentration=insight.concentration[[i for i, _ in rows]].tolist()
        if len(insight.concentration)
        else [],
        run_start=insight.run_start,
    )
    if math.isfinite(insight.safety_bankroll):
        reply.safety_bankroll = insight.safety_bankroll
    return reply


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


def _profile(game: Game, strategies: list[pb.PositionStrategy], field: str) -> StrategyTable:
    """Validate a supplied profile (``field``: prior_mean or default_strategy) into a
    (num_players, num_infosets, num_actions) nested tuple."""
    table = np.full((game.num_players, game.num_infosets, game.num_actions), 0.5)
    seen_positions: set[int] = set()
    for i, strategy in enumerate(strategies):
        where = f"{field}[{i}]"
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
                    f"contains NaN or infinity at {infoset.infostate!r}: {probabilities}",
                )
            entries[infoset.infostate] = probabilities
        try:
            table[position] = game.strategy_from_dict(position, entries, f"{where}.infosets")
        except InvalidArgumentError as exc:
            if exc.field.startswith(where):
                raise
            raise renamed(exc, f"{where}.infosets") from None
    if len(seen_positions) != game.num_players:
        raise InvalidArgumentError(field, "must give every position")
    return _nested(table)


def _nested(table: np.ndarray) -> StrategyTable:
    return tuple(tuple(tuple(float(x) for x in row) for row in pos) for pos in table)


def _given_profile(game: Game, params: pb.MbbrParams, name: str) -> StrategyTable | None:
    """The profile ``name`` (prior_mean or default_strategy) given as PositionStrategy messages
    or as strategy-file JSON (the one loader every command uses: either key style in Kuhn),
    validated; None if not given."""
    field, json_field = f"config.mbbr.{name}", f"config.mbbr.{name}_json"
    messages, text = list(getattr(params, name)), getattr(params, f"{name}_json")
    if messages and text:
        raise InvalidArgumentError(json_field, f"give {name} or {name}_json, not both")
    if messages:
        return _profile(game, messages, field)
    if not text:
        return None
    try:
        return _nested(game.parse_profile(text, json_field))
    except InvalidArgumentError as exc:
        raise renamed(exc, f"{json_field}.{exc.field}") from None


def spec_from_proto(config: pb.SessionConfig, *, max_label_length: int) -> SessionSpec:
    """Validate a SessionConfig into a SessionSpec (MBBR defaults fill unset parameters).

    A limit game's session applies the safety budget as a Kuhn session does (unset: MBBRConfig's;
    ``safety.py``); its change detection (``change.py``) is off unless asked for: a
    bank of runs holds and snapshots up to 4 posteriors (experiments/RESULTS.md)."""
    game_name, game, game_def = parse_game(config.game)
    opponent_labels = _labels(config, game.num_players, max_label_length)
    if config.method not in (pb.METHOD_UNSPECIFIED, pb.METHOD_MBBR):
        raise InvalidArgumentError("config.method", f"unsupported method {config.method}")
    params = config.mbbr
    # unset, a limit game's change hazard is 0: change detection is off unless asked for
    mbbr = read_config(config, unset=game.unset_config())
    try:
        mbbr.validate()
    except InvalidArgumentError as exc:
        raise renamed(exc, field_path(exc.field)) from None
    game.check_config(mbbr)
    if game_def is None and mbbr.prior == "mixture":
        raise InvalidArgumentError(
            "config.mbbr.prior", "'mixture' is for limit games (leduc2p, leduc3p, ACPC rules)"
        )
    prior_mean = _given_profile(game, params, "prior_mean")
    if prior_mean is not None and mbbr.prior == "uninformed":
        raise InvalidArgumentError(
            "config.mbbr.prior_mean", "cannot be used with an uninformed prior"
        )
    return SessionSpec(
        game=game_name,
        num_players=game.num_players,
        our_label=config.our_label,
        opponent_labels=opponent_labels,
        config=mbbr,
        prior_mean=prior_mean,
        game_def=game_def,
        default_strategy=_given_profile(game, params, "default_strategy"),
    )


def _strategy_to_proto(game: Game, table: tuple | None) -> list[pb.PositionStrategy]:
    if table is None:
        return []
    array = np.asarray(table, dtype=np.float64)
    return [
        pb.PositionStrategy(position=p, infosets=policy_to_proto(game, p, array[p]))
        for p in range(game.num_players)
    ]


def session_to_proto(info: SessionInfo) -> pb.Session:
    """The Session message of a session, with every default filled in."""
    spec = info.spec
    game = game_of(spec)
    config = pb.SessionConfig(
        game=spec.game_def if spec.game == "acpc" and spec.game_def else spec.game,
        our_label=spec.our_label,
        opponent_labels=list(spec.opponent_labels),
        method=pb.METHOD_MBBR,
        mbbr=pb.MbbrParams(
            prior_mean=_strategy_to_proto(game, spec.prior_mean),
            default_strategy=_strategy_to_proto(game, spec.default_strategy),
        ),
    )
    write_config(spec.config, config, every_field=True)
    return pb.Session(
        session_id=info.session_id,
        config=config,
        hands_observed=info.hands_observed,
        created_unix_ms=info.created_unix_ms,
        population_version=spec.population_version or 0,
    )


def kind_from_proto(kind: int) -> str | None:
    """'mean', 'bayes', or None for the session default."""
    return _choice(RESPONSE_KIND, kind, "kind", unset=None)


def kind_to_proto(kind: str) -> pb.ResponseKind:
    """The ResponseKind enum value of 'mean' or 'bayes'."""
    return RESPONSE_KIND.values[kind]


# -- observations ----------------------------------------------------------------------------------
def observation_from_proto(
    game: Game, message: pb.Observation, prefix: str = "observation."
) -> tuple[int, Observation]:
    """(sequence, validated observation in the game's presentation) of an Observation message;
    errors name the field under ``prefix`` (``observations[3].`` in a batch)."""
    try:
        if message.matchstate:
            _check_alone(message)
            return int(message.sequence), game.matchstate_observation(message.matchstate)
        which = message.WhichOneof("betting")
        fields = KuhnFields(
            message.position,
            message.our_card if message.HasField("our_card") else None,
            which,
            "" if which is None else getattr(message, which),
            tuple((revealed.position, revealed.card) for revealed in message.revealed),
        )
        return int(message.sequence), game.field_observation(fields)
    except InvalidArgumentError as exc:
        if prefix == "observation." or not exc.field.startswith("observation."):
            raise
        raise renamed(exc, prefix + exc.field[len("observation.") :]) from None


def _check_alone(message: pb.Observation) -> None:
    """InvalidArgumentError if an Observation with a MATCHSTATE line sets Kuhn fields too."""
    given = [name for name in ("position", "our_card", "revealed") if _is_set(message, name)]
    if given or message.WhichOneof("betting") is not None:
        other = given[0] if given else message.WhichOneof("betting")
        raise InvalidArgumentError(
            f"observation.{other}", "give the MATCHSTATE line alone (observation.matchstate)"
        )


def _is_set(message: pb.Observation, name: str) -> bool:
    if name == "revealed":
        return len(message.revealed) > 0
    if name == "our_card":
        return message.HasField("our_card")
    return getattr(message, name) != 0


# -- information states ----------------------------------------------------------------------------
def info_state_from_proto(game: Game, request: pb.GetActionRequest) -> Decision | str:
    """The decision (position, information set index, betting so far) of a GetActionRequest's
    information state, checked to be one where that position is to act; or its MATCHSTATE line
    as is for a game whose arithmetic does not run on the event loop (``ServedGame.runs_inline``:
    hold'em's lookup buckets the board, which the model's host then looks up beside the hand's
    update: ``ModelHost.decide``)."""
    which = request.WhichOneof("state")
    if which == "matchstate":
        if not game.runs_inline:
            return request.matchstate
        return game.matchstate_decision(request.matchstate)
    if which is None:
        return game.field_decision(None)
    state = request.info_state
    betting = state.WhichOneof("betting")
    return game.field_decision(
        KuhnInfoState(
            state.position,
            state.card if state.HasField("card") else None,
            betting,
            "" if betting is None else getattr(state, betting),
        )
    )


def ack_to_proto(session_id: str, ack: Ack) -> pb.ObserveResponse:
    """One observation's acknowledgement, as Observe streams it and ObserveBatch lists it."""
    return pb.ObserveResponse(
        session_id=session_id,
        sequence=ack.sequence,
        duplicate=ack.duplicate,
        hands_observed=ack.hands_observed,
    )


def action_to_proto(choice: ActionChoice, game: Game, history: str) -> pb.GetActionResponse:
    """GetActionResponse with the ACPC letter of the action (``ServedGame.action_letter``)."""
    return pb.GetActionResponse(
        action=choice.action,
        acpc_action=game.action_letter(history, choice.action),
        probabilities=list(choice.probabilities),
        infostate=choice.infostate,
        default_policy=choice.default_policy,
        hands_observed=choice.hands_observed,
    )
