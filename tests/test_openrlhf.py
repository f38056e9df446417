"""OpenRLHF 0.11.2 against rewardjudge serve, run through OpenRLHF's own installed code: its
advantage computation for every estimator (``RemoteExperienceMaker.compute_advantages_and_returns``,
the GPU parts stubbed), its reward client (``SingleTurnAgentExecutor``) on loopback, its
``train_ppo_ray`` argument parser, and our recipe."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import pathlib
import random
import socket
import subprocess
import sys
import types
from types import SimpleNamespace

import aiohttp
import pytest
import torch

from rewardjudge import ConfigError, Grade
from rewardjudge.serve import RewardServer
from rewardjudge.serve._groups import EXACT_ESTIMATORS, OPENRLHF_ESTIMATORS
from rewardjudge.serve._server import group_rewards
from rewardjudge.testing import FakeJudgeServer, ScriptedModel
from serve_judge import judge_fn, make_grader

ROOT = pathlib.Path(__file__).resolve().parent.parent
RECIPE = ROOT / "recipes" / "openrlhf_remote_rm.sh"

# OpenRLHF builds its parser inside `if __name__ == "__main__":` of cli/train_ppo_ray.py, then
# checks the arguments and calls train(args). This runs that block from the installed source with
# train() replaced: the flags meet OpenRLHF's own parser and checks, and no training starts.
PARSE_ONLY = r'''
import ast, importlib.util, json, os, sys


def parse(argv):
    origin = importlib.util.find_spec("openrlhf.cli.train_ppo_ray").origin
    with open(origin) as f:
        tree = ast.parse(f.read(), origin)
    main = next(n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))
    stdlib = [n for n in tree.body if (isinstance(n, ast.Import) and all(a.name in ("argparse", "os") for a in n.names))
              or (isinstance(n, ast.ImportFrom) and n.module == "datetime")]
    captured = {}
    namespace = {"__name__": "__main__", "train": lambda args: captured.setdefault("args", args)}
    saved, sys.argv = sys.argv, ["train_ppo_ray", *argv]
    try:
        exec(compile(ast.Module(body=stdlib + main.body, type_ignores=[]), origin, "exec"), namespace)
    finally:
        sys.argv = saved
    return captured["args"]


def flat(ns, prefix=""):
    out = {}
    for k, v in vars(ns).items():
        if type(v).__name__ == "SimpleNamespace":
            out.update(flat(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


if __name__ == "__main__":  # as `python -m openrlhf.cli.train_ppo_ray ARGS`
    argv = sys.argv[1:]
    assert argv[:2] == ["-m", "openrlhf.cli.train_ppo_ray"], argv[:2]
    with open(os.environ["OPENRLHF_ARGS_OUT"], "w") as f:
        json.dump(flat(parse(argv[2:])), f, default=str)
'''
_parse_ns: dict = {}
exec(PARSE_ONLY, _parse_ns)
openrlhf_args = _parse_ns["parse"]


def estimator_args(estimator: str, n: int, *extra: str):
    return openrlhf_args(["--algo.advantage.estimator", estimator, "--rollout.n_samples_per_prompt", str(n),
                          "--algo.kl.init_coef", "0", "--rollout.micro_batch_size", "4",
                          "--reward.remote_url", "http://127.0.0.1:5000/get_reward", *extra])


@pytest.fixture(scope="module")
def orl():
    """OpenRLHF's experience maker, loaded from its installed files without the GPU stack
    (deepspeed, vLLM, the Ray actor classes) that its package __init__ files import."""
    import openrlhf

    root = pathlib.Path(openrlhf.__file__).parent

    def package(name, path):
        mod = types.ModuleType(name)
        mod.__path__ = [str(path)]
        return mod

    launcher = types.ModuleType("openrlhf.trainer.ray.launcher")
    launcher.RayActorGroup = object
    stubs = {"deepspeed": types.ModuleType("deepspeed"),
             "openrlhf.models": package("openrlhf.models", root / "models"),
             "openrlhf.trainer.ppo_utils": package("openrlhf.trainer.ppo_utils", root / "trainer" / "ppo_utils"),
             "openrlhf.trainer.ray": package("openrlhf.trainer.ray", root / "trainer" / "ray"),
             "openrlhf.trainer.ray.launcher": launcher}
    loaded = ["openrlhf.models.utils", "openrlhf.trainer.ppo_utils.experience", "openrlhf.trainer.ppo_utils.length_penalty",
              "openrlhf.trainer.ppo_utils.kl_controller", "openrlhf.trainer.ppo_utils.experience_maker"]
    saved = {name: sys.modules.get(name) for name in [*stubs, *loaded]}
    sys.modules.update(stubs)
    try:
        em = importlib.import_module("openrlhf.trainer.ppo_utils.experience_maker")
        kl = importlib.import_module("openrlhf.trainer.ppo_utils.kl_controller")
    finally:
        for name, mod in saved.items():
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod
    return SimpleNamespace(em=em, Experience=em.Experience, FixedKLController=kl.FixedKLController)


def maker(orl, args):
    m = orl.em.RemoteExperienceMaker.__new__(orl.em.RemoteExperienceMaker)
    m.strategy, m.args = SimpleNamespace(args=args), args
    m.advantage_estimator = args.algo.advantage.estimator
    m.kl_ctl = orl.FixedKLController(args.algo.kl.init_coef)
    m.tokenizer = SimpleNamespace(pad_token_id=0)
    m.reward_model_group = None
    return m


def rollout(orl, rewards, lengths, values=None, kl=None):
    """One Experience per sample, as OpenRLHF's samples generator makes them after the reward call."""
    out = []
    for i, (r, t) in enumerate(zip(rewards, lengths)):
        out.append(orl.Experience(
            sequences=torch.ones(1, t + 3, dtype=torch.long), attention_mask=torch.ones(1, t + 3, dtype=torch.long),
            action_mask=torch.ones(1, t, dtype=torch.bool),
            rewards=None if r is None else torch.tensor([float(r)]),
            response_length=torch.tensor([t]), total_length=torch.tensor([t + 3]),
            values=torch.zeros(1, t) if values is None else values[i].unsqueeze(0),
            kl=torch.zeros(1, t) if kl is None else kl[i].unsqueeze(0), info={}))
    return out


