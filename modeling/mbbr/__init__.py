"""MBBR: the posteriors over opponent strategies, their priors and responses, for any compiled
ACPC limit game (Kuhn and Leduc included).

``model.py`` is the entry point: ``MBBRModel``, what every posterior shares (the responses, solved
hole by hole; the default phase; the safety bankroll; snapshots), its two posteriors' classes and
``build_model``, which picks the class of the configured posterior. ``config.py`` holds MBBRConfig
and its choices, ``priors.py`` the priors and the paper's samples (with ``typed_prior.py`` and
``mixture_prior.py``), ``evidence.py`` what one observation says about each opponent,
``dirichlet.py`` and ``samples.py`` the two posteriors' tables, ``safety.py`` the safety bankroll,
``change.py`` change detection over a bank of models, ``snapshot.py`` the snapshot format and
``memory.py`` the memory estimates; ``_*_kernels.py`` their numba kernels.
"""
