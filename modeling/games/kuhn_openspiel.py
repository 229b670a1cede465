"""n-player Kuhn poker in OpenSpiel's conventions: the compiled ``kuhn<n>p`` game and its model,
presented as a ``"kuhn_poker(players=n)"`` session has always spoken (``interface.ServedGame``).

The model is the compiled game's (``build_model`` on the bundled ``kuhn<n>p`` file); this
module only translates. Information states are OpenSpiel's (``"2ppb"``: card 2 after pass, pass,
bet) with the Kuhn kernels' indices (``KuhnGame``: the strings' grammar), rows are ``[p_pass,
p_bet]``, actions 0 (pass: check or fold) and 1 (bet or call), hands are ``HandObservation``
(betting in OpenSpiel letters, cards as numbers: the rank order of the ``kuhn<n>p`` deck, so in
3-player Kuhn ``Js Qs Ks As`` are cards 0..3). Every conversion copies probabilities, never
computes them (``games/acpc/strategy.kuhn_strategy_on`` / ``kuhn_strategy_of``), so it is exact
both ways. The defaults are Kuhn's: N1 and N3 in 3-player Kuhn (the compiled game's own),
uniform play otherwise.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np

from oppmodel.modeling import strategy as kuhn_strategy
from oppmodel.modeling.errors import InvalidArgumentError, renamed
from oppmodel.modeling.games.acpc import strategy as limit_strategy
from oppmodel.modeling.games.acpc.betting import CALL, FOLD, RAISE
from oppmodel.modeling.games.acpc.compiler import limit_game
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
from oppmodel.modeling.games.kuhn import BET, PASS, kuhn_game
from oppmodel.modeling.games.kuhn3p import equilibria
from oppmodel.modeling.mbbr.base import MBBRModel, OpponentInsight
from oppmodel.modeling.mbbr.config import Response
from oppmodel.modeling.observation import HandObservation, LimitObservation, validate_observation


class KuhnOpenSpiel(ServedGame):
    """n-player Kuhn in OpenSpiel's conventions (module docstring); built by
    :func:`kuhn_openspiel`."""

    def __init__(self, num_players: int) -> None:
        self.kuhn = kuhn_game(num_players)  # UnknownGameError outside 2..4 players
        super().__init__(limit_game(f"kuhn{num_players}p"), self.kuhn)
        self._compiled_index = []  # position -> (Kuhn index -> compiled index)
        for ours, theirs, _ in limit_strategy.kuhn_rows(self.compiled):
            index = np.full(self.kuhn.num_infosets, -1, dtype=np.int64)
            index[theirs] = ours
            self._compiled_index.append(index)

    def strategy_from_dict(
        self, position: int, table: Mapping[str, object], field: str
    ) -> np.ndarray:
        return kuhn_strategy.strategy_from_dict(self.kuhn, position, table, field)

    def parse_profile(self, text: str, source: str) -> np.ndarray:
        profile = limit_strategy.parse_profile(self.compiled, text, source)
        return limit_strategy.kuhn_profile_of(self.compiled, profile)

    # --- hands ---------------------------------------------------------------------------

    def field_observation(self, fields: KuhnFields) -> Hand:
        return _field_hand(self, *fields)

    def matchstate_observation(self, line: str) -> Hand:
        field = "observation.matchstate"
        gamedef = self.compiled.gamedef
        state = read_matchstate(gamedef, line, field)
        cards: list[int | None] = []
        for p, hole in enumerate(state.hole):
            if hole and hole not in gamedef.deck:
                raise InvalidArgumentError(
                    field, f"position {p}'s card {hole!r} is not a card of this deck "
                    f"({' '.join(gamedef.deck)})",
                )  # fmt: skip
            cards.append(gamedef.deck.index(hole) if hole else None)
        try:
            history = self.kuhn.acpc_to_history(state.betting)
            hand = HandObservation(state.position, history, tuple(cards))
            validate_observation(self.kuhn, hand)
        except InvalidArgumentError as exc:
            raise type(exc)(field, str(exc)) from None
        return hand

    def hand_key(self, hand: Hand) -> HandKey:
        obs = cast(HandObservation, hand)  # the hands of this presentation
        return (obs.position, obs.history, tuple(obs.cards))

    def hand_of_key(self, position: int, betting: str, cards: Sequence[object]) -> Hand:
        return HandObservation(position, betting, tuple(cast(Sequence[int | None], cards)))

    def limit_hand(self, hand: Hand) -> LimitObservation:
        """The compiled game's observation of a hand."""
        kuhn = cast(HandObservation, hand)
        deck = self.compiled.deck
        return LimitObservation(
            kuhn.position,
            self.kuhn.history_to_acpc(kuhn.history),
            tuple(None if c is None else deck[c] for c in kuhn.cards),
            ("",),
        )

    # --- decisions -----------------------------------------------------------------------

    def field_decision(self, state: KuhnInfoState | None) -> Decision:
        if state is None:
            raise InvalidArgumentError("info_state", "is required (or matchstate)")
        if state.card is None:
            raise InvalidArgumentError("info_state.card", "is required")
        return _field_decision(self, state.position, state.card, state.which, state.betting)

    def matchstate_decision(self, line: str) -> Decision:
        gamedef = self.compiled.gamedef
        state = read_matchstate(gamedef, line, "matchstate")
        ours = state.hole[state.position]
        if ours not in gamedef.deck:
            raise InvalidArgumentError(
                "matchstate",
                f"position {state.position}'s card {ours!r} is not a card of this deck "
                f"({' '.join(gamedef.deck)})",
            )
        history = self.kuhn.acpc_to_history(state.betting)
        return self.decision_at(state.position, gamedef.deck.index(ours), history)

    def decision_at(self, position: int, card: int, history: str) -> Decision:
        """Checked to be a decision of ``position`` (errors name the fields ``position``,
        ``card`` and ``history``, as the releases before limit games did)."""
        game = self.kuhn
        game.check_position(position)
        if not 0 <= card < game.num_cards:
            raise InvalidArgumentError("card", f"must be between 0 and {game.num_cards - 1}")
        to_act = game.current_player(history)  # IllegalActionError if not a valid prefix
        if to_act != position:
            who = "the hand is over" if to_act < 0 else f"position {to_act} is to act"
            raise InvalidArgumentError("history", f"{history!r}: {who}, not position {position}")
        return Decision(position, game.infoset_index(position, card, history), history)

    def action_letter(self, betting: str, action: int) -> str:
        facing_bet = "b" in betting
        return {PASS: "f" if facing_bet else "c", BET: "c" if facing_bet else "r"}[action]

    def compiled_infoset(self, position: int, index: int) -> int:
        """The compiled game's index of an information set of ``position``."""
        return int(self._compiled_index[position][index])

    # --- models --------------------------------------------------------------------------

    def needs_solving(self, *, default_given: bool, prior_given: bool) -> bool:
        return False  # Kuhn's defaults are N1 and N3, or uniform play

    def compiled_profile(
        self, profile: np.ndarray | None, solved: np.ndarray | None
    ) -> np.ndarray | None:
        """Exact (pass is check or fold, bet is bet or call); None: N1 and N3 in 3-player Kuhn
        (the compiled model's own default), uniform play otherwise."""
        if profile is not None:
            return limit_strategy.kuhn_profile_on(self.compiled, np.asarray(profile))
        if equilibria(self.compiled):  # the compiled model's own default
            return None
        return limit_strategy.uniform_profile(self.compiled)

    def served_model(self, model: MBBRModel) -> ServedModel:
        return KuhnOpenSpielModel(self, model)


