"""Autofuse benchmarks: ``python -m autofuse.bench`` (suite, table, JSON, plot) and ``--compile`` (compile time).

Modules: patterns (the suite), harness (timing), report (tables, summary, README block), plot (PNG),
compile_bench (cold and warm compile time in fresh processes).
"""
