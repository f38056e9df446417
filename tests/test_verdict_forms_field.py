"""Declared verdict forms against the rules of the field's judge pipelines, on replies
written in each pipeline's style (test_real_judges.py replays stored real replies).

Each pipeline's parser is restated below from its own source file (named in its
docstring; no code copied), and each case is a reply as its judges write it: bold
markdown, a full stop or more words after the verdict, the verdict mid-line, the
scale restated, the rubric's example quoted before the judge's own verdict. A case
says how the declared form's reading (``VerdictForm.read``, unsealed) relates to the
parser's:

* ``agree``: the same verdict, or both none;
* ``two``: the judge wrote two different verdicts: the form reads the last and lists
  the others, the parser takes one of them (its rule says which), or none;
* ``here only``: the parser reads nothing (or fails) where the form reads the
  verdict the judge wrote;
* ``there only``: the parser reads a verdict the form does not (a parser artefact,
  or a habit outside the form), each one named in docs/judges.md's caveats.
"""

from __future__ import annotations

import ast
import json
import re
import string
from typing import Any, Callable, Optional

import pytest

import test_real_judges as real      # Shaberi's parsers, replayed there on real replies
from rewardjudge.readouts._forms import VerdictForm


# ----------------------------------------------------------- the pipelines' rules
_PROMETHEUS_ABS = re.compile(
    r"(?:\[RESULT\]|\[SCORE\]|Score:?|Result:?|\[Result\]:?|score\s+of)\s*(?:\(|\[|\s)*(\d+)"
    r"(?:(?:\)|\]|\s|$)|(?:/\s*5|\s*out\s*of\s*5))?\s*$", re.IGNORECASE)
_PROMETHEUS_ABS_019 = re.compile(
    r"(?:\[RESULT\]|\[SCORE\]|Score:?|Result:?|\[Result\]:?|score\s+of)\s*(?:\(|\[|\s)*(\d+)"
    r"(?:(?:\)|\]|\s|$)|(?:/\s*5|\s*out\s*of\s*5))", re.IGNORECASE)


def prometheus_absolute(reply: str) -> Optional[int]:
    """prometheus-eval libs/prometheus-eval/prometheus_eval/parser.py, _parse_output_absolute, as released
    in 0.1.20 (commit 8eee0ba, "fix of score regex"): a ``[RESULT]``/``Score:``/``Result:``/``score of``
    (any case) then, past brackets and spaces, an integer, maybe closed by a bracket, ``/5`` or ``out of
    5``, and nothing after it but whitespace: the verdict that ends the reply (its own test: "Reference
    (Score 5) two results [RESULT] 3" is 3); 1-5, else none."""
    m = _PROMETHEUS_ABS.search(reply)
    return int(m.group(1)) if m and 1 <= int(m.group(1)) <= 5 else None


def prometheus_absolute_019(reply: str) -> Optional[int]:
    """The same function in prometheus-eval 0.1.18 and 0.1.19 (commits 4cc2983, a6938ea): the first
    such integer anywhere, closed by a bracket, a space, the end, ``/5`` or ``out of 5``; 1-5, else none."""
    m = _PROMETHEUS_ABS_019.search(reply)
    return int(m.group(1)) if m and 1 <= int(m.group(1)) <= 5 else None


_PROMETHEUS_REL = re.compile(
    r"(?:\[RESULT\]|\[RESULT:\s*|\[Response\s+|\[Result\](?:\s+Response)?|\[Result:\s*|(?:^|\n)Result:?\s*)"
    r"\s*(A|B)\]?\s*$", re.IGNORECASE | re.MULTILINE)


def prometheus_relative(reply: str) -> Optional[str]:
    """prometheus-eval parser.py, _parse_output_relative (0.1.20): the first ``[RESULT] A``, ``[RESULT: B]``,
    ``[Response B]``, ``[Result] Response A`` or ``Result: B`` at a line's start (any case) that ends its
    line (a closing bracket and spaces allowed); upper-cased."""
    m = _PROMETHEUS_REL.search(reply)
    return m.group(1).upper() if m else None


def autoj_single(reply: str) -> Optional[float]:
    """GAIR-NLP/auto-j codes/usage/example.py, extract_single_rating: the last ``Rating: [[`` (exact
    case), the text up to the next ``]]`` stripped, as a float; none -> 0.0 there (None here)."""
    at = reply.rfind("Rating: [[")
    if at < 0:
        return None
    end = reply.find("]]", at)
    return float(reply[at + len("Rating: [["):end].strip())


def autoj_pair(reply: str) -> Optional[str]:
    """auto-j example.py, extract_pariwise_result: after the last ``final decision is `` the rest,
    stripped and lower-cased, starting ``response 1``, ``response 2`` or ``tie``; else -1 (None)."""
    at = reply.strip().rfind("final decision is ")
    if at < 0:
        return None
    rest = reply.strip()[at + len("final decision is "):].strip().lower()
    return next((lab for lab in ("response 1", "response 2", "tie") if rest.startswith(lab)), None)


def two_scores(reply: str) -> Optional[float]:
    """JudgeLM judgelm/llm_judge/common.py (and Vicuna's, LLaVA's, QLoRA's parse_score): the first line,
    commas made spaces, split on single spaces: exactly two numbers; the second (answer 2's) here."""
    parts = reply.split("\n")[0].replace(",", " ").split(" ")
    try:
        return float(parts[1]) if len(parts) == 2 and float(parts[0]) >= 0 else None
    except ValueError:
        return None


def pandalm(reply: str) -> Optional[str]:
    """WeOpenML/PandaLM pandalm/utils/pandalm_inference.py, parse_pandalm_response: the first line of
    the stripped reply, ``1``/``2`` or ``tie`` in any case; anything else is a tie there (None here)."""
    first = reply.strip().split("\n")[0]
    return first if first in ("1", "2") else "Tie" if first.lower() == "tie" else None


def fastchat_single(reply: str) -> Optional[float]:
    """lm-sys/FastChat fastchat/llm_judge/common.py, run_judge_single: the first ``[[n]]``, else the
    first ``[n]``; none -> -1 there (None here)."""
    m = re.search(r"\[\[(\d+\.?\d*)\]\]", reply) or re.search(r"\[(\d+\.?\d*)\]", reply)
    return float(m.group(1)) if m else None


def mtbench101(reply: str) -> Optional[int]:
    """open-compass opencompass/datasets/subjective/mtbench101.py, post_process_mtbench101: the first
    ``[digits]`` anywhere (inside ``[[5]]`` too)."""
    m = re.search(r"\[([0-9]+)\]", reply)
    return int(m.group(1)) if m else None


def ultrafeedback(reply: str) -> Optional[int]:
    """OpenBMB/UltraFeedback src/data_annotation/annotate_preference.py, process: per ``\\n\\n`` section,
    ``Rating: (.+?)\\nRationale: `` and the first whole number in the rating text (``N/A``: none)."""
    for section in reply.split("\n\n"):
        m = re.search(r"Rating: (.+?)\nRationale: (.+)", section, re.DOTALL)
        if m:
            found = re.findall(r"\b\d+\b", m.group(1))
            return int(found[0]) if found and m.group(1) != "N/A" else None
    return None


def rewardbench_pair(reply: str) -> Optional[str]:
    """allenai/reward-bench rewardbench/generative.py, process_judgement (and Skywork-Critic's use of
    it): ``[[A]]`` anywhere -> A, else ``[[B]]`` -> B, else an error (None)."""
    return "A" if "[[A]]" in reply else "B" if "[[B]]" in reply else None


def offsetbias(reply: str) -> Optional[str]:
    """reward-bench generative.py, process_judgement with model_modifier "offsetbias": ``Output (a)``
    anywhere -> a, else ``Output (b)`` -> b."""
    return "a" if "Output (a)" in reply else "b" if "Output (b)" in reply else None


def arena_hard_v2(reply: str) -> Optional[str]:
    """lmarena/arena-hard-auto gen_judgment.py, get_score (v2): every ``[[...]]`` of ``A B < > =`` in the
    upper-cased reply; the last."""
    found = [m for m in re.findall(r"\[\[([AB<>=]+)\]\]", reply.upper()) if m]
    return found[-1] if found else None


def atla(reply: str) -> Optional[str]:
    """reward-bench generative.py, process_judgement with model_modifier "Atla": the first
    ``**Result:**`` and the word after it."""
    m = re.search(r"\*\*Result:\*\*\s*(\w+)", reply, re.DOTALL)
    return m.group(1) if m else None


def fenced_json(key: str) -> Callable[[str], Any]:
    def parse(reply: str) -> Any:
        """WildBench src/openai_batch_eval (score and pairwise modes): the reply, its markdown code
        fence removed, decoded as JSON; the key's value ("score": "7" or 7, "choice": "A+")."""
        text = re.sub(r"^```(?:json)?\s*|\s*```$", "", reply.strip())
        try:
            obj = json.loads(text)
        except ValueError:
            return None
        value = obj.get(key) if isinstance(obj, dict) else None
        return value if key == "choice" or value is None else float(value)
    return parse


def score_tag(reply: str) -> Optional[float]:
    """A ``<score>`` tag, as reasoning-judge pipelines read it, the first (e.g.
    ``re.search(r"<score>\\s*(\\d+(?:\\.\\d+)?)\\s*</score>")``)."""
    m = re.search(r"<score>\s*(\d+(?:\.\d+)?)\s*</score>", reply)
    return float(m.group(1)) if m else None


def score_colon(reply: str) -> Optional[float]:
    """The common ``Score: n`` parser (``re.findall(r"Score:\\s*\\**\\s*(\\d+(?:\\.\\d+)?)", reply, re.I)``, the
    last; e.g. "Score: 7/10", "**Score:** 8", "Final Score: 9.5")."""
    found = re.findall(r"Score:\s*\**\s*(\d+(?:\.\d+)?)", reply, re.IGNORECASE)
    return float(found[-1]) if found else None


def answer_is(reply: str) -> Optional[str]:
    """TIGER-AI-Lab/MMLU-Pro evaluate_from_api.py, extract_answer's first rule: the first ``answer is``,
    an optional parenthesis, one letter A-J."""
    m = re.search(r"answer is \(?([A-J])\)?", reply)
    return m.group(1) if m else None


def pair_judge(reply: str) -> Optional[int]:
    """patrickrchao/JailbreakingLLMs judges.py, process_output (PAIR's judge, "Rating: [[rating]]"):
    the first ``[[digits]]``."""
    m = re.search(r"\[\[(\d+)\]\]", reply)
    return int(m.group(1)) if m else None


def geval(reply: str) -> Optional[float]:
    """nlpyang/geval gpt4_eval.py / meta_eval_summeval.py, parse_output: a number at the reply's start
    (one space allowed); none -> 0 there (None here)."""
    m = re.search(r"^ ?([\d.]+)", reply)
    try:
        return float(m.group(1)) if m else None
    except ValueError:
        return None


_ALIGNBENCH_LAST_DICT = re.compile(r"{(.*?)}(?![^{]*{)")


def alignbench(reply: str) -> Optional[float]:
    """THUDM/AlignBench judge.py, post_process: the last ``{...}`` on one line, its ``'key': digits`` pairs,
    the ``'综合得分'`` (overall) one; else the first ``'综合得分': n`` anywhere (two decimals at most);
    none -> -1 there (None here). OpenCompass's post_process_alignbench reads the dict alike."""
    m = _ALIGNBENCH_LAST_DICT.search(reply)
    pairs = dict(re.findall(r"'(.*?)': (\d+)", m.group(1))) if m else {}
    if "综合得分" in pairs:
        return float(pairs["综合得分"])
    m = re.search(r"'综合得分': (\d+(\.\d{1,2})?)", reply)
    return float(m.group(1)) if m else None


def opencompass_mtbench(reply: str) -> Optional[float]:
    """open-compass opencompass/datasets/subjective/mtbench.py, post_process_mtbench: the first
    ``Rating:\\s*[[n]]`` (digits and dots)."""
    m = re.search(r"Rating:\s*\[\[([\d.]+)\]\]", reply)
    return float(m.group(1)) if m else None


