"""Shared hypothesis strategies of the MBBR tests: every configuration MBBRConfig accepts."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from oppmodel.modeling.mbbr.config import CHANGE_HAZARD_RANGE, EPSILON_RANGE, ETA_RANGE, MBBRConfig

PROFILES = ("uniform", "always-bet", "calling-station", "tight-passive", "maniac", "bluffer")
POSTERIORS_AND_PRIORS = (
    ("samples", "informed"),
    ("samples", "uninformed"),
    ("dirichlet", "informed"),
    ("dirichlet", "uninformed"),
    ("dirichlet", "typed"),
)


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
