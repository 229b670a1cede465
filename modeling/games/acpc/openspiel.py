"""Limit-game profiles to and from OpenSpiel tabular policies, by walking OpenSpiel's game tree.

Supported peers: ``kuhn_poker(players=n)``, ``leduc_poker(players=n)`` and ``universal_poker``
(for instance ``pyspiel.universal_poker.load_universal_poker_from_acpc_gamedef(text)`` with the
same game file). No string of OpenSpiel's is parsed: the walk plays the same deal and the same
actions in OpenSpiel's game and in ours side by side, and pairs OpenSpiel's information-state
string of each decision state with our information set there. It fails loudly where the two
games disagree (who acts, which actions are legal, or an information state of OpenSpiel's that
would be two of ours).

The correspondence: cards by rank and suit within the game's deck (OpenSpiel deals card ``rank *
num_suits + suit``, counting ranks from the lowest in the game and suits from the first, while
the ACPC dealer keeps the highest ranks of the last suits: the same game up to renaming cards).
Actions: ``leduc_poker`` and ``universal_poker`` use our codes (0 fold, 1 call, 2 raise);
``kuhn_poker`` has pass (0: check, or fold when facing a bet) and bet (1: bet, or call).

Each of our information sets is visited in at least one deal: the walk covers, for every
position and every view it can have in the last round, one deal that gives it that view, so it
touches a few dozen deals, not all of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import CALL, FOLD, NUM_ACTIONS, RAISE
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS
from oppmodel.modeling.games.acpc.limit_game import LimitGame

PEERS = ("kuhn_poker", "leduc_poker", "universal_poker")
MAX_KEPT_PAIRINGS = 8
_PAIRINGS: dict[tuple[LimitGame, str], Pairing] = {}


@dataclass(frozen=True, eq=False)
class Pairing:
    """OpenSpiel's information states of a game beside ours, found once by walking both games.

    ``keys[k]`` is OpenSpiel's string of our information set ``index[k]`` of ``position[k]``;
    ``ours[k, j]`` and ``theirs[k, j]`` are its legal actions (-1 padded) in both games' codes.
    """

    keys: tuple[str, ...]
    position: np.ndarray
    index: np.ndarray
    ours: np.ndarray
    theirs: np.ndarray

    def probabilities(self, profile: np.ndarray) -> np.ndarray:
        """(K, 3) the profile's probability of each of OpenSpiel's legal actions, as ``theirs``."""
        rows = profile[self.position, self.index]
        return np.where(self.ours >= 0, np.take_along_axis(rows, np.maximum(self.ours, 0), 1), 0)


def pair_with_openspiel(game: LimitGame, os_game: Any) -> Pairing:
    """Walk both games and pair every information state (kept for the last few game pairs)."""
    key = (game, str(os_game))
    if key not in _PAIRINGS:
        if len(_PAIRINGS) >= MAX_KEPT_PAIRINGS:
            _PAIRINGS.pop(next(iter(_PAIRINGS)))
        _PAIRINGS[key] = _pairing(game, os_game)
    return _PAIRINGS[key]


def _pairing(game: LimitGame, os_game: Any) -> Pairing:
    keys, position, index, ours, theirs = [], [], [], [], []
    seen: set[str] = set()
    for state, p, i, actions in _decision_states(game, os_game):
        key = state.information_state_string(p)
        if key in seen:
            continue
        seen.add(key)
        keys.append(key)
        position.append(p)
        index.append(i)
        ours.append([a for a, _ in actions] + [-1] * (NUM_ACTIONS - len(actions)))
        theirs.append([b for _, b in actions] + [-1] * (NUM_ACTIONS - len(actions)))
    arrays = [np.array(x, dtype=np.int64) for x in (position, index, ours, theirs)]
    for a in arrays:
        a.setflags(write=False)
    return Pairing(tuple(keys), *arrays)


def openspiel_policy_table(
    game: LimitGame, profile: np.ndarray, os_game: Any
) -> dict[str, list[tuple[int, float]]]:
    """``profile`` as ``{information-state string: [(action, probability), ...]}``, the form
    ``pyspiel.TabularPolicy`` and ``pyspiel.TabularBestResponse`` take."""
    pairing = pair_with_openspiel(game, os_game)
    probs = pairing.probabilities(np.asarray(profile, dtype=float))
    return {
        key: [(int(b), float(x)) for b, x in zip(theirs, row, strict=True) if b >= 0]
        for key, theirs, row in zip(pairing.keys, pairing.theirs, probs, strict=True)
    }


def openspiel_tabular_policy(game: LimitGame, profile: np.ndarray, os_game: Any) -> Any:
    """``profile`` as an ``open_spiel.python.policy.TabularPolicy`` (which lists every state
    of the game when it is built: fine for Kuhn and 2-player Leduc, slow for 3-player Leduc,
    where :func:`openspiel_policy_table` is the better form)."""
    from open_spiel.python import policy as os_policy  # test extra: imported only when used

    pol = os_policy.TabularPolicy(os_game)
    for key, pairs in openspiel_policy_table(game, profile, os_game).items():
        row = pol.action_probability_array[pol.state_lookup[key]]
        row[:] = 0.0
        for os_action, prob in pairs:
            row[os_action] += prob
    return pol


def profile_from_openspiel(game: LimitGame, os_game: Any, policy: Any) -> np.ndarray:
    """Our profile from an OpenSpiel policy: any policy with ``action_probabilities(state)``
    (Python's ``Policy`` or pyspiel's, e.g. ``CFRPlusSolver.average_policy()``), a
    ``pyspiel.TabularPolicy``, or a table ``{information-state string: [(action, prob)]}``."""
    if hasattr(policy, "policy_table"):
        policy = policy.policy_table()
    profile = np.tile(np.eye(NUM_ACTIONS)[CALL], (game.num_players, game.num_infosets, 1))
    if isinstance(policy, Mapping):
        pairing = pair_with_openspiel(game, os_game)
        for k, key in enumerate(pairing.keys):
            if key not in policy:
                raise InvalidArgumentError("policy", f"no entry for OpenSpiel state {key!r}")
            _fill(profile, pairing.position[k], pairing.index[k], dict(policy[key]), pairing, k)
        return profile
    pairing = pair_with_openspiel(game, os_game)
    at = {key: k for k, key in enumerate(pairing.keys)}
    for state, p, _, _ in _decision_states(game, os_game):
        k = at[state.information_state_string(p)]
        _fill(profile, p, pairing.index[k], policy.action_probabilities(state), pairing, k)
    return profile


def _fill(profile: np.ndarray, p: int, i: int, probs: Mapping, pairing: Pairing, k: int) -> None:
    profile[p, i] = 0.0
    for ours, theirs in zip(pairing.ours[k], pairing.theirs[k], strict=True):
        if ours >= 0:
            profile[p, i, ours] = float(probs.get(int(theirs), 0.0))


def _peer_name(os_game: Any) -> str:
    name = os_game.get_type().short_name
    if name not in PEERS:
        raise InvalidArgumentError("os_game", f"{name} is not one of {', '.join(PEERS)}")
    return name


def _card_map(game: LimitGame) -> list[int]:
    """OpenSpiel's chance action for each card of our deck."""
    g = game.gamedef
    low_rank = len(RANK_CHARS) - g.num_ranks
    first_suit = len(SUIT_CHARS) - g.num_suits
    ranks = [RANK_CHARS.index(card[0]) - low_rank for card in game.deck]
    suits = [SUIT_CHARS.index(card[1]) - first_suit for card in game.deck]
    return [r * g.num_suits + s for r, s in zip(ranks, suits, strict=True)]


