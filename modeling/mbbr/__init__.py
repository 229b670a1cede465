"""MBBR: the posteriors over opponent strategies, their priors and responses, for any compiled
ACPC limit game (Kuhn and Leduc included).

``model.py`` is the entry point: ``build_model``, which builds the class of the configured
posterior (``DirichletModel``, ``SampleModel``; with change detection ``change.py``'s
``ChangeDetectingModel`` over a bank of them). ``base.py`` is ``MBBRModel``, what every posterior
shares (the responses, solved hole by hole over ``holes.py``'s split; the default phase; the
safety bankroll of ``safety.py``; snapshots in ``snapshot.py``'s format). ``config.py`` holds
MBBRConfig and its choices, ``priors.py`` the priors, the paper's samples and the game's default
profiles (with ``typed_prior.py`` and ``mixture_prior.py``), ``evidence.py`` what one observation
says about each opponent, ``dirichlet.py`` and ``samples.py`` the two posteriors' tables,
``memory.py`` the memory estimates; ``_*_kernels.py`` their numba kernels.
"""
