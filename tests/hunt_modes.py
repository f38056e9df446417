"""The run a hunt's held families end with: attacks through graders (default: every built-in
grader and declared form) in judge modes (default: every mode but ``truncated``, a cut-off reply
being never read) plus the hunt's own new modes, registered for the test only."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Mapping, Sequence

from rewardjudge import _naive_judges
from rewardjudge.attacks import (ATTACKS, BEHAVIOUR_MODES, COPYING_MODES, MODES, Attack, declared_form_targets,
                                 default_targets, run_attack_suite)


def held_report(monkeypatch: Any, held: Sequence[tuple[str, str]], new_modes: Mapping[str, Callable[..., str]],
                hunt: str, *, targets: Mapping[str, Any] | None = None,
                modes: Sequence[str] | None = None) -> tuple[dict[str, Any], Any]:
    """``(targets, report)`` of ``held`` (``(name, text)`` attacks) run as the hunt ``hunt``."""
    for name, mode in new_modes.items():
        monkeypatch.setitem(_naive_judges._JUDGE_MODES, name, mode)
    targets = dict(targets or {**default_targets(), **declared_form_targets()})
    if modes is None:
        modes = (*(m for m in dict.fromkeys(MODES + COPYING_MODES + BEHAVIOUR_MODES) if m != "truncated"),
                 *new_modes)
    report = asyncio.run(run_attack_suite(targets, [Attack(n, t, hunt) for n, t in held], modes))
    return targets, report


def held_failures(monkeypatch: Any, held: Sequence[tuple[str, str]], modes: Sequence[str], hunt: str) -> list[tuple]:
    """The failures (a few fields each, sorted) of a hunt's ``held`` attacks plus 16 of the corpus's forgeries, encoded
    and escaping attacks, through every grader in ``modes``; raises where nothing ran."""
    attacks = [a for a in ATTACKS if a.kind in ("forgery", "encoded", "escape")][:16]
    _, report = held_report(monkeypatch, [*held, *((a.name, a.text) for a in attacks)], {}, hunt, modes=modes)
    assert report.outcomes
    return sorted({(o.grader, o.mode, o.attack, o.status, o.benign_status, (o.reason or "")[:80])
                   for o in report.failures()})
