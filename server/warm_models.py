"""Imported once by the fork server of the model workers (``server/model_worker.py``): every
model kernel compiled (or loaded from numba's cache) and the heap frozen, so that each worker it
forks starts warm in milliseconds instead of loading the kernels itself (~1 s)."""

import gc

from oppmodel.server.session_models import warm_up_models

warm_up_models()
gc.collect()
gc.freeze()