def openrlhf_advantages(orl, args, rewards, lengths, values=None, kl=None) -> list[torch.Tensor]:
    """OpenRLHF's own split into micro-batches and compute_advantages_and_returns; each sample's
    per-token advantages, in rollout order."""
    m = maker(orl, args)
    batches = m.split_rollout_samples(rollout(orl, rewards, lengths, values, kl))
    batches = m.compute_advantages_and_returns(batches)
    out: dict[int, torch.Tensor] = {}
    for exp in batches:
        for row, i in enumerate(exp.index):
            out[i] = exp.advantages[row, :lengths[i]].clone()
    return [out[i] for i in range(len(rewards))]


def judge_batch(seed: int, groups: int, n: int, per_group_unscored: list[int] | None = None):
    """Grades of a rollout (groups x n, grouped by prompt), ~30% unscored."""
    rng = random.Random(seed)
    grades, keys, lengths = [], [], []
    for g in range(groups):
        bad = per_group_unscored[g] if per_group_unscored else sum(rng.random() < 0.3 for _ in range(n))
        failed = set(rng.sample(range(n), bad))
        for j in range(n):
            grades.append(Grade(None, "j", error="JudgeTimeoutError: slow") if j in failed
                          else Grade(round(rng.random(), 3), "j"))
            keys.append(f"prompt {g}")
            lengths.append(rng.randint(2, 9))
    return grades, keys, lengths


def max_diff(adv, ref_by_index, unscored) -> float:
    worst = 0.0
    for i, a in enumerate(adv):
        target = torch.zeros_like(a) if i in unscored else ref_by_index[i]
        worst = max(worst, (a - target).abs().max().item())
    return worst


def estimator_figure(orl, estimator: str, stand: str = "group_mean", kl_in_reward: bool = False) -> float:
    """Max abs difference between OpenRLHF's advantages with the server's stand-in rewards and
    what they should be: 0 for an unscored sample, and for the others OpenRLHF's advantages of
    the same rollout with the unscored samples left out (6 prompts x 10, 3 unscored each)."""
    groups, n, bad = 6, 10, 3
    grades, keys, lengths = judge_batch(7, groups, n, [bad] * groups)
    rewards = group_rewards(grades, keys) if stand == "group_mean" else \
        [float(g.value) if g.status != "unscored" else float(stand) for g in grades]
    unscored = {i for i, g in enumerate(grades) if g.status == "unscored"}
    kept = [i for i in range(len(grades)) if i not in unscored]
    gen = torch.Generator().manual_seed(3)
    values = [torch.rand(t, generator=gen) for t in lengths]
    kl = [torch.rand(t, generator=gen) * 0.1 for t in lengths] if kl_in_reward else None
    extra = ("--algo.kl.init_coef", "0.05") if kl_in_reward else ()
    full = openrlhf_advantages(orl, estimator_args(estimator, n, *extra), rewards, lengths, values, kl)
    ref = openrlhf_advantages(orl, estimator_args(estimator, n - bad, *extra), [rewards[i] for i in kept],
                              [lengths[i] for i in kept], [values[i] for i in kept],
                              None if kl is None else [kl[i] for i in kept])
    return max_diff(full, dict(zip(kept, ref)), unscored)


