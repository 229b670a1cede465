"""MBBR: the posteriors over opponent strategies, their priors and responses, for any compiled
ACPC limit game; ``model.build_model`` is the entry point (docs/layout.md maps the modules)."""
