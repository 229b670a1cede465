"""Brute-force oracles for MBBR in limit games: everything by enumeration over deals, through the
public API of the compiled game (information-state strings, ``legal_actions``, ``child``,
``returns``), none of the arrays or kernels the models use."""

from __future__ import annotations

import functools
import itertools

import numpy as np

from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS, HandState


def moves_of(game, betting: str) -> list[tuple[int, str, int, int]]:
    """(mover, the betting before the move, action code, round) of every move of ``betting``."""
    out, prefix = [], ""
    for letter in betting:
        if letter == "/":
            prefix += letter
            continue
        out.append(
            (game.current_player(prefix), prefix, ACTION_LETTERS.index(letter), prefix.count("/"))
        )
        prefix += letter
    return out


def cards_of(game, deal: int) -> tuple[list[str], list[str]]:
    """(hole cards per position, board cards per round) of a deal, one hole card per position and
    one board card per round after the first (Kuhn, Leduc)."""
    row = [game.deck[c] for c in game.deal_cards[deal]]
    n = game.num_players
    return row[:n], ["", *row[n:]]


def view_of(game, deal: int, q: int, rnd: int) -> str:
    hole, board = cards_of(game, deal)
    return hole[q] + "".join("/" + board[r] for r in range(1, rnd + 1))


def consistent(game, obs) -> list[int]:
    """Deals agreeing with every card the observation shows."""
    out = []
    for deal in range(game.num_deals):
        hole, board = cards_of(game, deal)
        if all(c is None or c == hole[q] for q, c in enumerate(obs.hole)) and all(
            b == board[r] for r, b in enumerate(obs.board)
        ):
            out.append(deal)
    return out


def opponent_moves(game, obs, deal: int) -> list[tuple[int, int, int]]:
    """(offset - 1, information set, action) of every opponent move in ``obs`` under ``deal``."""
    n, p = game.num_players, obs.position
    out = []
    for q, prefix, action, rnd in moves_of(game, obs.betting):
        if q != p:
            infoset = game.infoset_from_string(q, f"{view_of(game, deal, q, rnd)}:{prefix}")
            out.append(((q - p) % n - 1, infoset, action))
    return out


def assignments(game, obs) -> list[list[tuple[int, int, int]]]:
    """One list of opponent moves per distinct assignment of the hidden hole cards."""
    seen, out = set(), []
    for deal in consistent(game, obs):
        hole, _ = cards_of(game, deal)
        key = tuple(hole[q] for q, c in enumerate(obs.hole) if c is None)
        if key not in seen:
            seen.add(key)
            out.append(opponent_moves(game, obs, deal))
    return out


def sample_posterior(game, tau_p: np.ndarray, observations, p: int) -> np.ndarray:
    """p(s | the hands seen from position p), every sample combination and consistent deal."""
    m, k = tau_p.shape[0], tau_p.shape[1]
    weights = np.ones((k,) * m)
    for obs in observations:
        if obs.position != p:
            continue
        deals = consistent(game, obs)
        moves = [opponent_moves(game, obs, deal) for deal in deals]
        for s in itertools.product(range(k), repeat=m):
            z = 0.0
            for explained in moves:
                prob = 1.0
                for d_1, infoset, action in explained:
                    prob *= tau_p[d_1, s[d_1], infoset, action]
                z += prob
            weights[s] *= z
    return weights / weights.sum()


def reach_of_opponents(game, p: int, betting: str, deal: int, strategies) -> float:
    """Product over opponent moves of ``strategies[q][infoset, action]``."""
    prob = 1.0
    for q, infoset, action in _opponent_path(game, p, betting, deal):
        prob *= strategies[q][infoset, action]
    return prob


@functools.cache
def _opponent_path(game, p: int, betting: str, deal: int) -> tuple[tuple[int, int, int], ...]:
    return tuple(
        (q, game.infoset_from_string(q, f"{view_of(game, deal, q, rnd)}:{prefix}"), action)
        for q, prefix, action, rnd in moves_of(game, betting)
        if q != p
    )


def best_response(game, p: int, leaf) -> tuple[dict[int, np.ndarray], float]:
    """Backward induction of position p over every deal: ``leaf(betting, deal)`` is the value of
    a finished hand (others' reach times p's payoff). Returns, per information set of p met,
    the summed value of each legal action (-inf where illegal), and the value per hand."""
    sums: dict[int, np.ndarray] = {}

    def values(betting: str) -> np.ndarray:
        mover = game.current_player(betting)
        if mover < 0:
            return np.array([leaf(betting, d) for d in range(game.num_deals)])
        children = {a: values(game.child(betting, a)) for a in game.legal_actions(betting)}
        if mover != p:
            return sum(children.values())
        rnd = betting.count("/")
        infosets = [
            game.infoset_from_string(p, f"{view_of(game, d, p, rnd)}:{betting}")
            for d in range(game.num_deals)
        ]
        out = np.empty(game.num_deals)
        for i in set(infosets):
            deals = [d for d in range(game.num_deals) if infosets[d] == i]
            total = np.full(3, -np.inf)
            for a, v in children.items():
                total[a] = sum(v[d] for d in deals)
            sums[i] = total
            best = int(np.argmax(total))  # ties: the lowest action code
            for d in deals:
                out[d] = children[best][d]
        return out

    return sums, float(values("").sum()) / game.num_deals


def payoff(game, p: int, betting: str, deal: int) -> float:
    """p's chips at the end of the hand, by the betting rules' own replay."""
    hole, board = cards_of(game, deal)
    hand = HandState.from_betting(game.gamedef, betting)
    return float(hand.payoffs(hole, board[: hand.round + 1])[p])