class KuhnOpenSpielModel:
    """The compiled game's model answering in OpenSpiel's conventions (``ServedModel``)."""

    def __init__(self, game: KuhnOpenSpiel, model: MBBRModel) -> None:
        self.game = game
        self.model = model

    @property
    def hands_observed(self) -> int:
        return self.model.hands_observed

    def observe(self, hand: Hand) -> None:
        self.model.observe(self.game.limit_hand(hand))

    def opponent_model(self, our_position: int, opponent_position: int) -> tuple[np.ndarray, float]:
        rows, spread = self.model.opponent_model(our_position, opponent_position)
        return self._ours(opponent_position, rows), spread

    def opponent_insight(self, our_position: int, opponent_position: int) -> OpponentInsight:
        insight = self.model.opponent_insight(our_position, opponent_position)
        concentration = insight.concentration
        if len(concentration):  # the compiled rows' concentrations on OpenSpiel's rows
            ours, theirs, _ = limit_strategy.kuhn_rows(self.game.compiled)[opponent_position]
            concentration = np.zeros(self.game.kuhn.num_infosets)
            concentration[theirs] = insight.concentration[ours]
        return insight._replace(
            model=self._ours(opponent_position, insight.model),
            prior=self._ours(opponent_position, insight.prior),
            concentration=concentration,
        )

    def response(
        self, our_position: int, kind: Response | str | None = None
    ) -> tuple[np.ndarray, float]:
        strategy, value = self.model.response(our_position, kind)
        return self._ours(our_position, strategy), value

    def played(self, our_position: int) -> tuple[np.ndarray, float]:
        policy, value = self.model.played(our_position)
        return self._ours(our_position, policy), value

    def action_probabilities(self, our_position: int, infoset: int) -> np.ndarray:
        index = self.game.compiled_infoset(our_position, infoset)
        row = self.model.action_probabilities(our_position, index)
        facing_bet = self.game.compiled.legal_mask[our_position, index, FOLD]
        return row[[FOLD, CALL]] if facing_bet else row[[CALL, RAISE]]

    def _ours(self, position: int, strategy: np.ndarray) -> np.ndarray:
        return limit_strategy.kuhn_strategy_of(self.game.compiled, position, strategy)

    def opponent_counts(self) -> np.ndarray:
        return self.model.opponent_counts()  # the compiled game's: what populations are fitted on

    def snapshot(self) -> bytes:
        return self.model.snapshot()

    def restore(self, blob: bytes) -> None:
        self.model.restore(blob)

    def nbytes(self) -> int:
        return self.model.nbytes()