def _action_map(peer: str, legal: np.ndarray) -> list[tuple[int, int]] | None:
    """(our action, OpenSpiel's action) for each legal action of a node; None if the peer has
    no such node (Kuhn has two actions everywhere)."""
    ours = [a for a in range(NUM_ACTIONS) if legal[a]]
    if peer != "kuhn_poker":
        return [(a, a) for a in ours]
    if len(ours) != 2:
        return None
    kuhn = {FOLD: 0, CALL: 1} if legal[FOLD] else {CALL: 0, RAISE: 1}
    return [(a, kuhn[a]) for a in ours]


def _covering_deals(game: LimitGame) -> list[int]:
    """Deals that give every position every view it can have in the last round."""
    views = game.tree.deal_view[-1]
    seen: set[tuple[int, int]] = set()
    out = []
    for d in range(game.num_deals):
        new = {(p, int(views[d, p])) for p in range(game.num_players)} - seen
        if new:
            seen |= new
            out.append(d)
    return out


def _decision_states(game: LimitGame, os_game: Any) -> Iterator[tuple[Any, int, int, list]]:
    """(OpenSpiel state, position to act, our information set, [(our action, theirs)]) for the
    decision states of a covering set of deals; checks that the two games agree on the way."""
    peer = _peer_name(os_game)
    if os_game.num_players() != game.num_players:
        raise InvalidArgumentError(
            "os_game", f"{os_game} has {os_game.num_players()} players, {game.name} has "
            f"{game.num_players}",
        )  # fmt: skip
    cards = _card_map(game)
    tree, g = game.tree, game.gamedef
    hole_cards = g.num_players * g.num_hole_cards
    board_start = np.cumsum([0, *g.num_board_cards]) + hole_cards
    pairing: dict[str, tuple[int, int]] = {}
    for d in _covering_deals(game):
        row = game.deal_cards[d]
        state = os_game.new_initial_state()
        _deal(state, [cards[c] for c in row[:hole_cards]], game, d)
        stack = [(state, 0)]
        while stack:
            state, node = stack.pop()
            p = int(tree.node_player[node])
            if p < 0:
                if not state.is_terminal():
                    raise InvalidArgumentError("os_game", _differs(game, node, "hand is not over"))
                continue
            if state.current_player() != p:
                raise InvalidArgumentError("os_game", _differs(game, node, "player to act"))
            actions = _action_map(peer, tree.node_children[node] >= 0)
            if actions is None or sorted(b for _, b in actions) != sorted(state.legal_actions()):
                raise InvalidArgumentError("os_game", _differs(game, node, "legal actions"))
            r = int(tree.node_round[node])
            index = int(tree.node_base[node] + tree.deal_view[r, d, p])
            key = state.information_state_string(p)
            if pairing.setdefault(key, (p, index)) != (p, index):
                raise InvalidArgumentError("os_game", _differs(game, node, f"state {key!r}"))
            yield state, p, index, actions
            for ours, theirs in actions:
                child = int(tree.node_children[node, ours])
                child_state = state.child(theirs)
                new_round = int(tree.node_round[child])
                if new_round > r and tree.node_player[child] >= 0:
                    board = row[board_start[new_round] : board_start[new_round + 1]]
                    _deal(child_state, [cards[c] for c in board], game, d)
                stack.append((child_state, child))


def _deal(state: Any, os_cards: list[int], game: LimitGame, d: int) -> None:
    for card in os_cards:
        if not state.is_chance_node() or card not in dict(state.chance_outcomes()):
            raise InvalidArgumentError(
                "os_game", f"OpenSpiel's game does not deal {game.name}'s deal {d} as ours does"
            )
        state.apply_action(card)


def _differs(game: LimitGame, node: int, what: str) -> str:
    return f"OpenSpiel's game differs from {game.name} after {game.bettings[node]!r}: {what}"
