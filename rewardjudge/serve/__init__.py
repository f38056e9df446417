"""``rewardjudge serve``: a grader as an HTTP reward server.

    rewardjudge serve --grader demo --judge http://127.0.0.1:8000/v1 --port 5000 --estimator dr_grpo --group-size 8

* ``POST /get_reward``: OpenRLHF's ``--reward.remote_url`` contract. It needs
  ``--estimator`` (OpenRLHF's ``--algo.advantage.estimator``): only
  ``dr_grpo`` can give a sample the judge could not score advantage 0 with
  its group unchanged; the others are refused at start. Give OpenRLHF one
  URL: several comma-separated URLs split every group across servers.
* ``POST /grade``: samples in, Grade records out.
* ``GET /health``, ``GET /metrics`` (Prometheus text).

It listens on 127.0.0.1 unless ``--host`` says otherwise; with ``--token``
(or ``$REWARDJUDGE_SERVE_TOKEN``) every endpoint but ``/health`` needs
``Authorization: Bearer <token>``. SIGTERM (or Ctrl-C) stops accepting,
answers the requests in flight, then exits.

OpenRLHF's ``.py`` form (``reward_func = openrlhf_reward_func(...)``) is
refused when OpenRLHF loads the file, naming this HTTP form: waiting there
for a group would hold OpenRLHF's small thread pool.
"""

from ._openrlhf import openrlhf_reward_func
from ._server import RewardServer

__all__ = ["RewardServer", "openrlhf_reward_func"]
