"""What a suite's evaluations add up to: fast_p, geometric means, the per-problem table and its plot."""
