"""Benchmarks of tenscalc: the problems (``benchmarks.problems``) and the scripts that time them."""