def test_openrlhf_estimator_list_is_ours():
    for estimator in OPENRLHF_ESTIMATORS:  # every one we know, OpenRLHF's parser takes
        assert estimator_args(estimator, 2).algo.advantage.estimator == estimator
    with pytest.raises(SystemExit):  # and it refuses one it does not have
        estimator_args("not_an_estimator", 2)


@pytest.mark.parametrize("estimator", OPENRLHF_ESTIMATORS)
def test_each_estimator_is_exact_or_refused(orl, estimator):
    figure = estimator_figure(orl, estimator)
    figures = [figure] + ([estimator_figure(orl, estimator, stand="0.0")]
                          if estimator in ("reinforce", "flash_reinforce", "gae") else [])
    print(f"{estimator}: max abs advantage diff {', '.join(f'{f:.3g}' for f in figures)}")
    if estimator in EXACT_ESTIMATORS:
        assert figure <= 1e-6
        RewardServer(make_grader(), estimator=estimator)  # accepted
    else:
        assert min(figures) > 1e-3  # no stand-in we could give is exact: so it is refused at start
        with pytest.raises(ConfigError, match="--estimator dr_grpo") as err:
            RewardServer(make_grader(), estimator=estimator)
        assert "--algo.advantage.estimator dr_grpo" in str(err.value) and "KL" in str(err.value)


def test_kl_in_the_reward_breaks_dr_grpo_as_the_refusals_say(orl):
    figure = estimator_figure(orl, "dr_grpo", kl_in_reward=True)
    print(f"dr_grpo with KL in the reward: max abs advantage diff {figure:.3g}")
    assert figure > 1e-3


def test_dr_grpo_random_failures_one_usable_and_all_unscored_groups(orl):
    # ~30% failures at random, plus a group left with one usable sample and one with none
    grades, keys, lengths = judge_batch(11, 8, 4)
    for j in range(3):
        grades[j] = Grade(None, "j", error="JudgeHTTPError: 503")
    for j in range(4, 8):
        grades[j] = Grade(None, "j", error="JudgeHTTPError: 503")
    rewards = group_rewards(grades, keys)
    adv = openrlhf_advantages(orl, estimator_args("dr_grpo", 4), rewards, lengths)
    unscored = {i for i, g in enumerate(grades) if g.status == "unscored"}
    assert 0.2 < len(unscored) / len(grades) < 0.6
    ref = {}
    for g in range(8):  # each group alone, its unscored samples left out, through OpenRLHF's code
        kept = [i for i in range(4 * g, 4 * g + 4) if i not in unscored]
        if kept:
            args = estimator_args("dr_grpo", 2)
            args.rollout.n_samples_per_prompt = len(kept)  # a group of one: OpenRLHF's CLI wants > 1
            ref.update(zip(kept, openrlhf_advantages(orl, args, [rewards[i] for i in kept], [lengths[i] for i in kept])))
    assert max_diff(adv, ref, unscored) <= 1e-6
    assert adv[3].abs().max().item() == 0.0  # the one usable sample of its group: advantage 0


# -- the server through OpenRLHF's reward client --------------------------------------------------

@pytest.fixture(scope="module")
def tok():
    from rewardjudge.rl._policies import smollm2_tokenizer

    return smollm2_tokenizer()


class _Out:
    def __init__(self, ids):
        self.token_ids, self.finish_reason, self.logprobs, self.text = ids, "stop", None, ""


class _Engine:
    """Stands in for OpenRLHF's vLLM engine: answers with a fixed text."""

    def __init__(self, tok, answer):
        self.ids = tok(answer + "<|im_end|>", add_special_tokens=False)["input_ids"]

    async def generate(self, prompt_token_ids, params, multi_modal_data=None):
        return SimpleNamespace(outputs=[_Out(list(self.ids))])


class _Params:
    max_tokens, logprobs = 16, None


