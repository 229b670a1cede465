"""Equilibrium solvers (CFR+, discounted CFR) for the compiled limit games."""
