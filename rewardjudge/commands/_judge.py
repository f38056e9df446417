"""The judge of a command's ``--judge`` (URL server, embedded or torch): checked before any row, then opened."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from ..errors import ConfigError, JudgeError

# light on purpose: every command's parser imports this module, and `--help` must not load the model stack
__all__ = ["JUDGE_HELP", "add_arguments", "add_subcommands", "check_torch_judge", "judge_kind", "judge_options", "open_judge",
           "url_model"]

JUDGE_HELP = ("an OpenAI-compatible server URL ending in /v1, 'embedded' (spawn the bundled "
              "SmolLM2-135M judge on llama-cpp-python's server; noise verdicts, for trying the "
              "pipeline) or 'torch' (the in-process transformers judge)")


def judge_options(model_help: str, judge_help: str = JUDGE_HELP, *,
                  required: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """The options ``open_judge`` reads, for ``add_arguments`` (a command that fixes the request tuning ones
    itself takes the first two or three)."""
    return [("--judge", {"required": required, "help": judge_help}), ("--judge-model", {"help": model_help}),
            ("--timeout", {"type": float, "default": 60.0, "help": "seconds per judge request"}),
            ("--concurrency", {"type": int, "help": "judge requests in flight (default 64; 4 for the embedded "
                                                    "judge)"}),
            ("--max-retries", {"type": int, "default": 3, "help": "retries per judge request"}),
            ("--structured-output", {"choices": ("json_schema", "json_object", "none"), "default": "json_schema",
                                     "help": "how the reply schema is requested from a URL judge"})]


def add_arguments(parser: argparse.ArgumentParser, arguments: Any) -> argparse.ArgumentParser:
    """Add each ``("--flag -f", {options})`` of ``arguments`` to ``parser``."""
    for flags, options in arguments:
        parser.add_argument(*flags.split(), **options)
    return parser


def add_subcommands(parser: argparse.ArgumentParser, dest: str, table: dict[str, tuple[Any, str, Any]]) -> None:
    """A command group: each ``name: (func, help, arguments)`` of ``table`` as a subcommand of ``parser``."""
    sub = parser.add_subparsers(dest=dest, required=True)
    for name, (func, help_text, arguments) in table.items():
        add_arguments(sub.add_parser(name, help=help_text), arguments).set_defaults(func=func)


def _check_override(args: argparse.Namespace, prefer: str | None, name: str, where: str) -> None:
    if prefer is None or name == prefer or getattr(args, "allow_model_override", False):
        return
    raise ConfigError(f"the scorer names judge model {prefer!r}, but {where} {name!r}: serve {prefer!r} (or pass "
                      f"--judge-model with the name the server gives it), or pass --allow-model-override to run "
                      f"this scorer version on {name!r} (its grades then record judge_model={name!r})")


def judge_kind(judge: str) -> str:
    """``"embedded"``, ``"torch"`` or ``"url"`` (an OpenAI-compatible server); else a usage error."""
    if judge in ("embedded", "torch"):
        return judge
    if judge.startswith(("http://", "https://")):
        return "url"
    raise ConfigError(f"--judge {judge!r} is not understood; give {JUDGE_HELP}")


def url_model(args: argparse.Namespace, name: str) -> Any:
    """Model ``name`` on the ``--judge`` server, with the command's judge options."""
    from ..models import OpenAIModel
    return OpenAIModel(args.judge, name, max_concurrency=getattr(args, "concurrency", None) or 64,
                       timeout=args.timeout, max_retries=getattr(args, "max_retries", 3),
                       structured_output=getattr(args, "structured_output", "json_schema"))


@contextlib.asynccontextmanager
async def open_judge(args: argparse.Namespace, prefer: str | None = None, **options: Any):
    """The judge model of ``--judge`` (``options`` in place of the command's): a URL server (checked, then
    probed), the embedded or the torch judge. ``prefer``: a scorer's model (another needs the override)."""
    args = argparse.Namespace(**{**vars(args), **options})
    judge, kind = args.judge, judge_kind(args.judge)
    from ..models import GenerationParams, spawn_judge
    if kind == "embedded":
        from ..models._spawn import EMBEDDED_ALIAS
        _check_override(args, prefer, EMBEDDED_ALIAS, "--judge embedded serves")
        print("spawning the embedded judge (SmolLM2-135M-Instruct on llama-cpp-python's server)...", file=sys.stderr)
        conc = getattr(args, "concurrency", None)
        kwargs = {"max_concurrency": conc} if conc else {}
        async with spawn_judge(model_kwargs={"timeout": args.timeout, **kwargs}) as model:
            yield model
    elif kind == "torch":
        # --judge-model: a local checkpoint folder or .gguf (default: the embedded SmolLM2 GGUF)
        print("loading the in-process torch judge...", file=sys.stderr)
        async with spawn_judge("torch", args.judge_model) as model:
            _check_override(args, prefer, getattr(model, "name", "torch"), "--judge torch serves")
            yield model
    else:
        from ..models._discover import model_name
        name = model_name(judge, args.judge_model, args.timeout, prefer)
        _check_override(args, prefer, name, f"the judge at {judge} is asked for")
        async with url_model(args, name) as model:
            try:  # one short request before any row: a judge that cannot answer stops the run here
                await model.chat([{"role": "user", "content": "Reply with OK."}], GenerationParams(max_tokens=4))
            except JudgeError as exc:
                raise ConfigError(f"the judge's probe request failed ({type(exc).__name__}: {str(exc)[:300]}); "
                                  f"check --judge, --judge-model and the server's log") from None
            yield model


def check_torch_judge(args: argparse.Namespace, grader: Any) -> None:
    """Refuse ``--judge torch`` without a GPU for a chat grader (only probability grades are fast there)."""
    if args.judge != "torch" or type(grader).__name__ == "ProbabilityJudgeGrader":
        return
    import torch
    if not torch.cuda.is_available():
        raise ConfigError(f"--judge torch with {type(grader).__name__} would generate every verdict on this "
                          f"CPU (minutes per row); use --judge embedded (llama.cpp) for chat graders, or "
                          f"--judge torch with a probability grader")
