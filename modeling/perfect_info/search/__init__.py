"""Game-tree search for perfect-information n-player games: max^n, soft-max^n, prob-max^n,
paranoid (plain and alpha-beta), Max-Prob (unbounded and bounded) and MP-Mix, on explicit trees
(``oppmodel.modeling.perfect_info.search.tree``). Papers: 000 (prob-max^n), 001 (Max-Prob, MP-Mix),
002 (max^n, paranoid).
"""