@functools.cache
def kuhn_openspiel(num_players: int) -> KuhnOpenSpiel:
    """n-player Kuhn in OpenSpiel's conventions (one object per player count, so caches keyed by
    it hit); UnknownGameError outside 2..4 players."""
    return KuhnOpenSpiel(num_players)


def _betting(game: KuhnOpenSpiel, which: str, text: str, prefix: str) -> str:
    """The OpenSpiel history of the betting oneof's field ``which`` holding ``text``."""
    if which == "acpc_betting":
        try:
            return game.kuhn.acpc_to_history(text)
        except InvalidArgumentError as exc:
            raise renamed(exc, f"{prefix}acpc_betting") from None
    if text.strip("pb"):  # a letter other than 'p' and 'b'
        raise InvalidArgumentError(f"{prefix}history", f"{text!r}: letters must be 'p' or 'b'")
    return text


@functools.lru_cache(maxsize=4096)
def _field_hand(
    game: KuhnOpenSpiel,
    position: int,
    our_card: int | None,
    which: str | None,
    betting: str,
    revealed: tuple[tuple[int, int], ...],
) -> HandObservation:
    """The validated hand of an Observation's Kuhn fields. Cached: a game has few distinct
    hands, and validating one took more of the event loop than anything else of an Observe
    message (an error is raised again each time: exceptions are not cached)."""
    kuhn = game.kuhn
    kuhn.check_position(position, "observation.position")
    if our_card is None:
        raise InvalidArgumentError("observation.our_card", "is required")
    if which is None:
        raise InvalidArgumentError("observation.history", "is required (or acpc_betting)")
    history = _betting(game, which, betting, "observation.")
    cards: list[int | None] = [None] * kuhn.num_players
    cards[position] = our_card
    field_of_position = {position: "observation.our_card"}
    for j, (seat, card) in enumerate(revealed):
        where = f"observation.revealed[{j}]"
        kuhn.check_position(seat, f"{where}.position")
        if seat in field_of_position:
            raise InvalidArgumentError(
                f"{where}.position",
                f"position {seat} already has a card (ours goes in our_card)",
            )
        cards[seat] = card
        field_of_position[seat] = f"{where}.card"
    hand = HandObservation(position=position, history=history, cards=tuple(cards))
    try:
        validate_observation(kuhn, hand)
    except InvalidArgumentError as exc:
        raise renamed(exc, _observation_field(exc.field, which, field_of_position)) from None
    return hand


def _observation_field(field: str, which: str, by_position: dict[int, str]) -> str:
    """The request field that a core validation field ('history', 'cards[2]', ...) refers to
    (``which``: the betting oneof's field set)."""
    if field == "history":
        return f"observation.{which}"
    match = re.fullmatch(r"cards\[([0-9]+)\]", field)
    if match:
        return by_position.get(int(match.group(1)), "observation.revealed")
    if field == "cards":
        return "observation.revealed"
    return f"observation.{field}"


@functools.lru_cache(maxsize=4096)
def _field_decision(
    game: KuhnOpenSpiel, position: int, card: int, which: str | None, betting: str
) -> Decision:
    """The decision of an InfoState's fields as plain values (``which``: the betting oneof's
    field set, None if none is). Cached like ``_field_hand``: every GetAction asks, a game has
    few information states, and an error is raised afresh each time."""
    history = "" if which is None else _betting(game, which, betting, "info_state.")
    return game.decision_at(position, card, history)
