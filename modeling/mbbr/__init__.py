"""MBBR: the posteriors over opponent strategies, their priors and responses."""