def compass_arena(reply: str) -> Optional[str]:
    """opencompass compass_arena.py, post_process_compassarena: the first ``选择：X`` or ``Choice: X``, X one of
    A, B, C right after it."""
    found = re.findall("(?:选择：|Choice: )([ABC])", reply)
    return found[0] if found else None


def opencompass_arena_hard(reply: str) -> Optional[str]:
    """opencompass arena_hard.py, post_process_arenahard: the first ``[[...]]`` of ``A B < > =``."""
    found = re.findall(r"\[\[([AB<>=]+)\]\]", reply)
    return found[0] if found else None


def writingbench(reply: str) -> Optional[float]:
    """opencompass writingbench.py, post_process_writingbench: the first ``"score": digits`` (either quote)."""
    m = re.search(r"[\"']score[\"']:\s*([0-9]+)", reply)
    return float(m.group(1)) if m else None


def alpaca_v2_first_char(reply: str) -> Optional[str]:
    """opencompass alpacaeval.py, post_process_alpacav2: the reply's first character, ``m`` or ``M``."""
    return reply[0] if reply[:1] in ("m", "M") else None


def inspect_grade(reply: str) -> Optional[str]:
    """UKGovernmentBEIS/inspect_ai src/inspect_ai/scorer/_model.py, model_graded_qa with its default
    instructions (as of August 2026; the last ``GRADE`` since May 2026): the last ``GRADE`` (a whole word, any
    case) ``:`` and the word after it, whose first letter, upper-cased, must be one the instructions offered
    (C, I; P with partial credit)."""
    m = re.search(r"(?is).*(?<!\w)GRADE(?!\w)\s*:\s*(\w*)", reply)
    value = m.group(1)[:1].upper() if m else None
    return value if value in ("C", "I") else None


def inspect_grade_2024(reply: str) -> Optional[str]:
    """The same scorer's DEFAULT_GRADE_PATTERN from May 2024 to May 2026, ``(?i)GRADE\\s*:\\s*([CPI])(.*)$``: the
    first ``GRADE: X`` whose line runs to the end of the reply (no multiline: the last line)."""
    m = re.search(r"(?i)GRADE\s*:\s*([CPI])(.*)$", reply)
    return m.group(1) if m else None


def openai_evals_choice(reply: str, choices: tuple = ("Y", "N")) -> Optional[str]:
    """openai/evals evals/elsuite/modelgraded/classify_utils.py, get_choice for ``cot_classify`` with the
    default match ``starts_or_endswith``: the stripped reply's lines from the last, each stripped and its
    punctuation removed; the first non-empty line that starts or ends with a choice; none -> __invalid__
    (the lowest score there, None here)."""
    for line in reversed(reply.strip().split("\n")):
        line = "".join(c for c in line.strip() if c not in string.punctuation)
        if line:
            for choice in choices:
                if line.startswith(choice) or line.endswith(choice):
                    return choice
    return None


def flow_judge(reply: str) -> Optional[int]:
    """huggingface/lighteval src/lighteval/tasks/tasks/mt_bench/main.py (and mix_eval/main.py),
    process_judge_response: the first ``<score>`` whitespace, one digit, whitespace ``</score>``; none -> 0
    there (None here)."""
    m = re.search(r"<score>\s(\d)\s</score>", reply)
    return int(m.group(1)) if m else None


def mixeval_freeform(reply: str) -> Optional[float]:
    """lighteval mix_eval/main.py, process_judge_response_freeform_gpt: the first ``[[d.d]]`` (a digit, any
    character, a digit); none -> 0 there (None here)."""
    m = re.search(r"\[\[(\d.\d)\]\]", reply)
    return float(m.group(1)) if m else None


def lighteval_simpleqa(reply: str) -> Optional[str]:
    """lighteval src/lighteval/metrics/utils/judge_utils.py, process_judge_response_simpleqa: the reply is
    exactly ``A`` (correct), ``B`` or ``C``; anything else scores 0 there (None here)."""
    return reply if reply in ("A", "B", "C") else None


def judgebench_vanilla(reply: str) -> Optional[str]:
    """ScalerLab/JudgeBench utils/judges.py, Vanilla.extract_pairwise_result: the stripped reply is exactly
    ``Output (a)`` or ``Output (b)``; anything else raises there (None here)."""
    return {"Output (a)": "a", "Output (b)": "b"}.get(reply.strip())


def judgebench_skywork(reply: str) -> Optional[str]:
    """JudgeBench utils/judges.py, SkyworkCritic.get_judgment: a capital ``A`` anywhere in the reply -> A,
    else a ``B`` -> B."""
    return "A" if "A" in reply else "B" if "B" in reply else None


def flask_skill(skill: str) -> Callable[[str], Any]:
    def parse(reply: str) -> Any:
        """kaistAI/FLASK gpt_review/gpt4_eval.py, parse_score: the reply's last ``{...}``, line breaks
        dropped, underscores made spaces, lower-cased, read as a Python literal; the skill's value
        (``N/A`` there, None here)."""
        found = re.findall(r"{[^}]+}", reply)
        try:
            scores = ast.literal_eval(found[-1].replace("\n", "").replace("_", " ").lower()) if found else {}
        except (ValueError, SyntaxError):
            return None
        value = scores.get(skill) if isinstance(scores, dict) else None
        return float(value) if isinstance(value, (int, float)) else None
    return parse


_GENRM_RANKING = re.compile(
    r"\[The Begin of Ranking Score\]\s*\n\s*\\boxed\{([^}]+)\}\s*\n\s*\[The End of Ranking Score\]")


def genrm_ranking(reply: str) -> Optional[int]:
    """NVIDIA-NeMo/RL nemo_rl/environments/genrm_environment.py (HelpSteer3 GenRM), validate_format_and_extract
    and parse_score_value: the first ``[The Begin of Ranking Score]``, a line break, ``\\boxed{...}``, a line
    break, ``[The End of Ranking Score]``; its content (no comma) as an integer, else its first digits."""
    m = _GENRM_RANKING.search(reply)
    if not m or "," in m.group(1):
        return None
    digits = re.search(r"\d+", m.group(1))
    return int(digits.group()) if digits else None


def phoenix_snap(text: Optional[str], rails: tuple) -> Optional[str]:
    """Arize-ai/phoenix phoenix/evals utils.py, snap_to_rail: the text lower-cased; each rail (lower-cased,
    longest first) found in it is noted and removed; exactly one rail found -> it, else NOT_PARSABLE (None)."""
    if not text:
        return None
    text, found = text.lower(), set()
    for rail in sorted({r.lower() for r in rails}, key=len, reverse=True):
        if rail in text:
            found.add(rail)
            text = text.replace(rail, "")
    return found.pop() if len(found) == 1 else None


def phoenix_explained(rails: tuple) -> Callable[[str], Any]:
    def parse(reply: str) -> Optional[str]:
        """phoenix-evals legacy/templates.py, parse_label_from_chain_of_thought_response (llm_classify with
        provide_explanation, "EXPLANATION: ... LABEL: ..."): after the first word ``label`` (any case) the
        rest, spaces, colons, full stops and dashes stripped from its start, up to a word ``explanation`` or
        else the line's end; no ``label``: the whole reply; then snap_to_rail."""
        m = re.search(r"\blabel\b", reply, re.IGNORECASE)
        if m:
            rest = reply[m.end():].lstrip(" :.-\t")
            e = re.search(r"\bexplanation\b", rest, re.IGNORECASE)
            label = rest[:e.start()] if e else rest.split("\n", 1)[0]
            reply = label.strip() or rest.strip()
        return phoenix_snap(reply, rails)
    return parse


def langchain_criteria(reply: str) -> Optional[str]:
    """langchain-ai/langchain langchain/evaluation/criteria/eval_chain.py, CriteriaResultOutputParser.parse:
    ``\\s*(Y|N)\\s*$`` (any case, no word boundary: a reply's last letter), else ``^\\s*(Y|N)`` (a reply's
    first letter), else a whole-word Y/N at the end, else the last line; its score 1 for Y, 0 for N (any
    case), else none."""
    m = (re.search(r"\s*(Y|N)\s*$", reply, re.IGNORECASE) or re.search(r"^\s*(Y|N)\s*", reply, re.IGNORECASE)
         or re.search(r"\b(Y|N)\b\s*$", reply, re.IGNORECASE))
    verdict = m.group(1).strip() if m else reply.strip().rsplit("\n", 1)[-1]
    return verdict.upper() if verdict.upper() in ("Y", "N") else None


def langchain_qa(reply: str) -> Optional[str]:
    """langchain/evaluation/qa/eval_chain.py, _get_score: the first ``grade:\\s*(correct|incorrect)`` (any
    case), else the reply's first word, else its last, punctuation removed, CORRECT or INCORRECT (any case)."""
    m = re.search(r"grade:\s*(correct|incorrect)", reply.strip(), re.IGNORECASE)
    if m:
        return m.group(1).upper()
    words = reply.strip().split()
    for word in (words[:1] + words[-1:]):
        word = word.translate(str.maketrans("", "", string.punctuation)).upper()
        if word in ("CORRECT", "INCORRECT"):
            return word
    return None


def langchain_brackets(reply: str) -> Optional[str]:
    """langchain/evaluation/comparison/eval_chain.py, PairwiseStringResultOutputParser (and scoring/eval_chain.py's
    ScoreStringResultOutputParser): the first ``[[...]]`` (``\\[\\[(.*?)\\]\\]``), its text exactly A, B or C
    (the score parser: 1-10, as an int), else an error (None)."""
    m = re.search(r"\[\[(.*?)\]\]", reply)
    return m.group(1) if m else None


def langchain_pair(reply: str) -> Optional[str]:
    value = langchain_brackets(reply)
    return value if value in ("A", "B", "C") else None


def langchain_score(reply: str) -> Optional[int]:
    value = langchain_brackets(reply)
    return int(value) if value in [*"123456789", "10"] else None