async def openrlhf_reward(url, tok, question, answer, label):
    """OpenRLHF's own single-turn executor: generation stubbed, the reward call real."""
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    prompt = tok.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                     add_generation_prompt=True)
    return await SingleTurnAgentExecutor(remote_rm_url=url).execute(prompt, label, _Params(), 512, tok,
                                                                      _Engine(tok, answer))


@pytest.fixture
def quick_retries(monkeypatch):
    """OpenRLHF's client sleeps 1 s between its 5 tries: not in these tests."""
    import openrlhf.utils.agent as agent

    class FastAsyncio:
        def __getattr__(self, name):
            return getattr(asyncio, name)

        @staticmethod
        async def sleep(_seconds):
            await asyncio.sleep(0)

    monkeypatch.setattr(agent, "asyncio", FastAsyncio())


def reward(out):
    """What OpenRLHF's client made of the reply: a float, or None when it gave up."""
    return None if out["reward"] is None else out["reward"][0]


def flag(out, name):
    return out["extra_logs"][name][0]


def _answers(seed, prompts, n):
    """~30% judge failures, a group left with one usable answer and a group with none."""
    rng = random.Random(seed)
    out = []
    for p in range(prompts):
        for j in range(n):
            if p == 0:
                a = "4" if j == 0 else "boom"
            elif p == 1:
                a = "boom"
            else:
                a = "boom" if rng.random() < 0.2 else rng.choice(["4", "5"])
            out.append((f"q{p}: 2+2?", a))
    return out


async def test_dr_grpo_through_openrlhf_client_and_estimator(orl, tok):
    n = 4
    model = ScriptedModel(judge_fn)
    async with RewardServer(make_grader(model), estimator="dr_grpo", group_size=n) as server:
        samples = _answers(5, 6, n)
        outs = await asyncio.gather(*(openrlhf_reward(f"{server.url}/get_reward", tok, q, a, "4")
                                      for q, a in samples))
    assert len(model.calls) == len(samples)  # each sample judged once
    rewards = [reward(o) for o in outs]
    unscored = {i for i, o in enumerate(outs) if flag(o, "unscored") == 1.0}
    assert unscored == {i for i, (_, a) in enumerate(samples) if a == "boom"}
    assert 0.25 < len(unscored) / len(samples) < 0.6
    assert all(flag(o, "group_partial") == 0.0 for o in outs)
    assert all(isinstance(r, float) for r in rewards)
    lengths = [3 + i % 5 for i in range(len(samples))]
    adv = openrlhf_advantages(orl, estimator_args("dr_grpo", n), rewards, lengths)
    ref = {}
    for g in range(6):
        kept = [i for i in range(n * g, n * g + n) if i not in unscored]
        if kept:
            args = estimator_args("dr_grpo", 2)
            args.rollout.n_samples_per_prompt = len(kept)
            ref.update(zip(kept, openrlhf_advantages(orl, args, [rewards[i] for i in kept],
                                                     [lengths[i] for i in kept])))
    assert max_diff(adv, ref, unscored) <= 1e-6
    assert adv[0].abs().max().item() == 0.0  # alone in its group: advantage 0
    assert rewards[4:8] == [0.0] * 4  # a group with no usable reward: one constant, advantage 0


async def test_group_learned_from_prompts_late_samples_and_no_silent_zero(tok):
    model = ScriptedModel(judge_fn)
    async with RewardServer(make_grader(model), estimator="dr_grpo", group_timeout=1.0) as server:
        url = f"{server.url}/get_reward"
        # no --group-size: the first group is complete when its prompt goes quiet
        first = await asyncio.gather(*(openrlhf_reward(url, tok, "a: 2+2?", x, "4") for x in ("4", "5", "4", "boom")))
        assert reward(first[3]) == pytest.approx(2 / 3)  # the group's mean, not 0.0
        assert flag(first[3], "group_partial") == 1.0  # said: the group was taken as complete when quiet
        assert server._groups.learned == 4
        # now a group of 4 is known complete without waiting for quiet
        second = await asyncio.gather(*(openrlhf_reward(url, tok, "b: 2+2?", x, "4") for x in ("5", "boom", "4", "4")))
        assert reward(second[1]) == pytest.approx(2 / 3) and flag(second[1], "group_partial") == 0.0
        # a sample arriving after its group went quiet is judged with the group's known results
        part = await asyncio.gather(*(openrlhf_reward(url, tok, "c: 2+2?", x, "4") for x in ("4", "5")))
        assert [reward(o) for o in part] == [1.0, 0.0]
        await asyncio.sleep(2.0)  # prompt c is quiet now
        late = await openrlhf_reward(url, tok, "c: 2+2?", "boom", "4")
        assert reward(late) == pytest.approx(0.5) and flag(late, "unscored") == 1.0
        assert flag(late, "group_partial") == 1.0 and len(model.calls) == 11


