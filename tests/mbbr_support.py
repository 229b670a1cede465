"""Shared helpers of the MBBR tests: every configuration MBBRConfig accepts, and the panel's
profiles in the rows of a Kuhn service session."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_of
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr.config import CHANGE_HAZARD_RANGE, EPSILON_RANGE, ETA_RANGE, MBBRConfig
from oppmodel.modeling.play.panel import named_profile

PROFILES = ("uniform", "always-bet", "calling-station", "tight-passive", "maniac", "bluffer")
POSTERIORS_AND_PRIORS = (
    ("samples", "informed"),
    ("samples", "uninformed"),
    ("dirichlet", "informed"),
    ("dirichlet", "uninformed"),
    ("dirichlet", "typed"),
)


def kuhn_named_profile(game: KuhnGame, name: str) -> np.ndarray:
    """A panel profile in the rows of OpenSpiel's Kuhn (pass/bet; ``KuhnGame``'s indices), as a
    Kuhn service session speaks: the compiled Kuhn game's named profile, converted exactly."""
    compiled = limit_game(f"kuhn{game.num_players}p")
    return kuhn_profile_of(compiled, named_profile(compiled, name))


def accepted_configs(*, max_k: int) -> st.SearchStrategy[MBBRConfig]:
    """Every MBBRConfig that validates with k <= ``max_k``, the edges of each range weighted in."""
    epsilons = st.one_of(
        st.sampled_from([EPSILON_RANGE[0], 0.05, math.nextafter(EPSILON_RANGE[1], 0)]),
        st.floats(EPSILON_RANGE[0], EPSILON_RANGE[1], exclude_max=True),
    )
    etas = st.one_of(
        st.sampled_from([ETA_RANGE[0], 4.0, ETA_RANGE[1]]), st.floats(ETA_RANGE[0], ETA_RANGE[1])
    )
    return st.builds(
        lambda kinds, **kw: MBBRConfig(posterior=kinds[0], prior=kinds[1], **kw),
        st.sampled_from(POSTERIORS_AND_PRIORS),
        epsilon=epsilons,
        eta=etas,
        k=st.one_of(st.sampled_from([1, max_k]), st.integers(1, max_k)),
        hands_default=st.sampled_from([0, 1, 2**31 - 1]),
        seed=st.one_of(st.sampled_from([0, 2**63 - 1]), st.integers(0, 2**63 - 1)),
        response=st.sampled_from(["mean", "bayes"]),
        change_hazard=st.one_of(
            st.sampled_from([0.0, 1e-5, CHANGE_HAZARD_RANGE[1]]), st.floats(*CHANGE_HAZARD_RANGE)
        ),
    )
