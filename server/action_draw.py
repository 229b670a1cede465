"""GetAction's draw: a uniform number fixed by its keys, and the action it picks.

Keyed by (seed, hands observed, position, infoset, draw), the same question always gets the same
answer, in any process and after any reload.
"""

from __future__ import annotations

_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    """One step of SplitMix64 (Steele, Lea & Flood 2014): a strong 64-bit mixing function."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def uniform_draw(*keys: int) -> float:
    """A uniform number in [0, 1) that is a fixed function of the integer keys.

    The action draw is keyed by (seed, hands observed, position, infoset, draw) so the same
    question always gets the same answer; a hash costs ~2 us where a seeded numpy Generator costs
    ~50 us, and this runs on every GetAction.
    """
    h = 0
    for key in keys:
        h = _splitmix64(h ^ (key & _MASK64))
    return (h >> 11) / float(1 << 53)


def draw_action(probabilities: tuple[float, ...], u: float) -> int:
    """The action whose cumulative-probability interval contains ``u * sum(probabilities)``."""
    target = u * sum(probabilities)
    total = 0.0
    for action, p in enumerate(probabilities):
        total += p
        if target < total:
            return action
    return max(a for a, p in enumerate(probabilities) if p > 0)