async def test_scored_samples_are_answered_without_waiting_for_siblings(tok):
    async with RewardServer(make_grader(), estimator="dr_grpo", group_size=4, group_timeout=600) as server:
        out = await asyncio.wait_for(openrlhf_reward(f"{server.url}/get_reward", tok, "2+2?", "4", "4"), 60)
    assert reward(out) == 1.0  # its three siblings never came; a scored sample needs none


async def test_identical_siblings_count_and_a_retried_request_is_answered_once(tok, monkeypatch, quick_retries):
    model = ScriptedModel(judge_fn)
    async with RewardServer(make_grader(model), estimator="dr_grpo", group_size=4, group_timeout=600) as server:
        url = f"{server.url}/get_reward"
        # a policy can write the same answer three times: three members, not a retry
        outs = await asyncio.wait_for(asyncio.gather(
            *(openrlhf_reward(url, tok, "a: 2+2?", x, "4") for x in ("4", "4", "4", "boom"))), 60)
        assert [reward(o) for o in outs] == [1.0, 1.0, 1.0, 1.0]
        assert flag(outs[3], "group_partial") == 0.0 and len(model.calls) == 4

        # OpenRLHF's client gives up after its timeout (180 s; 1 s here) and sends the same request again
        real_timeout = aiohttp.ClientTimeout
        monkeypatch.setattr(aiohttp, "ClientTimeout", lambda total: real_timeout(total=1.0))
        waiting = asyncio.ensure_future(openrlhf_reward(url, tok, "b: 2+2?", "boom", "4"))
        async def retried():
            while not server._groups.retries:
                await asyncio.sleep(0.05)
        await asyncio.wait_for(retried(), 60)  # its first request timed out and it came again
        monkeypatch.setattr(aiohttp, "ClientTimeout", real_timeout)
        siblings = await asyncio.gather(*(openrlhf_reward(url, tok, "b: 2+2?", x, "4") for x in ("4", "5", "4")))
        out = await asyncio.wait_for(waiting, 60)
    assert [reward(o) for o in siblings] == [1.0, 0.0, 1.0]
    assert reward(out) == pytest.approx(2 / 3) and flag(out, "group_partial") == 0.0
    assert len(model.calls) == 8  # the retried sample was judged once and counted once in its group


async def test_outage_guard_stops_openrlhf(orl, tok, quick_retries):
    model = ScriptedModel(judge_fn)
    async with RewardServer(make_grader(model), estimator="dr_grpo", group_size=4, outage_threshold=0.5,
                            outage_steps=2, outage_window=4) as server:
        url = f"{server.url}/get_reward"
        ok = await asyncio.gather(*(openrlhf_reward(url, tok, "a: 2+2?", x, "4") for x in ("4", "boom", "boom", "4")))
        assert [reward(o) for o in ok] == [1.0, 1.0, 1.0, 1.0]  # one window at 50%: not over the threshold
        down = await asyncio.gather(*(openrlhf_reward(url, tok, f"{p}: 2+2?", "boom", "4")
                                      for p in ("b", "b", "b", "b", "c", "c", "c", "c")))
        async with aiohttp.ClientSession() as s:
            async with s.post(url, json={"query": ["x 4"], "prompts": ["x"], "labels": ["4"]}) as r:
                status, body = r.status, await r.json()
            async with s.post(f"{server.url}/grade", json={"samples": [{"prompt": "x", "completion": "4"}]}) as r:
                assert r.status == 503 and "judge outage" in (await r.json())["error"]
    assert server.outage is not None
    assert status == 503 and "judge outage" in body["error"] and body["health"]["judge/unscored_rate"] == 1.0
    assert any(reward(o) is None for o in down)  # OpenRLHF's client gave up on that sample...
    # ... and OpenRLHF's experience maker stops the run on a sample without a reward
    args = estimator_args("dr_grpo", 4)
    rewards = [reward(o) for o in down]
    m = maker(orl, args)
    samples = m.split_rollout_samples(rollout(orl, sorted(rewards, key=lambda r: r is not None), [3] * 8))
    m.actor_model_group = m.critic_model_group = m.initial_model_group = None
    orl.em.ray, saved = SimpleNamespace(put=lambda x: x), orl.em.ray
    try:
        with pytest.raises(ValueError, match="reward_model_group is required"):
            m.make_experience(samples)
    finally:
        orl.em.ray = saved


