"""rewardjudge benchmarks: ``python -m bench`` (or ``make bench``) runs them all.

Each ``bench/bench_*.py`` module defines ``main()``, prints a table and one
``BENCH {json}`` line, and reports ratios measured in one run.
"""
