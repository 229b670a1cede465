"""What the benchmark scripts (``benchmarks/``) and the experiments (``experiments/``) share.

The scripts themselves are not installed; what two of them, or a test, import lives here: the
match-job runner on local cores or a Ray cluster (:mod:`.runner`), the resumable journal of
finished jobs (:mod:`.journal`), where reports go and what they record (:mod:`.reports`), the
memory of a server's process tree (:mod:`.process_tree`), and an agent whose hand cycle is timed
(:mod:`.timed_agent`).
"""