def test_py_form_is_refused_when_openrlhf_loads_it(tmp_path):
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    rf = tmp_path / "reward.py"
    rf.write_text("from rewardjudge.serve import openrlhf_reward_func\n"
                  "reward_func = openrlhf_reward_func('demo', judge='http://127.0.0.1:9/v1', estimator='dr_grpo')\n")
    with pytest.raises(ConfigError) as err:
        SingleTurnAgentExecutor(remote_rm_url=str(rf))  # OpenRLHF loads the file when its engines start
    assert "--reward.remote_url http://127.0.0.1:5000/get_reward" in str(err.value)
    assert "rewardjudge serve" in str(err.value) and "--estimator dr_grpo" in str(err.value)


def test_get_reward_without_estimator_is_refused_not_guessed():
    async def run():
        async with RewardServer(make_grader()) as server:
            async with aiohttp.ClientSession() as s:
                async with s.post(f"{server.url}/get_reward",
                                  json={"query": ["q boom"], "prompts": ["q"], "labels": ["4"]}) as r:
                    return r.status, await r.json()

    status, body = asyncio.run(run())
    assert status == 500 and "--estimator dr_grpo" in body["error"]


def test_serve_refuses_an_estimator_at_start():
    proc = subprocess.run([sys.executable, "-m", "rewardjudge", "serve", "--grader", "demo", "--judge",
                           "http://127.0.0.1:9/v1", "--estimator", "group_norm"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "group_norm" in proc.stderr and "--estimator dr_grpo" in proc.stderr and "std" in proc.stderr


# -- the recipe ----------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _recipe_env(tmp_path, **extra):
    """The recipe's commands: `rewardjudge` from this venv and, as python, OpenRLHF's own parser only."""
    (tmp_path / "parse_only.py").write_text(PARSE_ONLY)
    fake_python = tmp_path / "python-parse-only"
    fake_python.write_text(f"#!/bin/sh\nexec {sys.executable} {tmp_path / 'parse_only.py'} \"$@\"\n")
    fake_python.chmod(0o755)
    env = {**os.environ, "PATH": f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHON": str(fake_python), "OPENRLHF_ARGS_OUT": str(tmp_path / "args.json"),
           "REWARDJUDGE_PORT": str(_free_port())}
    env.update(extra)
    return env


def test_recipe_flags_parse_with_openrlhf_and_keep_dr_grpo_exact(tmp_path):
    with FakeJudgeServer() as judge:
        env = _recipe_env(tmp_path, REWARDJUDGE_JUDGE=judge.url, REWARDJUDGE_JUDGE_MODEL="fake-judge",
                          N_SAMPLES="4")
        proc = subprocess.run(["bash", str(RECIPE)], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    args = json.loads((tmp_path / "args.json").read_text())
    assert args["algo.advantage.estimator"] in EXACT_ESTIMATORS
    assert args["reward.remote_url"] == [f"http://127.0.0.1:{env['REWARDJUDGE_PORT']}/get_reward"]  # one URL
    assert args["rollout.n_samples_per_prompt"] == 4
    assert args["algo.kl.use_loss"] or args["algo.kl.init_coef"] == 0  # no KL in the reward
    assert args["reward.overlong_buffer_len"] is None and args["reward.stop_properly_penalty_coef"] is None
    assert "--estimator dr_grpo" in RECIPE.read_text() and '--group-size "$N"' in RECIPE.read_text()
    assert "drained" in proc.stderr  # the server was up, then stopped by the recipe's exit trap


def test_recipe_stops_when_serve_dies_at_start(tmp_path):
    env = _recipe_env(tmp_path, REWARDJUDGE_GRADER="no_such_module:nothing")
    proc = subprocess.run(["bash", str(RECIPE)], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode != 0
    assert "exited at start" in proc.stderr and not (tmp_path / "args.json").exists()


def test_recipe_start_wait_has_a_deadline(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rewardjudge").write_text("#!/bin/sh\nexec sleep 600\n")  # a server that never answers
    (bin_dir / "rewardjudge").chmod(0o755)
    env = _recipe_env(tmp_path, REWARDJUDGE_START_TIMEOUT="2")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(["bash", str(RECIPE)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "not answering after 2" in proc.stderr
    assert not (tmp_path / "args.json").exists()