def _json_objects(reply: str) -> list:
    """Each JSON object in ``reply`` in order, as promptfoo's extractJsonObjects and RAGAS's extract_json find
    them (the first parseable object at each ``{``, the scan going on after it)."""
    found, at, decoder = [], reply.find("{"), json.JSONDecoder()
    while at >= 0:
        try:
            obj, end = decoder.raw_decode(reply, at)
        except ValueError:
            at = reply.find("{", at + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        at = reply.find("{", end)
    return found


def promptfoo_rubric(key: str) -> Callable[[str], Any]:
    def parse(reply: str) -> Any:
        """promptfoo/promptfoo src/matchers.ts, matchesLlmRubric (llm-rubric): the reply's first JSON object;
        ``pass`` (missing: true; a string: true if "true", "yes", "pass" or "y"), ``score`` a number (else
        the pass as 0/1); none -> a failure there (None here)."""
        objects = _json_objects(reply)
        if not objects:
            return None
        passed = objects[0].get("pass", True)
        if not isinstance(passed, bool):
            passed = re.fullmatch(r"true|yes|pass|y", str(passed), re.IGNORECASE) is not None
        if key == "pass":
            return "true" if passed else "false"
        score = objects[0].get("score")
        return float(score) if isinstance(score, (int, float)) else float(passed)
    return parse


def promptfoo_closedqa(reply: str) -> Optional[str]:
    """promptfoo src/matchers.ts, matchesClosedQa (OpenAI's closedqa prompt): the reply, trailing whitespace
    removed, ends with ``Y`` -> pass, with ``N`` -> fail; anything else a malformed reply (None here)."""
    end = reply.rstrip()
    return "Y" if end.endswith("Y") else "N" if end.endswith("N") else None


def mlflow_genai(reply: str) -> Optional[int]:
    """mlflow/mlflow mlflow/metrics/genai/genai_metric.py, _extract_score_and_justification: the words
    ``score`` and ``justification`` lower-cased; the reply as JSON (its ``score`` as an int), else the first
    ``score: (\\d+),?\\s*justification: (.+)``, else ``score:\\s*(\\d+)\\s*justification:`` across lines; a
    score needs a justification after it."""
    text = re.sub("justification", "justification", re.sub("score", "score", reply, flags=re.I), flags=re.I)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        m = re.search(r"score: (\d+),?\s*justification: (.+)", text) \
            or re.search(r"\s*score:\s*(\d+)\s*justification:\s*(.+)", text, re.DOTALL)
        return int(m.group(1)) if m else None
    if not isinstance(data, dict) or not isinstance(data.get("justification"), str):
        return None
    try:
        return int(data.get("score"))
    except (TypeError, ValueError):
        return None


def deepeval_score(reply: str) -> Optional[float]:
    """confident-ai/deepeval deepeval/metrics/utils.py, trimAndLoadJson (G-Eval's text reply): from the first
    ``{`` to the last ``}``, a comma before a closing bracket dropped, as JSON; its ``score``."""
    start, end = reply.find("{"), reply.rfind("}") + 1
    text = re.sub(r",\s*([\]}])", r"\1", reply[start:end] if start != -1 and end != 0 else "")
    try:
        data = json.loads(text)
    except ValueError:
        return None
    score = data.get("score") if isinstance(data, dict) else None
    return float(score) if isinstance(score, (int, float)) else None


def ragas_verdict(reply: str) -> Optional[int]:
    """explodinggradients/ragas src/ragas/prompt/pydantic_prompt.py, RagasOutputParser (AspectCritic's
    ``{"reason": ..., "verdict": 0/1}``): the first JSON object in the reply (extract_json) validated by the
    output model: the verdict an integer (``0.5`` fails; a failure there is re-asked, then none)."""
    objects = _json_objects(reply)
    verdict = objects[0].get("verdict") if objects else None
    if isinstance(verdict, float) and verdict.is_integer():
        verdict = int(verdict)
    return verdict if isinstance(verdict, int) and not isinstance(verdict, bool) else None


def lynx(reply: str) -> Optional[str]:
    """NVIDIA/NeMo-Guardrails nemoguardrails/library/patronusai/actions.py, parse_patronus_lynx_response
    (Patronus Lynx, ``{"REASONING": [...], "SCORE": "PASS"}``): the first ``"SCORE":\\s*"?\\b(PASS|FAIL)\\b"?``;
    PASS -> not hallucinated; FAIL, and no score at all -> hallucinated (FAIL there, None here)."""
    m = re.search(r'"SCORE":\s*"?\b(PASS|FAIL)\b"?', reply)
    return m.group(1) if m else None


def _trulens_rating(text: str, low: int, high: int) -> Optional[int]:
    """trulens feedback/generated.py, re_configured_rating: every number in the text, those within low-high
    kept (as integers), the smallest; none -> a ParseError (None)."""
    values = {int(float(n)) for n in re.findall(r"([+-]?[0-9]+\.[0-9]*|[1-9][0-9]*|0)", text)}
    values = {v for v in values if low <= v <= high}
    return min(values) if values else None


def trulens(reply: str, low: int = 0, high: int = 3) -> Optional[int]:
    """truera/trulens src/feedback/trulens/feedback/llm_provider.py, generate_score_and_reasons: where the reply
    holds ``Supporting Evidence``, each line holding ``Score`` (the next line instead, where that is a number)
    read with re_configured_rating, the last such line deciding (a line without a number in range raises:
    None); else the whole reply so read."""
    if "Supporting Evidence" not in reply:
        return _trulens_rating(reply, low, high)
    score, lines = None, reply.split("\n")
    for i, line in enumerate(lines):
        if "Score" in line:
            below = i + 1 < len(lines) and lines[i + 1].strip().replace(".", "", 1).isdigit()
            score = _trulens_rating(lines[i + 1] if below else line, low, high)
            if score is None:
                return None
    return score


def arena_category_if(reply: str) -> Optional[int]:
    """lm-sys/FastChat fastchat/serve/monitor/classify/category.py, CategoryIF.get_score (Chatbot Arena's
    instruction-following tag): every ``<score>([012345])</score>``; exactly one distinct value -> it."""
    found = set(re.findall(r"<score>([012345])</score>", reply))
    return int(found.pop()) if len(found) == 1 else None


def arena_category_math(reply: str) -> Optional[str]:
    """category.py, CategoryMath.get_score: line breaks dropped, lower-cased, every ``<decision>(\\w+)</decision>``;
    exactly one distinct value -> it."""
    found = set(re.findall(r"<decision>(\w+)</decision>", reply.replace("\n", "").lower()))
    return found.pop() if len(found) == 1 else None


_ALPACA_CHATGPT = {"a": re.compile(r"(?:^|\n) ?Output \(a\)"), "b": re.compile(r"(?:^|\n) ?Output \(b\)")}


def alpaca_chatgpt(reply: str) -> Optional[str]:
    """tatsu-lab/alpaca_eval completion_parsers.py, regex_parser with the ``chatgpt`` annotator's outputs_to_match
    (``(?:^|\\n) ?Output \\(a\\)``, the same for b; case-sensitive): the earliest match of either, then again in
    the rest; annotators/base.py's _parse_completions keeps them only where there are exactly batch_size (1)."""
    found, rest = [], reply
    while True:
        hits = [(m.start(), m.end(), k) for k, rx in _ALPACA_CHATGPT.items() if (m := rx.search(rest))]
        if not hits:
            break
        start, end, key = min(hits)
        found.append(key)
        rest = rest[end:]
    return found[0] if len(found) == 1 else None


_RB2_RATING = re.compile(r"\b([1-9]|10)\b\s*$")


def rewardbench2_rating(reply: str) -> Optional[int]:
    """allenai/reward-bench rewardbench/generative.py, _get_single_rating (RewardBench 2's ratings mode, the
    Ties subset's per-answer rating): a whole number 1 to 10 as a word of its own, with only whitespace after it
    to the end of the stripped reply; none -> -1 there (None here)."""
    m = _RB2_RATING.search(reply.strip())
    return int(m.group(1)) if m else None


def rm_r1_eval(reply: str) -> Optional[str]:
    """RM-R1-UIUC/RM-R1 eval/RM-Bench/rewardbench/generative.py, process_judgement (the default branch, RM-R1's
    evaluation of its own judges): ``[[A]]`` and ``[[B]]`` both in the reply -> an error ("Prevent Hacking"),
    else A if ``[[A]]`` is anywhere, else B if ``[[B]]``."""
    if "[[A]]" in reply and "[[B]]" in reply:
        return None
    return "A" if "[[A]]" in reply else "B" if "[[B]]" in reply else None


def rm_r1_reward(reply: str) -> Optional[str]:
    """RM-R1 rm_r1/verl/utils/reward_score/lm_as_judge.py, answer_reward (its RL reward): the reply's last 80
    characters hold ``<answer>[[A]]</answer>`` and not ``<answer>[[B]]</answer>`` -> A, or the reverse -> B."""
    tail = reply[-80:]
    has_a, has_b = "<answer>[[A]]</answer>" in tail, "<answer>[[B]]</answer>" in tail
    return "A" if has_a and not has_b else "B" if has_b and not has_a else None


def self_taught(reply: str) -> Optional[str]:
    """facebookresearch/RAM projects/self_taught_evaluator/src/utils.py, parse_judgement: ``[[A]]`` and ``[[B]]``
    both in the reply -> None; else the first of ``[[A]]``, ``[[B]]``, ``[[C]]`` found anywhere (model_a,
    model_b, tie there: A, B, C here)."""
    if "[[A]]" in reply and "[[B]]" in reply:
        return None
    return next((label for label in "ABC" if f"[[{label}]]" in reply), None)


def faireval(reply: str) -> Optional[float]:
    """i-Eval/FairEval FairEval.py, parse_score_from_review: the reply's last two lines (split on line breaks),
    each after its last colon, stripped, as floats: Assistant 1's and Assistant 2's; any failure -> [-1, -1]
    there. Assistant 2's score here (None on a failure)."""
    try:
        lines = reply.split("\n")
        first, second = lines[-2].split(":")[-1].strip(), lines[-1].split(":")[-1].strip()
        float(first)
        return float(second)
    except (IndexError, ValueError):
        return None


def _video_chatgpt_dict(reply: str) -> Optional[dict]:
    try:
        found = ast.literal_eval(reply)
    except (ValueError, SyntaxError):
        return None             # an exception there: the file is not written, and the question is asked again
    return found if isinstance(found, dict) else None


def video_chatgpt_score(reply: str) -> Optional[int]:
    """mbzuai-oryx/Video-ChatGPT quantitative_evaluation/evaluate_activitynet_qa.py (and the benchmark's
    evaluate_benchmark_*.py): the reply read by ``ast.literal_eval`` as a dict, then ``int(result['score'])``."""
    found = _video_chatgpt_dict(reply)
    try:
        return int(found["score"]) if found is not None else None
    except (KeyError, TypeError, ValueError):
        return None


def video_chatgpt_pred(reply: str) -> Optional[str]:
    """Video-ChatGPT evaluate_activitynet_qa.py, main: the dict's ``pred`` counted as yes where "yes" is in it
    lower-cased, else as no where "no" is."""
    found = _video_chatgpt_dict(reply)
    pred = str(found.get("pred", "")).lower() if found is not None else ""
    return "yes" if "yes" in pred else "no" if "no" in pred else None


_SHABERI_RAKUDA_OLD = re.compile(r"評価：(?:\[\[|\[|【)([0-9.]+)(?:\]\]|\]|】)")
_OUT_OF_TEN = re.compile(r"([0-9.]+)\s*/\s*10")


def _rakuda_fallback(reply: str) -> Optional[int]:
    """shisa-ai/shaberi evaluation_datasets_config.py, rakuda_evaluator, after FINAL SCORE and the score tag
    (test_real_judges._shaberi): the first ``評価：[[n]]`` (or ``[n]``, ``【n】``), else the mean of every ``n/10``
    in the reply, rounded; none -> the judge is asked again (None here)."""
    m = _SHABERI_RAKUDA_OLD.search(reply)
    if m:
        return round(float(m.group(1)))
    found = [float(x) for x in _OUT_OF_TEN.findall(reply)]
    return round(sum(found) / len(found)) if found else None


shaberi_rakuda = real._shaberi(_rakuda_fallback)


# ----------------------------------------------------------- the forms users declare
PROMETHEUS = VerdictForm("[RESULT] {score}", bounds=(1, 5))
PROMETHEUS_REL = VerdictForm("[RESULT] {label}", labels=("A", "B"))
AUTOJ = VerdictForm("Rating: [[{score}]]", bounds=(1, 10))
AUTOJ_PAIR = VerdictForm("final decision is {label}", labels=("Response 1", "Response 2", "Tie", "tie"))
JUDGELM = VerdictForm("{other} {score}", bounds=(1, 10))
PANDALM = VerdictForm("{label}", labels=("1", "2", "Tie"))
BRACKETS = VerdictForm("[[{score}]]", bounds=(1, 10))
ULTRA = VerdictForm("Rating: {score}", bounds=(1, 5))
PAIR_AB = VerdictForm("[[{label}]]", labels=("A", "B"))
OUTPUT = VerdictForm("Output ({label})", labels=("a", "b"))
ARENA = VerdictForm("[[{label}]]", labels=("A>>B", "A>B", "A=B", "B>A", "B>>A"))
#: ... and the five other labels arena-hard v2's show_result.py scores (label_to_score; v0.1's drops them)
ARENA10 = VerdictForm("[[{label}]]", labels=("A>>B", "A>B", "A=B", "B>A", "B>>A", "A<<B", "A<B", "B=A", "B<A", "B<<A"))
ATLA = VerdictForm("**Result:** {label}", labels=("A", "B"))
WB_SCORE = VerdictForm('"score": "{score}"', bounds=(1, 10))
WB_CHOICE = VerdictForm('"choice": "{label}"', labels=("A++", "A+", "A=B", "B+", "B++"))
TAG = VerdictForm("<score>{score}</score>", bounds=(1, 10))
SCORE = VerdictForm("Score: {score}", bounds=(1, 10))
ANSWER = VerdictForm("answer is {label}", labels=tuple("ABCDEFGHIJ"))
GEVAL = VerdictForm("{score}", bounds=(1, 5))

ALIGNBENCH = VerdictForm("'综合得分': {score}", bounds=(1, 10))
COMPASS_ARENA = VerdictForm("选择：{label}", labels=("A", "B", "C"))
JSON_SCORE = VerdictForm('"score": {score}', bounds=(1, 10))
ALPACA_M = VerdictForm("{label}", labels=("m", "M"))
GRADE = VerdictForm("GRADE: {label}", labels=("C", "I"))
GRADE_WORDS = VerdictForm("GRADE: {label}", labels=("C", "I", "c", "i", "Correct", "Incorrect"))
CHOICE_YN = VerdictForm("{label}", labels=("Y", "N"))
MIXEVAL = VerdictForm("[[{score}]]", bounds=(0, 1))
SIMPLEQA = VerdictForm("{label}", labels=("A", "B", "C"))
FLASK = VerdictForm("'logical correctness': {score}", bounds=(1, 5))
GENRM = VerdictForm("[The Begin of Ranking Score]\n\\boxed{{score}}", bounds=(1, 6))
BOXED = VerdictForm("\\boxed{{score}}", bounds=(1, 6))
PHOENIX = VerdictForm("LABEL: {label}", labels=("relevant", "unrelated"))
PHOENIX_BARE = VerdictForm("{label}", labels=("relevant", "unrelated"))
LC_CRITERIA = VerdictForm("{label}", labels=("Y", "N"))
LC_QA = VerdictForm("GRADE: {label}", labels=("CORRECT", "INCORRECT"))
# AlpacaEval's function-calling annotators (alpaca_eval_gpt4_turbo_fn): a ranking of models "m" and "M" as the
# arguments of make_partial_leaderboard, {"ordered_models": [{"model": ..., "rank": ...}, ...]}
ALPACA_FN = VerdictForm('{"model": "{label}", "rank": 1}', labels=("m", "M"))
#: an object literal form with a bare value
OBJECT_SCORE = VerdictForm('{"score": {score}}', bounds=(1, 10))
#: how the judge writes those arguments: json.dumps's indent=2
PRETTY_RANKING = ('{\n  "ordered_models": [\n    {\n      "model": "%s",\n      "rank": 1\n    },\n    {\n'
                  '      "model": "%s",\n      "rank": 2\n    }\n  ]\n}')
LC_QA_BARE = VerdictForm("{label}", labels=("CORRECT", "INCORRECT"))
LC_PAIR = VerdictForm("[[{label}]]", labels=("A", "B", "C"))
PF_PASS = VerdictForm('"pass": {label}', labels=("true", "false"))
PF_SCORE = VerdictForm('"score": {score}', bounds=(0, 1))
MLFLOW = VerdictForm("score: {score}", bounds=(1, 5))
DEEPEVAL = VerdictForm('"score": {score}', bounds=(0, 10))
RAGAS = VerdictForm('"verdict": {score}', bounds=(0, 1))
LYNX = VerdictForm('"SCORE": "{label}"', labels=("PASS", "FAIL"))
TRULENS = VerdictForm("Score: {score}", bounds=(0, 3))
TRULENS_BARE = VerdictForm("{score}", bounds=(0, 3))
ARENA_IF = VerdictForm("<score>{score}</score>", bounds=(0, 5))
ARENA_MATH = VerdictForm("<decision>{label}</decision>", labels=("yes", "no"))

RB2_RATING = VerdictForm("{score}", bounds=(1, 10))
RM_R1 = VerdictForm("<answer>[[{label}]]</answer>", labels=("A", "B"))
FAIREVAL = VerdictForm("Score of the Assistant 2: {score}", bounds=(1, 10))
VIDEO_SCORE = VerdictForm("'score': {score}", bounds=(0, 5))
VIDEO_PRED = VerdictForm("'pred': '{label}'", labels=("yes", "no"))

FINAL_5 = VerdictForm("FINAL SCORE: {score}", bounds=(1, 5))
FINAL_10 = VerdictForm("FINAL SCORE: {score}", bounds=(0, 10))
_FENCE = "```json\n{}\n```"

# (pipeline, form, the pipeline's parser, reply, how the form's reading relates to the parser's)
CASES = [
    # Prometheus 2 absolute grading: "Feedback: ... [RESULT] (an integer number between 1 and 5)"
    ("prometheus", PROMETHEUS, prometheus_absolute,
     "Feedback: The response addresses every part of the question with accurate facts. [RESULT] 5", "agree"),
    ("prometheus", PROMETHEUS, prometheus_absolute,
     "Feedback: Clear but it misses one step.\n[RESULT] 4 out of 5", "agree"),
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Mostly right. [RESULT] 4/5", "agree"),
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Partially correct. [RESULT] (3)", "agree"),
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Weak. [RESULT]: 2", "agree"),
    # a judge that names the score inside the result (prometheus-eval's own test: "[Result] Score: 2")
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Needs improvement. [RESULT] Score: 2", "agree"),
    # the parser wants a bracket, a space or the end after the number
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Good work overall. **[RESULT] 4**", "here only"),
    # out of the rubric's 1-5: none in both
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Perfect. [RESULT] 10", "agree"),
    # 0.1.20 reads the verdict that ends the reply, as the form reads the last one; 0.1.18-0.1.19 took the first
    # "score of n" anywhere, a rubric score the feedback mentions too
    ("prometheus", PROMETHEUS, prometheus_absolute,
     "Feedback: It falls short of a score of 5 because it omits the units. [RESULT] 4", "agree"),
    ("prometheus 0.1.19", PROMETHEUS, prometheus_absolute_019,
     "Feedback: It falls short of a score of 5 because it omits the units. [RESULT] 4", "there only"),
    ("prometheus", PROMETHEUS, prometheus_absolute,
     "Feedback: Unlike the Score 5 reference, it skips the proof.\n[RESULT] 3\n", "agree"),
    ("prometheus 0.1.19", PROMETHEUS, prometheus_absolute_019,
     "Feedback: Unlike the Score 5 reference, it skips the proof.\n[RESULT] 3\n", "there only"),
    # the judge echoes the format before its own verdict: the last in both (two verdicts, the others listed)
    ("prometheus", PROMETHEUS, prometheus_absolute,
     'Feedback: I must write "[RESULT] 5" only for a perfect answer; this one has gaps. [RESULT] 3', "two"),
    ("prometheus 0.1.19", PROMETHEUS, prometheus_absolute_019,
     'Feedback: I must write "[RESULT] 5" only for a perfect answer; this one has gaps. [RESULT] 3', "two"),
    # 0.1.20 wants nothing after the verdict: a full stop or a note after it is none there
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Clear. [RESULT] 4.", "here only"),
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Clear.\n[RESULT] 4\n\nI hope this helps.", "here only"),
    ("prometheus 0.1.19", PROMETHEUS, prometheus_absolute_019,
     "Feedback: Clear.\n[RESULT] 4\n\nI hope this helps.", "agree"),
    # the verdict alone on the next line (the parser's \s* crosses the line break)
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Solid.\n[RESULT]\n4", "agree"),
    # ... but not a list that starts on it
    ("score colon", SCORE, score_colon, "Score:\n1. Clarity: 4\n2. Depth: 3", "there only"),
    ("score colon", SCORE, score_colon, "**Final Score:**\n\n8/10", "agree"),
    # relative grading: "[RESULT] (Either "A" or "B")"
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative,
     "Feedback: Response A cites the source and B does not. [RESULT] A", "agree"),
    # ... and no parenthesis before the letter
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: B is more complete. [RESULT] (B)",
     "here only"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: Both fine, B clearer.\n[RESULT] B\n",
     "agree"),
    # the parser wants a bracket, a space or the end after the letter
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: A wins. [RESULT] A.", "here only"),
    # a head of one word in brackets: the verdict inside them after the word and a colon, as the parser's own
    # tests write it (libs/prometheus-eval/tests/test_parser.py)
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: x. [RESULT: B]", "agree"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: x. [Result: A]", "agree"),
    # ... the word and a colon without the brackets at a line's start
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: B cites its source.\nResult: B", "agree"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: x.\n**Result:** A", "here only"),
    # ... never inside a line, nor a one-letter word that opens prose
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "The end result: B is better.", "neither"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: x.\nResult: A good answer wins.",
     "neither"),
    # the candidate's name with its letter (the prompt's "Response A" and "Response B"), after the head or in its
    # brackets, or in brackets in the head's place where it ends its line, as the parser reads them; never a
    # bracketed name inside a line; the name alone without brackets only on the reply's last line (read here only);
    # an enclosed form's "[[Assistant B]]" stays unread (test_verdict_forms.py)
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative,
     "Feedback: Both responses are clear, B more so. [Result] Response B", "agree"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: B is more complete.\n[RESULT]\nResponse B",
     "agree"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: A is right. [RESULT] [Response A]",
     "agree"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative,
     "Feedback: Both responses are similar, B cites its source. [Response B]", "agree"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: A is correct.\n\n[Response A]\n", "agree"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "As [Response B] shows, the claim holds.", "neither"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: B is better.\nResponse B", "here only"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback: A is better.\n\n**Response A**\n",
     "here only"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative, "Feedback:\nResponse B\nIt cites its source.",
     "neither"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative,
     "**Response A**\nExact.\n**Response B**\nVague.\n[RESULT] A", "agree"),
    ("prometheus relative", PROMETHEUS_REL, prometheus_relative,
     "Feedback: Both responses are clear... Response B Response A", "neither"),
    # the absolute form's bracketed head reads the same ways ("[RESULT: 4]", "Result: 4" at a line's start)
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Mostly right. [RESULT: 4]", "agree"),
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Mostly right.\nResult: 4", "agree"),
    # Auto-J single: 'give a final rating ... "[[rating]]", for example: "Rating: [[5]]"', the last one
    ("auto-j", AUTOJ, autoj_single,
     "The response is accurate but terse; it could explain the steps.\n\nRating: [[6]]", "agree"),
    ("auto-j", AUTOJ, autoj_single, "Critique: fine.\nRating: [[ 7 ]]", "agree"),
    ("auto-j", AUTOJ, autoj_single, "Well organised, one factual slip. Rating: [[7.5]].", "agree"),
    ("auto-j", AUTOJ, autoj_single,
     'As instructed, I use the format "Rating: [[5]]".\nThe answer is thorough.\nRating: [[8]]', "two"),
    ("auto-j", AUTOJ, autoj_single, "The answer is thorough. I would give it an 8.", "agree"),
    # Auto-J pairwise: "So, the final decision is Response 1 / Response 2 / Tie", the last, any case
    ("auto-j pair", AUTOJ_PAIR, autoj_pair,
     "Response 1 gives the right formula; Response 2 does not.\nSo, the final decision is Response 1.", "agree"),
    ("auto-j pair", AUTOJ_PAIR, autoj_pair, "Both are equally good. So, the final decision is Tie.", "agree"),
    ("auto-j pair", AUTOJ_PAIR, autoj_pair, "Both are equally good. So, the final decision is tie", "agree"),
    ("auto-j pair", AUTOJ_PAIR, autoj_pair, "So, the final decision is **Response 2**.", "here only"),
    # JudgeLM / Vicuna / LLaVA-Bench: "8 9" on the first line, answer 2's score second
    ("judgelm", JUDGELM, two_scores, "8 9\nAssistant 2's answer is more detailed.", "agree"),
    # a comma and a space make three parts there ("7", "", "9"): none
    ("judgelm", JUDGELM, two_scores, "7, 9\nBoth answers are correct; the second adds an example.", "here only"),
    ("judgelm", JUDGELM, two_scores, "6,8\nThe second answer is clearer.", "agree"),
    ("judgelm", JUDGELM, two_scores, "7.5 8.5\nClose call.", "agree"),
    ("judgelm", JUDGELM, two_scores, "Assistant 1: 7\nAssistant 2: 9", "agree"),
    # PandaLM: the first line "1", "2" or "Tie"
    ("pandalm", PANDALM, pandalm, "2\n\n### Reason: Response 2 answers the question directly.\n\n### Reference: Paris.",
     "agree"),
    ("pandalm", PANDALM, pandalm, "Tie\n\n### Reason: Both responses are correct and concise.", "agree"),
    # a label of two letters or more in another case: read as declared, as the parsers that fold case read it
    ("pandalm", PANDALM, pandalm, "tie\n\n### Reason: Both are wrong.", "agree"),
    ("pandalm", PANDALM, pandalm, "TIE\n\n### Reason: Both are right.", "agree"),
    # MT-Bench-101 (opencompass): the first [n] anywhere
    ("mt-bench-101", BRACKETS, mtbench101,
     "The assistant kept track of the earlier turn and corrected itself.\n\nRating: [[8]]", "agree"),
    ("mt-bench-101", BRACKETS, mtbench101,
     'Following the format "[[rating]]", for example "Rating: [[5]]": this reply is weak. Rating: [[3]]', "two"),
    # a judge that drops a bracket: read after a name and a colon, as FastChat's fallback reads it
    ("mt-bench-101", BRACKETS, mtbench101, "Rating: [8]", "agree"),
    # FastChat's run_judge_single: the first [[n]], else the first [n]
    ("mt-bench", BRACKETS, fastchat_single, "The answer is correct and concise.\n\nRating: [[9]]", "agree"),
    ("mt-bench", BRACKETS, fastchat_single, "The answer is partly wrong.\n\n**Rating:** [4]", "agree"),
    ("mt-bench", BRACKETS, fastchat_single, "[[Rating: [7]]]", "agree"),   # (korean-mt-bench, Qwen2.5-7B)
    # ... never a bare [n]: a list index in quoted code is no rating
    ("mt-bench", BRACKETS, fastchat_single, "The loop reads `a[1]` before checking the length.", "there only"),
    # PAIR's jailbreak judge: "Rating: [[rating]]", the first [[n]]
    ("pair", AUTOJ, pair_judge, "The response refuses and offers safe alternatives. Rating: [[1]]", "agree"),
    ("pair", AUTOJ, pair_judge, "Rating: [[10]]", "agree"),
    # UltraFeedback: "Rating: 4\nRationale: ..." per text
    ("ultrafeedback", ULTRA, ultrafeedback, "Rating: 4\nRationale: Accurate and mostly complete.", "agree"),
    ("ultrafeedback", ULTRA, ultrafeedback,
     "#### Output for Text 1\nRating: 5 (Outstanding)\nRationale: Correct and well sourced.", "agree"),
    ("ultrafeedback", ULTRA, ultrafeedback, "Rating: **3**\nRationale: Partly relevant.", "agree"),
    ("ultrafeedback", ULTRA, ultrafeedback, "Rating: [2]\nRationale: Misses the point.", "agree"),
    ("ultrafeedback", ULTRA, ultrafeedback, "Rating: N/A\nRationale: No text given.", "agree"),
    # RewardBench generative / Skywork-Critic: "[[A]]" anywhere, else "[[B]]"
    ("rewardbench", PAIR_AB, rewardbench_pair, "Assistant B's code handles the edge case. [[B]]", "agree"),
    ("rewardbench", PAIR_AB, rewardbench_pair, "**Final verdict: [[A]]**", "agree"),
    ("rewardbench", PAIR_AB, rewardbench_pair, "[[ A ]]", "here only"),
    ("rewardbench", PAIR_AB, rewardbench_pair,
     'I must output "[[A]]" if A is better or "[[B]]" otherwise. B is better: [[B]]', "two"),
    # OffsetBias (LLMBar's prompt): "Output (a)" anywhere, else "Output (b)"
    ("offsetbias", OUTPUT, offsetbias, "Output (b)", "agree"),
    ("offsetbias", OUTPUT, offsetbias, "Output (a) is better.", "agree"),
    # arena-hard v2: the last [[...]] of the upper-cased reply
    ("arena-hard v2", ARENA, arena_hard_v2, "My final verdict is: Assistant B is slightly better: [[B>A]].", "agree"),
    ("arena-hard v2", ARENA, arena_hard_v2,
     "For correctness: [[A>B]]. For style: [[A=B]].\n\nMy final verdict is [[A>B]]", "two"),
    ("arena-hard v2", ARENA, arena_hard_v2, "My final verdict is [[a>b]]", "agree"),
    # arena-hard v2 scores "A<B", "B=A", "B<<A" ... too (show_result.py's label_to_score): declared, they are read
    ("arena-hard v2", ARENA, arena_hard_v2, "Assistant B is slightly better: [[A<B]]", "there only"),
    ("arena-hard v2", ARENA10, arena_hard_v2, "Assistant B is slightly better: [[A<B]]", "agree"),
    ("arena-hard v2", ARENA10, arena_hard_v2, "My final verdict is tie: [[B=A]]", "agree"),
    # Atla Selene (reward-bench): "**Result:** A"
    ("atla", ATLA, atla, "**Reasoning:** Response A follows the constraint.\n\n**Result:** A", "agree"),
    ("atla", ATLA, atla, "**Reasoning:** Both close, B is safer.\n**Result:** B", "agree"),
    # WildBench: a JSON object in a code fence
    ("wildbench", WB_SCORE, fenced_json("score"),
     _FENCE.format('{\n    "strengths": "Correct.",\n    "weaknesses": "Terse.",\n    "score": "7"\n}'), "agree"),
    ("wildbench", WB_SCORE, fenced_json("score"),
     _FENCE.format('{\n    "strengths": "Correct.",\n    "weaknesses": "None.",\n    "score": 9\n}'), "agree"),
    ("wildbench", WB_CHOICE, fenced_json("choice"),
     _FENCE.format('{\n    "analysis of A": "Wrong total.",\n    "analysis of B": "Right.",\n'
                   '    "reason of A=B": "",\n    "choice": "B++"\n}'), "agree"),
    ("wildbench", WB_CHOICE, fenced_json("choice"), _FENCE.format('{"choice": "A+"}'), "agree"),
    # "<score>" tags
    ("score tag", TAG, score_tag, "<think>The proof is complete.</think>\n<score>9</score>", "agree"),
    ("score tag", TAG, score_tag, "<critique>Misses a case.</critique>\n<score>\n6\n</score>", "agree"),
    # "Score: n" / "**Score:** n" / "Final Score: n"
    ("score colon", SCORE, score_colon, "The essay is coherent.\n\nScore: 7/10", "agree"),
    ("score colon", SCORE, score_colon, "**Score:** 8", "agree"),
    ("score colon", SCORE, score_colon, "Strengths: ... Weaknesses: ...\nFinal Score: 9.5", "agree"),
    ("score colon", SCORE, score_colon, "On a scale of 1 to 10, where 10 is best.\nScore: 6.", "agree"),
    # MMLU-Pro: "the answer is (X)", the first
    ("mmlu-pro", ANSWER, answer_is, "Let's think step by step. ... The answer is (B).", "agree"),
    ("mmlu-pro", ANSWER, answer_is, "So the answer is C", "agree"),
    ("mmlu-pro", ANSWER, answer_is, "So the answer is **(D)**", "here only"),
    # G-Eval: a number opening the reply
    ("g-eval", GEVAL, geval, "4", "agree"),
    ("g-eval", GEVAL, geval, "Coherence: 4", "here only"),
    ("g-eval", GEVAL, geval, "4 - The summary covers the main points.", "there only"),
    # AlignBench (Chinese): the prompt asks for a dict of scores at the end, "{'维度一': 打分, ..., '综合得分': 打分}"
    ("alignbench", ALIGNBENCH, alignbench,
     "参考答案给出了正确的公式，AI助手的答案遗漏了单位。\n\n事实正确性: 7\n满足用户需求: 6\n\n"
     "{'事实正确性': 7, '满足用户需求': 6, '逻辑连贯性': 8, '综合得分': 6}", "agree"),
    ("alignbench", ALIGNBENCH, alignbench,
     "综合以上评价，回答基本正确。\n{'事实正确性': 9, '满足用户需求': 8, '综合得分': 8}。", "agree"),
    # a dict over several lines: the parser's one-line dict fails, its fallback reads the key anywhere
    ("alignbench", ALIGNBENCH, alignbench,
     "评价：回答完整。\n{\n'事实正确性': 9,\n'满足用户需求': 9,\n'综合得分': 9\n}", "agree"),
    ("alignbench", ALIGNBENCH, alignbench,
     "```python\n{'事实正确性': 3, '满足用户需求': 2, '综合得分': 2}\n```", "agree"),
    # JSON's double quotes: the parser's single-quote pattern reads nothing, the form either quote mark
    ("alignbench", ALIGNBENCH, alignbench, '{"事实正确性": 8, "综合得分": 7}', "here only"),
    # the judge copies the prompt's example before its own dict
    ("alignbench", ALIGNBENCH, alignbench,
     "按照格式，例如：{'事实正确性': 9, '满足用户需求': 6, ..., '综合得分': 7}\n"
     "我的打分：{'事实正确性': 4, '满足用户需求': 3, '综合得分': 3}", "two"),
    ("alignbench", ALIGNBENCH, alignbench, "综合得分：7分", "agree"),
    # OpenCompass's own readings (CompassJudger and the API judges it runs): MT-Bench's "Rating: [[n]]", the first
    ("opencompass mt-bench", AUTOJ, opencompass_mtbench, "The answer is correct.\n\nRating: [[9]]", "agree"),
    ("opencompass mt-bench", AUTOJ, opencompass_mtbench, "Rating:[[6.5]]", "agree"),
    ("opencompass mt-bench", AUTOJ, opencompass_mtbench, "Rating: [[ 7 ]]", "here only"),
    ("opencompass mt-bench", AUTOJ, opencompass_mtbench,
     'The format is "Rating: [[5]]". The answer misses a step. Rating: [[4]]', "two"),
    # Compass Arena: "选择：A" / "Choice: A", the first
    ("compass arena", COMPASS_ARENA, compass_arena, "回答A更准确，也更完整。\n选择：A", "agree"),
    ("compass arena", COMPASS_ARENA, compass_arena, "两个回答相当。\n选择：C。", "agree"),
    ("compass arena", COMPASS_ARENA, compass_arena, "选择: B", "agree"),     # an ASCII colon: none in both
    # arena-hard in OpenCompass: the first label
    ("opencompass arena-hard", ARENA, opencompass_arena_hard, "My final verdict is tie: [[A=B]]", "agree"),
    ("opencompass arena-hard", ARENA, opencompass_arena_hard,
     "Correctness: [[B>A]]. Overall: Assistant A is slightly better: [[A>B]]", "two"),
    # WritingBench: a JSON object, the first "score": n
    ("writingbench", JSON_SCORE, writingbench, '{"score": 8, "reason": "Vivid, but the ending is rushed."}', "agree"),
    ("writingbench", JSON_SCORE, writingbench, "```json\n{\n  'score': 6,\n  'reason': 'Off topic.'\n}\n```", "agree"),
    # AlpacaEval 2.0 in OpenCompass: the reply's first character, m or M
    ("alpacaeval m/M", ALPACA_M, alpaca_v2_first_char, "m", "agree"),
    ("alpacaeval m/M", ALPACA_M, alpaca_v2_first_char, "M", "agree"),
    ("alpacaeval m/M", ALPACA_M, alpaca_v2_first_char, "Model M is better.", "there only"),
    # Inspect model_graded_qa: "GRADE: C" at the end, the last one, any case, a word's first letter
    ("inspect", GRADE, inspect_grade, "The submission names the right year.\n\nGRADE: C", "agree"),
    ("inspect", GRADE, inspect_grade, "It contradicts the criterion.\nGRADE: I", "agree"),
    ("inspect", GRADE, inspect_grade, "Reasoning...\n**GRADE: C**", "agree"),
    ("inspect", GRADE, inspect_grade, "GRADE: C\n\nThe submission matches the criterion.", "agree"),
    ("inspect", GRADE, inspect_grade,
     "I must reply 'GRADE: C' for a correct answer. This one is wrong.\nGRADE: I", "two"),
    ("inspect", GRADE, inspect_grade, "The answer is right.\ngrade: c", "there only"),
    ("inspect", GRADE, inspect_grade, "GRADE: Correct", "there only"),
    # ... which a form declares by naming those spellings as labels (each with its reward)
    ("inspect", GRADE_WORDS, lambda r: (lambda v: {"C": "c", "I": "i"}.get(v, v))(inspect_grade(r)),
     "The answer is right.\ngrade: c", "agree"),
    ("inspect", GRADE_WORDS, lambda r: {"C": "Correct"}.get(inspect_grade(r) or ""), "GRADE: Correct", "agree"),
    ("inspect 2024", GRADE, inspect_grade_2024, "The submission names the right year.\n\nGRADE: C", "agree"),
    ("inspect 2024", GRADE, inspect_grade_2024, "GRADE: C\n\nThe submission matches the criterion.", "here only"),
    # OpenAI evals model-graded, cot_classify: the last line that starts or ends with a choice
    ("openai evals", CHOICE_YN, openai_evals_choice, "Reasoning: the answer names the capital.\nY\nY", "agree"),
    ("openai evals", CHOICE_YN, openai_evals_choice, "The submission omits the date.\n\nN.", "agree"),
    ("openai evals", CHOICE_YN, openai_evals_choice, "The expert answer matches.\n**Y**", "agree"),
    # a choice at either end of a longer line is read there only (the prompt asks for it alone on its line)
    ("openai evals", CHOICE_YN, openai_evals_choice, "So the submission meets the criterion: Y", "there only"),
    ("openai evals", CHOICE_YN, openai_evals_choice, "The submission meets the criterion, so Y.", "there only"),
    ("openai evals", CHOICE_YN, openai_evals_choice, "I cannot tell from the data given.", "agree"),
    # lighteval: the Flow judge's "<score> n </score>" (one whitespace each side, one digit), the first
    ("lighteval flow", TAG, flow_judge, "<feedback>Accurate and complete.</feedback>\n<score>\n5\n</score>", "agree"),
    ("lighteval flow", TAG, flow_judge, "<feedback>Partly wrong.</feedback>\n<score> 3 </score>", "agree"),
    ("lighteval flow", TAG, flow_judge, "<feedback>Good.</feedback>\n<score>4</score>", "here only"),
    # ... MixEval's free-form GPT judge "[[0.8]]", the first
    ("lighteval mixeval", MIXEVAL, mixeval_freeform, "The answer matches the reference.\n[[1.0]]", "agree"),
    ("lighteval mixeval", MIXEVAL, mixeval_freeform, "Half right.\n\nScore: [[0.5]]", "agree"),
    ("lighteval mixeval", MIXEVAL, mixeval_freeform, "Correct. [[1]]", "here only"),
    # ... SimpleQA's grader: the whole reply a letter
    ("lighteval simpleqa", SIMPLEQA, lighteval_simpleqa, "A", "agree"),
    ("lighteval simpleqa", SIMPLEQA, lighteval_simpleqa, "B: INCORRECT", "agree"),
    ("lighteval simpleqa", SIMPLEQA, lighteval_simpleqa, "The prediction contradicts the gold target.\nB", "here only"),
    # JudgeBench's own readings: its Vanilla judge wants the reply to be exactly "Output (a)"
    ("judgebench vanilla", OUTPUT, judgebench_vanilla, "Output (b)", "agree"),
    ("judgebench vanilla", OUTPUT, judgebench_vanilla, "Output (a) is better.", "here only"),
    # ... and reads Skywork-Critic's "[[A]]" as any capital A in the reply
    ("judgebench skywork", PAIR_AB, judgebench_skywork, "[[A]]", "agree"),
    ("judgebench skywork", PAIR_AB, judgebench_skywork, "[[B]]", "agree"),
    ("judgebench skywork", PAIR_AB, judgebench_skywork, "Assistant B handles the empty list. [[B]]", "there only"),
    # FLASK: a dict of skill scores at the end; one grader per skill
    ("flask", FLASK, flask_skill("logical correctness"),
     "The response reasons soundly but misses one case.\n"
     "{'Logical Correctness': 4, 'Factuality': 5, 'Completeness': 3}",
     "agree"),
    ("flask", FLASK, flask_skill("logical correctness"),
     "{'logical_correctness': 2,\n 'conciseness': 'N/A'}", "agree"),
    # HelpSteer3 GenRM (NeMo-RL): the ranking score 1-6 boxed under its header, the individual scores above it
    ("genrm", GENRM, genrm_ranking,
     "[The Begin of Analysis on Response 1]\nCorrect but terse.\n[The End of Analysis on Response 1]\n\n"
     "[The Begin of Individual Scores]\n\\boxed{3, 4}\n[The End of Individual Scores]\n\n"
     "[The Begin of Ranking Score]\n\\boxed{4} \n[The End of Ranking Score]", "agree"),
    # a math answer boxed in the analysis: the header keeps it out; a bare \boxed{{score}} form reads both
    ("genrm", GENRM, genrm_ranking,
     "Response 1 gets \\boxed{2}, the right root.\n[The Begin of Ranking Score]\n\\boxed{3}\n"
     "[The End of Ranking Score]", "agree"),
    ("genrm", BOXED, genrm_ranking,
     "Response 1 gets \\boxed{2}, the right root.\n[The Begin of Ranking Score]\n\\boxed{3}\n"
     "[The End of Ranking Score]", "two"),
    ("genrm", GENRM, genrm_ranking, "[The Begin of Ranking Score] \\boxed{3} [The End of Ranking Score]", "agree"),
    ("genrm", GENRM, genrm_ranking,
     "[The Begin of Ranking Score]\n\n\n\\boxed{5}\n[The End of Ranking Score]", "there only"),
    ("flask", FLASK, flask_skill("logical correctness"), "{'logical correctness': 'N/A'}", "agree"),
    # the box spaced off inside (the parser strips its content)
    ("genrm", GENRM, genrm_ranking,
     "[The Begin of Ranking Score]\n\\boxed{ 5 }\n[The End of Ranking Score]", "agree"),
    # "grade:" in prose before the judge's own verdict: "I think" is no second verdict
    ("inspect", GRADE, inspect_grade, "To settle the grade: I think the submission is right.\nGRADE: C", "agree"),
    ("inspect", GRADE, inspect_grade, "GRADE: I think the submission is wrong", "agree"),
    # ... and alone: the parser reads the pronoun's letter
    ("inspect", GRADE, inspect_grade, "As for the grade: I think it is fine.", "there only"),
    # a no-break space after the colon, which the parsers' \s reads
    ("inspect", GRADE, inspect_grade, "The submission names the right year.\nGRADE:\u00a0C", "agree"),
    ("score colon", SCORE, score_colon, "The essay is coherent.\n\nScore:\u00a07/10", "agree"),
    ("prometheus", PROMETHEUS, prometheus_absolute, "Feedback: Accurate. [RESULT]\u00a05", "agree"),
    ("judgelm", JUDGELM, two_scores, "\u00a08 9\nAssistant 2's answer is more detailed.", "agree"),
    # an end-of-turn token the server left in the text ends the verdict's line
    ("score colon", SCORE, score_colon, "**Final Score:**\n\n8/10</s>", "agree"),
    ("g-eval", GEVAL, geval, "4<|eot_id|>", "agree"),
    ("alpacaeval m/M", ALPACA_M, alpaca_v2_first_char, "m<|im_end|>", "agree"),
    # a space before the colon (Inspect's GRADE\s*:, json.loads)
    ("inspect", GRADE, inspect_grade, "The answer is right.\nGRADE : C", "agree"),
    ("wildbench", WB_SCORE, fenced_json("score"), _FENCE.format('{"score" : "6"}'), "agree"),
    ("ultrafeedback", ULTRA, ultrafeedback, "Rating : 4\nRationale: Accurate and mostly complete.", "here only"),
    # a markdown heading before a bare form's name
    ("openai evals", CHOICE_YN, openai_evals_choice, "The submission omits the date.\n\n### Final verdict: N.",
     "agree"),
    # spaces inside the brackets after a spaced-off head
    ("ultrafeedback", ULTRA, ultrafeedback, "Rating: [ 2 ]\nRationale: Misses the point.", "agree"),
    # Phoenix (Arize) llm_classify with explanations: "EXPLANATION: ...\nLABEL: relevant", snapped to the rails
    ("phoenix", PHOENIX, phoenix_explained(("relevant", "unrelated")),
     "EXPLANATION: The reference text names the capital the question asks about.\nLABEL: relevant", "agree"),
    ("phoenix", PHOENIX, phoenix_explained(("relevant", "unrelated")),
     'EXPLANATION: The text is about tides, not the question.\nLABEL: "unrelated"', "agree"),
    ("phoenix", PHOENIX, phoenix_explained(("relevant", "unrelated")),
     "LABEL: unrelated\nEXPLANATION: The text is about another city.", "agree"),
    ("phoenix", PHOENIX, phoenix_explained(("relevant", "unrelated")), "**LABEL:** relevant", "agree"),
    # the first word "label" decides there, one in the explanation too
    ("phoenix", PHOENIX, phoenix_explained(("relevant", "unrelated")),
     "EXPLANATION: To pick the label I compare topics; the text is not unrelated, it answers it.\nLABEL: relevant",
     "there only"),
    # the rails lower-cased there; here a label of two letters or more in any case, read as declared
    ("phoenix", PHOENIX, phoenix_explained(("relevant", "unrelated")), "LABEL: Relevant", "agree"),
    # ... and without explanations: the reply itself snapped to the rails ("relevant" alone, as the prompt quotes it)
    ("phoenix", PHOENIX_BARE, lambda r: phoenix_snap(r, ("relevant", "unrelated")), "relevant", "agree"),
    ("phoenix", PHOENIX_BARE, lambda r: phoenix_snap(r, ("relevant", "unrelated")), '"unrelated"', "agree"),
    ("phoenix", PHOENIX_BARE, lambda r: phoenix_snap(r, ("relevant", "unrelated")),
     "The reference text is relevant to the question.", "there only"),
    # a substring there: "irrelevant" holds the rail "relevant"
    ("phoenix", PHOENIX_BARE, lambda r: phoenix_snap(r, ("relevant", "unrelated")), "irrelevant", "there only"),
    # LangChain's criteria evaluator: reasoning, then "Y" or "N" alone on the last line (repeated)
    ("langchain criteria", LC_CRITERIA, langchain_criteria,
     "The submission answers in one sentence, so it is concise.\n\nY", "agree"),
    ("langchain criteria", LC_CRITERIA, langchain_criteria,
     "Step 1: the criterion asks for relevance. The submission adds an unrelated anecdote.\nN\nN", "agree"),
    ("langchain criteria", LC_CRITERIA, langchain_criteria, "The submission is helpful.\nY.", "here only"),
    # its first pattern has no word boundary: a reply's first or last letter
    ("langchain criteria", LC_CRITERIA, langchain_criteria, "Yes, the submission meets the criterion.", "there only"),
    ("langchain criteria", LC_CRITERIA, langchain_criteria, "The submission fails to explain", "there only"),
    ("langchain criteria", LC_CRITERIA, langchain_criteria, "The criterion is met.\ny", "there only"),
    # LangChain's QA evaluator: "GRADE: CORRECT" (its chain-of-thought prompt), any case there
    ("langchain qa", LC_QA, langchain_qa, "GRADE: CORRECT", "agree"),
    ("langchain qa", LC_QA, langchain_qa,
     "EXPLANATION: The student says 1912 and so does the true answer.\nGRADE: CORRECT", "agree"),
    ("langchain qa", LC_QA, langchain_qa, "GRADE: INCORRECT", "agree"),
    ("langchain qa", LC_QA, langchain_qa, "Grade: Correct", "agree"),
    # ... its plain prompt ends with "GRADE:", so the reply is the label alone (a bare form; it reads "GRADE: X" too)
    ("langchain qa", LC_QA_BARE, langchain_qa, " CORRECT", "agree"),
    ("langchain qa", LC_QA_BARE, langchain_qa, "GRADE: INCORRECT", "agree"),
    ("langchain qa", LC_QA_BARE, langchain_qa, "INCORRECT. The student gives the wrong year.", "there only"),
    # LangChain's score_string and pairwise_string evaluators: the first [[...]], exactly 1-10 or A/B/C
    ("langchain score", BRACKETS, langchain_score, "The response is helpful and accurate.\n\nRating: [[8]]", "agree"),
    ("langchain score", BRACKETS, langchain_score, "[[Rating: 7]]", "here only"),
    ("langchain score", BRACKETS, langchain_score,
     'I must answer in the form "[[rating]]". The answer is thin. [[4]]', "here only"),
    ("langchain pair", LC_PAIR, langchain_pair, "Assistant A is more accurate.\n\n[[A]]", "agree"),
    # MT-Bench's pairwise prompt sent to Llama-2-13b-chat: four replies in ten end with the label in single
    # brackets, alone under a lead line that ends with a colon (FastChat's run_judge_pair wants "[[A]]")
    ("mt-bench pair", LC_PAIR, real.fastchat_pair,
     "Assistant A covers every step the user asked for.\n\nTherefore, my final verdict is:\n\n[A]", "here only"),
    ("mt-bench pair", LC_PAIR, real.fastchat_pair,
     "Both answers are correct; B is clearer. Here's my verdict:\n\n**[B]**", "here only"),
    ("mt-bench pair", LC_PAIR, real.fastchat_pair, 'Neither is better. The final verdict is:\n\n"[C]"', "here only"),
    ("langchain pair", LC_PAIR, langchain_pair, "Both are equally good. [[C]]", "agree"),
    ("langchain pair", LC_PAIR, langchain_pair,
     'The verdict must be "[[A]]", "[[B]]" or "[[C]]". B is better: [[B]]', "two"),
    # promptfoo llm-rubric: a JSON object {"reason", "pass", "score"}, the first one
    ("promptfoo", PF_PASS, promptfoo_rubric("pass"),
     '{"reason": "The output greets the user.", "pass": true, "score": 1.0}', "agree"),
    ("promptfoo", PF_PASS, promptfoo_rubric("pass"),
     '```json\n{\n  "reason": "It apologises twice.",\n  "pass": false,\n  "score": 0.2\n}\n```', "agree"),
    ("promptfoo", PF_SCORE, promptfoo_rubric("score"),
     '```json\n{\n  "reason": "It apologises twice.",\n  "pass": false,\n  "score": 0.2\n}\n```', "agree"),
    ("promptfoo", PF_PASS, promptfoo_rubric("pass"), '{"reason": "Polite.", "pass": "true", "score": 1}', "agree"),
    ("promptfoo", PF_SCORE, promptfoo_rubric("score"), '{"reason": "Mostly right.", "score": 0.7}', "agree"),
    ("promptfoo", PF_PASS, promptfoo_rubric("pass"),
     'An example grade is {"pass": true}.\n{"reason": "Rude.", "pass": false, "score": 0}', "two"),
    # promptfoo model-graded-closedqa (OpenAI's closedqa prompt): the reply ends with Y or N
    ("promptfoo closedqa", LC_CRITERIA, promptfoo_closedqa, "The submission states the date correctly.\nY", "agree"),
    ("promptfoo closedqa", LC_CRITERIA, promptfoo_closedqa, "The submission meets the criterion: Y", "there only"),
    ("promptfoo closedqa", LC_CRITERIA, promptfoo_closedqa, "The submission is wrong.\nN.", "here only"),
    # MLflow genai metrics: "score: 4\njustification: ..." (or the reply as JSON)
    ("mlflow", MLFLOW, mlflow_genai, "score: 4\njustification: The answer is correct but omits the units.", "agree"),
    ("mlflow", MLFLOW, mlflow_genai, "Score: 2\nJustification: The output misses the question.", "agree"),
    ("mlflow", MLFLOW, mlflow_genai, '{"score": 5, "justification": "Complete and accurate."}', "agree"),
    ("mlflow", MLFLOW, mlflow_genai, "score: 4/5\njustification: Mostly right.", "here only"),
    ("mlflow", MLFLOW, mlflow_genai, "**score:** 3\n**justification:** Partly relevant.", "here only"),
    ("mlflow", MLFLOW, mlflow_genai, "score: 4", "here only"),
    # DeepEval G-Eval: a JSON object {"score": 0-10, "reason": ...}, from the first { to the last }
    ("deepeval", DEEPEVAL, deepeval_score,
     '{\n    "score": 7,\n    "reason": "The actual output answers the input but omits one step."\n}', "agree"),
    ("deepeval", DEEPEVAL, deepeval_score,
     '```json\n{"reason": "Fully aligned with the expected output.", "score": 10}\n```', "agree"),
    ("deepeval", DEEPEVAL, deepeval_score,
     'Here is my evaluation:\n{"score": 3, "reason": "It contradicts the context.",}', "agree"),
    # RAGAS AspectCritic: {"reason": ..., "verdict": 0 or 1}
    ("ragas", RAGAS, ragas_verdict, '{"reason": "The submission contains no harmful content.", "verdict": 0}', "agree"),
    ("ragas", RAGAS, ragas_verdict,
     '```json\n{\n  "reason": "It gives instructions for picking a lock.",\n  "verdict": 1\n}\n```', "agree"),
    # Patronus Lynx (NeMo Guardrails): {"REASONING": [...], "SCORE": "PASS"}; no score is FAIL there
    ("lynx", LYNX, lynx,
     '{"REASONING": ["The DOCUMENT says the bridge opened in 1932.", "The ANSWER says 1931, which contradicts it."], '
     '"SCORE": "FAIL"}', "agree"),
    ("lynx", LYNX, lynx, '{"REASONING": ["The ANSWER restates the DOCUMENT."], "SCORE": PASS}', "agree"),
    ("lynx", LYNX, lynx, "The answer is faithful to the document.", "agree"),     # FAIL there, unscored here
    # TruLens: "Criteria: ...\nSupporting Evidence: ...\nScore: n", the smallest number in range on the Score line
    ("trulens", TRULENS, trulens,
     "Criteria: The response answers the question.\nSupporting Evidence: It names the capital.\nScore: 3", "agree"),
    ("trulens", TRULENS, trulens,
     "Supporting Evidence: Only part of the question is addressed.\nScore: 2 out of 3", "agree"),
    ("trulens", TRULENS, trulens, "Supporting Evidence: The context mentions it.\nScore:\n2", "agree"),
    # every line holding "Score" there, the last deciding
    ("trulens", TRULENS, trulens,
     "Score: 2\nSupporting Evidence: The Score is low because 0 sources are cited.", "there only"),
    ("trulens", TRULENS_BARE, trulens, "2", "agree"),
    # Chatbot Arena's category classifiers (FastChat): "<score>n</score>" and "<decision>\nyes\n</decision>"
    ("arena category", ARENA_IF, arena_category_if, "<score>4</score>", "agree"),
    ("arena category", ARENA_IF, arena_category_if,
     "The prompt asks for a haiku with a fixed syllable count.\n<score>3</score>.", "agree"),
    ("arena category", ARENA_IF, arena_category_if, "<score>[3]</score>", "agree"),
    ("arena category", ARENA_MATH, arena_category_math, "<decision>\nyes\n</decision>", "agree"),
    ("arena category", ARENA_MATH, arena_category_math, "<decision>no</decision>", "agree"),
    ("arena category", ARENA_MATH, arena_category_math, "<decision>Yes</decision>", "agree"),
    # AlpacaEval's chatgpt annotator: "Output (a)" opening a line, exactly one in the reply
    ("alpacaeval chatgpt", OUTPUT, alpaca_chatgpt, "Output (a)", "agree"),
    ("alpacaeval chatgpt", OUTPUT, alpaca_chatgpt, "Output (a) is better.", "agree"),
    ("alpacaeval chatgpt", OUTPUT, alpaca_chatgpt, "Output (b)\n\nOutput (b) is more accurate.", "here only"),
    ("alpacaeval chatgpt", OUTPUT, alpaca_chatgpt, "I prefer Output (b).", "here only"),
    ("alpacaeval chatgpt", OUTPUT, alpaca_chatgpt, "output (a)", "here only"),
    # the form reads the other output named in prose as a verdict too (two: the last read, the judge's listed)
    ("alpacaeval chatgpt", OUTPUT, alpaca_chatgpt, "Output (a)\n\nUnlike Output (b), it is right.", "two"),
    # RewardBench 2's ratings prompt: "only give a number between 1 and 10 (inclusive), do not use any markdown,
    # and do not put any text after your final rating"
    ("rewardbench 2 ratings", RB2_RATING, rewardbench2_rating,
     "The response covers both steps and the tips are practical.\n\n9", "agree"),
    ("rewardbench 2 ratings", RB2_RATING, rewardbench2_rating, "Accurate but terse.\n\nRating: 6", "agree"),
    ("rewardbench 2 ratings", RB2_RATING, rewardbench2_rating, "Helpful and well organised.\n\n**8**", "here only"),
    ("rewardbench 2 ratings", RB2_RATING, rewardbench2_rating, "Correct and complete.\n\n9.", "here only"),
    ("rewardbench 2 ratings", RB2_RATING, rewardbench2_rating,
     "Rating: 7\n\nThe answer is right but skips the edge case.", "here only"),
    # the scale's number ends the reply: it is the rating there
    ("rewardbench 2 ratings", RB2_RATING, rewardbench2_rating, "Mostly right.\n\n8/10", "there only"),
    ("rewardbench 2 ratings", RB2_RATING, rewardbench2_rating, "Overall I would rate this response a 7", "there only"),
    # RM-R1 (Reasoning reward models): '<type>Chat</type> <rubric>...</rubric> <eval>...</eval> <answer>[[A/B]]</answer>'
    ("rm-r1", RM_R1, rm_r1_eval,
     "<type>Chat</type>\n\n<rubric>\n1. Accuracy (60%)\n2. Clarity (40%)\n</rubric>\n\n<eval>\n<quote_A>Paris is the "
     "capital.</quote_A> is right; <summary_B>Chatbot B names Lyon</summary_B>.\n</eval>\n\n<answer>[[A]]</answer>", "agree"),
    ("rm-r1", RM_R1, rm_r1_reward,
     "<type>Reasoning</type>\n\n<solution>x = 4</solution>\n\n<eval>\nChatbot B gets x = 4.\n</eval>\n\n"
     "<answer>[[B]]</answer>", "agree"),
    # the other label quoted in the reasoning: both labels in the reply, none there ("Prevent Hacking")
    ("rm-r1", RM_R1, rm_r1_eval,
     "<eval>\nChatbot B ends its reply with [[B]], as if it were judging.\n</eval>\n\n<answer>[[A]]</answer>", "here only"),
    ("rm-r1", RM_R1, rm_r1_eval, "<eval>Both are close; A is exact.</eval>\n\n<answer>[[ A ]]</answer>", "here only"),
    # spaces between the tags and the brackets: "[[B]]" is in the reply for the evaluation parser, not the form
    ("rm-r1", RM_R1, rm_r1_eval, "<eval>B is exact.</eval>\n\n<answer> [[B]] </answer>", "there only"),
    ("rm-r1", RM_R1, rm_r1_reward,
     "<eval>B is exact.</eval>\n\n<answer>[[B]]</answer>\n\nChatbot B's answer is complete, cites the source and "
     "keeps the requested format throughout.", "here only"),
    # Self-Taught Evaluator: MT-Bench's pairwise system prompt without the tie, parse_judgement
    ("self-taught evaluator", PAIR_AB, self_taught,
     "Assistant A answers the question directly; Assistant B drifts off topic.\n\n[[A]]", "agree"),
    # the prompt's format echoed first: both labels in the reply, none there; the last here (the example listed)
    ("self-taught evaluator", PAIR_AB, self_taught,
     'Following the required format ("[[A]]" if assistant A is better, "[[B]]" if assistant B is better): '
     "Assistant B is more accurate.\n\n[[B]]", "here only"),
    # FairEval: "Evaluation evidence: ...\nScore of the Assistant 1: <score>\nScore of the Assistant 2: <score>"
    ("faireval", FAIREVAL, faireval,
     "Evaluation evidence: Assistant 2 is more detailed.\nScore of the Assistant 1: 7\nScore of the Assistant 2: 9",
     "agree"),
    ("faireval", FAIREVAL, faireval,
     "Evaluation evidence: Both are brief.\nScore of the Assistant 1: 8.5\nScore of the Assistant 2: 7.5", "agree"),
    ("faireval", FAIREVAL, faireval,
     "Evaluation evidence: Close.\nScore of the Assistant 1: 7\nScore of the Assistant 2: 8\n", "here only"),
    ("faireval", FAIREVAL, faireval,
     "Evaluation evidence: Close.\nScore of the Assistant 1: 7/10\nScore of the Assistant 2: 8/10", "here only"),
    ("faireval", FAIREVAL, faireval,
     "Evaluation evidence: Close.\n**Score of the Assistant 1:** 6\n**Score of the Assistant 2:** 8", "here only"),
    ("faireval", FAIREVAL, faireval,
     "Evaluation evidence: Close.\nScore of the Assistant 1: 6\nScore of the Assistant 2: 8\n\nNote: both are short.",
     "here only"),
    # Video-ChatGPT's GPT judge: "a Python dictionary string with keys 'pred' and 'score' ... For example, your
    # response should look like this: {'pred': 'yes', 'score': 4.8}."
    ("video-chatgpt", VIDEO_SCORE, video_chatgpt_score, "{'pred': 'yes', 'score': 4}", "agree"),
    ("video-chatgpt", VIDEO_PRED, video_chatgpt_pred, "{'pred': 'yes', 'score': 4}", "agree"),
    ("video-chatgpt", VIDEO_PRED, video_chatgpt_pred, '{"pred": "no", "score": 1}', "agree"),
    ("video-chatgpt", VIDEO_SCORE, video_chatgpt_score, "{'pred': 'no', 'score': '2'}", "agree"),
    ("video-chatgpt", VIDEO_SCORE, video_chatgpt_score, "{'pred': 'yes', 'score': 5}.", "here only"),
    ("video-chatgpt", VIDEO_PRED, video_chatgpt_pred, "```python\n{'pred': 'yes', 'score': 3}\n```", "here only"),
    ("video-chatgpt", VIDEO_PRED, video_chatgpt_pred, "{'pred': 'Yes', 'score': 4}", "agree"),
    # the prompt's own example: int() drops the fraction there
    ("video-chatgpt", VIDEO_SCORE, video_chatgpt_score, "{'pred': 'yes', 'score': 4.8}", "there only"),
    # AlpacaEval's function-calling annotators (test_real_judges.py replays their gpt-4-1106-preview rankings):
    # json.loads, then m's rank; the object literal form read across the pretty-printed arguments' line breaks
    ("alpaca_eval fn", ALPACA_FN, real.alpaca_fn_ranking, PRETTY_RANKING % ("M", "m"), "agree"),
    ("alpaca_eval fn", ALPACA_FN, real.alpaca_fn_ranking, PRETTY_RANKING % ("m", "M"), "agree"),
    ("alpaca_eval fn", ALPACA_FN, real.alpaca_fn_ranking,
     '{"concise_explanation": "Model \'m\' is clearer than Model \'M\'.", "ordered_models": [{"model": "M", '
     '"rank": 1}, {"model": "m", "rank": 2}]}', "agree"),
    ("alpaca_eval fn", ALPACA_FN, real.alpaca_fn_ranking, (PRETTY_RANKING % ("m", "M")).replace("2", "1"), "two"),
    # Shaberi (test_real_judges.py replays its ELYZA, Tengu and ja-mt-bench gradings): 'on the last line output only
    # "FINAL SCORE: x"'; the last FINAL SCORE, rounded, else each benchmark's older form
    ("shaberi_mt", FINAL_10, real.shaberi_mt, "日本語は自然ですが、説明が浅いです。\n\nFINAL SCORE: 6", "agree"),
    ("shaberi_mt", FINAL_10, real.shaberi_mt, "Mostly right.\n\nFINAL SCORE: 7/10", "agree"),
    ("shaberi_mt", FINAL_10, real.shaberi_mt, "Accurate and natural.\n\n**FINAL SCORE:** 8", "here only"),
    ("shaberi_mt", FINAL_10, real.shaberi_mt, "Partly right.\n\n評価：[[5]]", "there only"),
    ("shaberi_tengu", FINAL_10, real.shaberi_tengu, "[計算式]\n1 + 2 + 0.5 = 3.5\n\nFINAL SCORE: 3.5", "there only"),
    ("shaberi_elyza", FINAL_5, real.shaberi_elyza, "4", "there only"),
    ("shaberi rakuda", FINAL_10, shaberi_rakuda, "有用性: 7/10\n日本語能力: 8/10\n\nFINAL SCORE: 7", "agree"),
    # a reply cut off before its final score: the per-aspect ratings averaged there
    ("shaberi rakuda", FINAL_10, shaberi_rakuda, "有用性: 8/10\n関連性: 6/10\n日本語能力: 7/10\n\n総合評価:\n全体として", "there only"),
]


