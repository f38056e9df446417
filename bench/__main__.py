"""Run every ``bench/bench_*.py`` module's ``main()``, each in its own process.

A separate interpreter per benchmark keeps one's imports (torch, a spawned
judge) and event-loop state from skewing another's figures.

    python -m bench                  # all of them
    python -m bench overhead throughput   # only these (module names without bench_)
    python -m bench eval_memory           # evaluate_dataset's peak RSS at 50,000 and 1,000,000 rows
    python -m bench linear                # worst time of every policy-text pass on hostile 256 KiB inputs
    python -m bench --list
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover() -> list[str]:
    return sorted(p.stem for p in HERE.glob("bench_*.py"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("only", nargs="*", help="benchmarks to run (e.g. overhead throughput)")
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = p.parse_args(argv)
    names = discover()
    if args.list:
        print("\n".join(names))
        return 0
    if args.only:
        wanted = {n if n.startswith("bench_") else f"bench_{n}" for n in args.only}
        unknown = wanted - set(names)
        if unknown:
            p.error(f"unknown benchmark(s) {sorted(unknown)}; known: {names}")
        names = [n for n in names if n in wanted]
    failed = []
    for name in names:
        print(f"\n===== {name} =====", flush=True)
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, "-c", f"import bench.{name} as m; m.main()"],
                               cwd=HERE.parent)
        print(f"===== {name}: {'ok' if code == 0 else f'FAILED (exit {code})'} "
              f"in {time.perf_counter() - t0:.0f} s =====", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
