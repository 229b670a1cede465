"""MBBR: the posteriors over opponent strategies, their priors and responses.

``model.py`` is the entry point: the ``MBBRModel`` protocol every caller uses and ``build_model``,
which picks the class of the configured posterior. ``config.py`` holds MBBRConfig and its choices,
``priors.py`` the priors and the paper's samples, ``evidence.py`` what one observation says about
each opponent, ``base.py`` what the posteriors share (input checks, caches, the responses, the
default phase, the snapshot header), ``samples.py`` and ``dirichlet.py`` (with ``typed_prior.py``)
the two posteriors with their numba kernels, ``snapshot.py`` the snapshot format and ``memory.py``
the memory estimates.
"""