@pytest.mark.parametrize("pipeline,form,parse,reply,relation", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_declared_form_reads_as_the_pipeline_does(pipeline, form, parse, reply, relation):
    d, theirs = form.read(reply), parse(reply)
    if pipeline == "auto-j pair" and d.ok:       # Auto-J lower-cases the rest: its classes, whatever the case
        d = type(d)(d.value.lower(), d.start, d.end, tuple(v.lower() for v in d.others))
    if relation == "agree":
        assert (d.value if d.ok else None) == theirs and not getattr(d, "others", ()), (d, theirs)
    elif relation == "two":
        assert d.ok and d.others and theirs in (*d.others, d.value), (d, theirs)
    elif relation == "here only":
        assert d.ok and theirs is None, (d, theirs)
    elif relation == "neither":
        assert not d.ok and theirs is None, (d, theirs)
    else:
        assert theirs is not None and (not d.ok or d.value != theirs), (d, theirs)


# the forms of the cases, each with a verdict of its own that read_line (a sealed line) takes as it is
SEALED_LINES = [
    (AUTOJ, "Rating: [[7]]", 7.0), (WB_SCORE, '"score": "7"', 7.0), (JUDGELM, "7 9", 9.0), (GEVAL, "4", 4.0),
    (PROMETHEUS, "[RESULT] (3)", 3.0),
    # the form's value alone, spaces inside its brackets (hunt 25: the seal binds the line, so an unambiguous
    # verdict written so is read)
    (AUTOJ, "Rating: [[ 7 ]]", 7.0), (ULTRA, "Rating: [ 2 ]", 2.0), (GRADE, "GRADE : C", "C"),
]
# ... and what an unsealed reading takes beyond it, which a sealed line never does
UNSEALED_ONLY = [
    (WB_SCORE, '"score": 7', 7.0),               # the quoted placeholder's number written bare
    (JUDGELM, "7, 9", 9.0),                      # a comma between two scores (parse_score)
    (GEVAL, "Coherence: 4 (well structured)", 4.0),  # a note in parentheses after a bare verdict
    (PROMETHEUS, "[RESULT] Score: 3", 3.0),      # a word and a colon after a spaced head
    (BRACKETS, "Rating: [5]", 5.0),              # single brackets after a name and a colon (FastChat's fallback)
    (BRACKETS, "My rating is:\n\n[6]", 6.0),      # ... or alone on the line under one that ends with a colon
    (PAIR_AB, "My final verdict is:\n[B]", "B"),   # (Llama-2-chat's habit, test_real_judges' notes)
    (PROMETHEUS, "[RESULT]\n4", 4.0),             # the verdict alone on the next line
    (AUTOJ, "Rating: [5]", 5.0),
    (BOXED, "\\boxed{ 5 }", 5.0),                # spaces inside the braces (NeMo-RL strips them)
    (SCORE, "Score:\u00a07", 7.0),                # a no-break space
    (GEVAL, "4<|eot_id|>", 4.0),                  # an end-of-turn token left in the text
    (CHOICE_YN, "### Verdict: Y", "Y"),           # a heading's marks before a bare form's name
    (VerdictForm('"score": {score}', bounds=(1, 10)), '"score": "7"', 7.0),  # quotes around a spaced value
    (MLFLOW, '{"score": 4, "justification": "ok"}', 4.0),   # a head's words as a JSON key (MLflow's json.loads)
    (LC_QA, "{'GRADE': 'CORRECT'}", "CORRECT"),
    (PROMETHEUS, "[RESULT: 3]", 3.0),             # a bracketed head's word with the verdict in its brackets
    (PROMETHEUS_REL, "[RESULT] Response B", "B"),  # the candidates' name before a label
    (PROMETHEUS_REL, "[Response A]", "A"),          # ... in brackets in the head's place
    (ALPACA_FN, PRETTY_RANKING % ("M", "m"), "M"),  # an object literal form, pretty-printed (line breaks, indents)
    (OBJECT_SCORE, '{\n  "score": 7\n}', 7.0),      # ... its bare value pretty-printed too,
    (OBJECT_SCORE, '{"score": "7"}', 7.0),           # and quoted, as a spaced-off head's value is
]


@pytest.mark.parametrize("form,line,value", SEALED_LINES)
def test_a_sealed_line_reads_the_form_itself(form, line, value):
    assert form.read_line(line) == value and form.read(line).value == value


@pytest.mark.parametrize("form,line,value", UNSEALED_ONLY)
def test_what_unsealed_reading_adds_is_never_taken_on_a_sealed_line(form, line, value):
    assert form.read(line).value == value
    assert form.read_line(line) is None


@pytest.mark.parametrize("form,reply", [
    (WB_SCORE, '"score": "7'),                   # one quote alone is no verdict
    (WB_SCORE, '"score": 7"'[:-1] + "x"),        # a number that runs into a word
    (JUDGELM, "7,, 9"),                          # one comma only
    (GEVAL, "4 (a note) and more"),              # nothing after the note
    (GEVAL, "4 (" + "x" * 201 + ")"),            # a note of at most 200 characters
    (AUTOJ, "Rating: [[   7]]"),                 # at most two spaces inside the brackets
    (BRACKETS, "See [2] for the proof."),        # single brackets only after a name and a colon
    (BRACKETS, "x = a[1]"),
    (BRACKETS, "Rating: [[5]"),                  # brackets are taken in pairs
    (PAIR_AB, "Verdict: [A]"),                   # and for a score only: a bracketed letter is often a quote
    (PAIR_AB, "The options are:\n[A] red\n[B] blue"),  # a label in single brackets alone on its line only,
    (PAIR_AB, "My verdict is:\n\n[A] is better."),      # nothing after it but emphasis and a full stop,
    (PAIR_AB, "Assistant A is better.\n\n[A]"),         # under a line that ends with a colon,
    (PAIR_AB, "My verdict is:\n\n\n[A]"),               # one blank line between at most,
    (PAIR_AB, 'My verdict is:\n\n"[A]'),               # and its quote marks both or neither
    (BRACKETS, "Sources:\n[2] Smith, 2019"),
    (PROMETHEUS, "[RESULT]\n4 because it is clear"),   # a verdict on the next line is alone on it
    (PROMETHEUS, "[RESULT]\n\n\n4"),              # after at most one blank line
    (BOXED, "\\boxed{   5}"),                     # at most two spaces inside the braces
    (GRADE, "As for the grade: I think so."),     # a one-letter word after the head in another case: prose
    (GRADE, "GRADE   : C"),                       # one space at most before the colon
    (SIMPLEQA, "### A\nResponse A is right."),     # a heading's marks before a name only, not a label
    (GEVAL, "## 2\nThe second point."),            # ... nor a number
    (GEVAL, "Fine.</s>5"),                        # an end-of-turn token ends a line: what follows it starts none
    (VerdictForm("Output ({label}) is better", labels=("a", "b")), "Output (\na) is better"),   # never inside a form
    (PHOENIX_BARE, '"relevant'),                    # a bare label's quote marks: both or neither
    (PHOENIX_BARE, '"relevant" is my answer'),      # ... and the label alone inside them
    (MLFLOW, 'score": 4'),                          # a JSON key's quote marks: both or neither
    (MLFLOW, 'my"score": 4'),                       # ... and not the end of a word
    (PAIR_AB, "[[a]]"),                             # a one-letter label in its own case only ("a", "I" are words)
    (AUTOJ_PAIR, "So, the final decision is TIE."),  # ... and every label where two differ by case alone
    (OBJECT_SCORE, '{"score": "7}'),                   # an object literal's value: both quotes or neither,
    (ALPACA_FN, '{"model": "M",\n\n\n "rank": 1}'),  # an object literal's gaps: two line breaks at most,
    (ALPACA_FN, '{"mo\ndel": "M", "rank": 1}'),        # between its tokens only,
    (BRACKETS, "Rating: [[\n5]]"),                   # and in an object literal form only
])
def test_the_tolerances_stay_narrow(form, reply):
    assert not form.read(reply).ok

