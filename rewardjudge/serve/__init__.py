"""``rewardjudge serve``: a grader as an HTTP reward server.

    rewardjudge serve --grader demo --judge http://127.0.0.1:8000/v1 --port 5000 --group-size 8

* ``POST /get_reward``: OpenRLHF's ``--remote_rm_url`` contract.
* ``POST /grade``: samples in, Grade records out.
* ``GET /health``, ``GET /metrics`` (Prometheus text).

It listens on 127.0.0.1 unless ``--host`` says otherwise; with ``--token``
(or ``$REWARDJUDGE_SERVE_TOKEN``) every endpoint but ``/health`` needs
``Authorization: Bearer <token>``. SIGTERM (or Ctrl-C) stops accepting,
answers the requests in flight, then exits.

``openrlhf_reward_func(spec, judge=URL)`` is the same grading as OpenRLHF's
``.py`` form: ``reward_func(queries, prompts, labels)``.
"""

from ._openrlhf import openrlhf_reward_func
from ._server import RewardServer

__all__ = ["RewardServer", "openrlhf_reward_func"]
