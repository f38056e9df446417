"""Attack suite report: hostile completions through every grader.

    python -m bench attacks

Prints, per grader, how many attacks changed a grade through the library's
own parsing (target 0), how many moved the benign sample graded beside them
(target 0), how many were flagged before reaching a judge, left unscored,
held, or fooled a fully hijacked judge (reported, not preventable by a
parser). See rewardjudge/attacks.py for the corpus and the judge modes.
"""

from __future__ import annotations

import asyncio
import json

from rewardjudge.attacks import ATTACKS, MODES, run_attack_suite


def main() -> None:
    report = asyncio.run(run_attack_suite())
    print(f"{len(ATTACKS)} attacks x judge modes {', '.join(MODES)} (probability grader: 1 mode)\n")
    print(report.table())
    print("BENCH " + json.dumps({"bench": "attacks", "per_grader": report.summary(),
                                 "changed_by_parsing": sum(s["changed_by_parsing"]
                                                           for s in report.summary().values())}))


if __name__ == "__main__":
    main()
