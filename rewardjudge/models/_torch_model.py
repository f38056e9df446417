"""TorchModel: an in-process judge over transformers (docs/judges.md): a preparation thread renders,
tokenises and pads batches, a forward thread runs them; a shared prompt prefix is computed once.

>>> async with TorchModel.load() as judge:            # doctest: +SKIP
...     dist = await judge.grade_distribution(messages, ["0", "1", "2", "3", "4"])
"""

from __future__ import annotations

import asyncio
import inspect
import os
import queue
import threading
import time
from collections import OrderedDict
from typing import Any, Sequence

from .._paths import embedded_model_path
from ..errors import ConfigError, JudgeError
from ._base import (Completion, GenerationParams, InferenceModel, Message, TokenDistribution,
                   check_choices)
from ._chat_template import ChatTemplate, split_prefix
from ._torch_batches import Batch, InFlight, Job, chunks, fail, make_batch, reply, settle_distributions
from ._torch_setup import (CPU_BATCH_TOKENS, GPU_BATCH_TOKENS, TorchModelOptions, _full_attention_only,
                           _import_transformers, _resolve_device_dtype, checkpoint_folder, converted_gguf_dir,
                           default_cache_dir, expanded_cache, output_layers)

__all__ = ["TorchModel", "converted_gguf_dir", "default_cache_dir"]


class TorchModel(InferenceModel):
    """A transformers causal LM as a judge: ``TorchModel.load(path)`` or ``TorchModel(model, tokenizer)``;
    the options (``TorchModelOptions``) bound batches and prefix sharing; ``chat`` ignores ``json_schema``."""

    def __init__(self, model: Any, tokenizer: Any, **options: Any):
        opts = self.options = TorchModelOptions(**options)
        self._use_tokenizer(tokenizer, opts.chat_template)
        self.model = model.eval()
        self.name = opts.name or f"torch:{getattr(model.config, '_name_or_path', '') or type(model).__name__}"
        self.max_batch_size = opts.max_batch_size
        self.max_batch_tokens = opts.max_batch_tokens or (
            CPU_BATCH_TOKENS if self.device.type == "cpu" else GPU_BATCH_TOKENS)
        self.max_new_tokens = opts.max_new_tokens
        self.context_length = int(getattr(model.config, "max_position_embeddings", 0) or 0) or None
        self._choice_cache: dict[str, list[int]] = {}
        params = inspect.signature(model.forward).parameters
        # only the last position's logits are read: the full logits are huge
        self._last_logits = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
        # transformers 5.x renames ``past_key_values`` to ``cache`` (the old name is deprecated)
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        #: prefix sharing is on (asked for, and the model takes a cache, with full attention only)
        self.share_prefix = opts.share_prefix and self._cache_arg in params \
            and _full_attention_only(model.config)
        self.min_prefix_tokens = opts.min_prefix_tokens
        self.prefix_cache_size = opts.prefix_cache_size
        self._prefixes: OrderedDict[tuple[int, ...], list[tuple[Any, Any]]] = OrderedDict()
        self._recent_prefixes: list[tuple[int, ...]] = []  # the preparation thread's view
        self._queue: queue.Queue = queue.Queue()   # lists of jobs, or None to stop
        # prepared batches (or None); unbounded: preparing never waits for the forward thread
        self._ready: queue.Queue = queue.Queue()
        self._pending: list[Job] = []
        self._pending_lock = threading.Lock()
        self._threads: tuple[threading.Thread, threading.Thread] | None = None
        self._worker_lock = threading.Lock()
        #: forward passes run so far, by kind (``"dist"``, ``"gen"``): batching shows here
        self.batches: dict[str, int] = {"dist": 0, "gen": 0}
        #: prefixes whose keys/values were computed, and batches that reused a cached one
        self.prefix_stats: dict[str, int] = {"computed": 0, "reused": 0}

    continues_prefix = True

    def _use_tokenizer(self, tokenizer: Any, chat_template: Any) -> None:
        """The tokenizer and the prompts' template (None: the tokenizer's); no pad token: EOS pads."""
        if chat_template is None and not getattr(tokenizer, "chat_template", None):
            raise ConfigError("the tokenizer has no chat template: pass chat_template= (a Jinja "
                              "source or f(messages) -> prompt)")
        if isinstance(chat_template, str):
            chat_template = ChatTemplate(chat_template, bos_token=tokenizer.bos_token or "",
                                         eos_token=tokenizer.eos_token or "")
        self.tokenizer, self._chat_template = tokenizer, chat_template
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._pad_id, self._eos_id = tokenizer.pad_token_id, tokenizer.eos_token_id

    @classmethod
    def load(cls, source: str | os.PathLike | None = None, *, device: str | None = None,
             dtype: Any = "auto", cache_dir: str | os.PathLike | None = None,
             **kwargs: Any) -> "TorchModel":
        """Load a local checkpoint folder, a ``.gguf`` or (None) the embedded judge (converted once,
        cached under ``cache_dir``); ``dtype="auto"``: bf16 where native. Blocking."""
        _import_transformers()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder, default_name = checkpoint_folder(embedded_model_path() if source is None else source,
                                                 cache_dir)
        name = kwargs.pop("name", None) or default_name
        dev, dt = _resolve_device_dtype(device, dtype)
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        with torch.device("cpu"):
            model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=dt)
        model.to(dev)
        return cls(model, tokenizer, name=name, **kwargs)

    @property
    def device(self):
        return next(self.model.parameters()).device

    def render_prompt(self, messages: Sequence[Message]) -> str:
        """The prompt text for ``messages``; a trailing assistant message is continued."""
        if self._chat_template is not None:
            return self._chat_template(messages)
        msgs, prefix = split_prefix(messages)
        return self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True) + (prefix or "")

    def encode_prompt(self, messages: Sequence[Message]) -> list[int]:
        # the template already holds any BOS text: adding special tokens would double it
        ids = self.tokenizer(self.render_prompt(messages), add_special_tokens=False)["input_ids"]
        if (err := self._overflows(ids)) is not None:
            raise err
        return ids

    def _overflows(self, ids: list[int]) -> JudgeError | None:
        if self.context_length and len(ids) >= self.context_length:
            return JudgeError(f"prompt of {len(ids)} tokens does not fit the judge's context of "
                              f"{self.context_length} tokens", refused=True)
        return None

    def choice_token_ids(self, choice: str) -> list[int]:
        """Token ids that mean ``choice`` as the next token (``"4"``, ``" 4"``); ConfigError if none is one token."""
        hit = self._choice_cache.get(choice)
        if hit is not None:
            return hit
        ids: list[int] = []
        spelled = {}
        for variant in (choice, " " + choice):
            enc = self.tokenizer(variant, add_special_tokens=False)["input_ids"]
            spelled[variant] = self.tokenizer.convert_ids_to_tokens(enc)
            if len(enc) == 1 and enc[0] not in ids:
                ids.append(enc[0])
        if not ids:
            raise ConfigError(f"choice {choice!r} is not one token for this tokenizer "
                              f"(it spells as {spelled}); grade choices must be single tokens")
        self._choice_cache[choice] = ids
        return ids

    async def grade_distribution(self, messages: Sequence[Message], choices: Sequence[str],
                                 params: GenerationParams | None = None) -> TokenDistribution:
        """Exact probabilities of ``choices`` as the next token (one batched prefill; ``top_k`` None)."""
        choices = check_choices(choices)
        choice_ids = [self.choice_token_ids(c) for c in choices]
        return await self._submit("dist", messages, choice_ids=choice_ids, choices=choices)

    async def chat(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
                   json_schema: dict[str, Any] | None = None) -> Completion:
        p = params or GenerationParams()
        max_new = p.max_tokens or self.max_new_tokens
        temperature = 0.0 if p.temperature is None else float(p.temperature)
        key = (max_new, temperature, p.top_p if temperature > 0 else None, p.seed, p.stop or ())
        return await self._submit("gen", messages, gen_key=key)

    async def aclose(self) -> None:
        """Stop the worker threads (the weights stay loaded; later calls restart them)."""
        with self._worker_lock:
            threads, self._threads = self._threads, None
        if threads is not None:
            self._queue.put(None)
            loop = asyncio.get_running_loop()
            for t in threads:
                await loop.run_in_executor(None, t.join)

    async def _submit(self, kind: str, messages: Sequence[Message], **fields: Any) -> Any:
        loop = asyncio.get_running_loop()   # no messages: refused when the prompt is rendered
        job = Job(kind, [dict(m) for m in messages], loop, loop.create_future(), submitted=time.perf_counter(), **fields)
        self._ensure_worker()
        full: list[Job] | None = None
        with self._pending_lock:
            self._pending.append(job)
            first = len(self._pending) == 1
            if len(self._pending) >= self.max_batch_size:
                # a full batch goes now, while the loop builds the rest of a large grade_batch
                full, self._pending = self._pending, []
        if full is not None:
            self._queue.put(full)
        elif first:
            # flushed next iteration: the requests of this one (a gather) go as one group
            loop.call_soon(self._flush)
        return await job.future

    def _flush(self) -> None:
        with self._pending_lock:
            jobs, self._pending = self._pending, []
        if jobs:
            self._queue.put(jobs)

    def _ensure_worker(self) -> None:
        with self._worker_lock:
            if self._threads is None or not all(t.is_alive() for t in self._threads):
                # a fresh pair with fresh queues: a half-dead pair cannot be restarted safely
                self._queue, self._ready = queue.Queue(), queue.Queue()
                prep = threading.Thread(target=self._prepare_loop, args=(self._queue, self._ready),
                                        name=f"TorchModel[{self.name}].prepare", daemon=True)
                fwd = threading.Thread(target=self._forward_loop, args=(self._ready,),
                                       name=f"TorchModel[{self.name}].forward", daemon=True)
                self._threads = (prep, fwd)
                prep.start()
                fwd.start()

    def _prepare_loop(self, inbox: queue.Queue, ready: queue.Queue) -> None:
        try:
            stop = False
            while not stop:
                item = inbox.get()
                if item is None:
                    return
                jobs = list(item)
                while not stop and not inbox.empty():  # take what queued up meanwhile (one reader)
                    more = inbox.get_nowait()
                    stop = more is None
                    jobs.extend(more or ())
                window = self.max_batch_size
                while jobs:
                    # one batch at a time until two wait (the forward thread must never wait);
                    # once ahead, windows double up to 8 batches (a larger window pads less)
                    window = self.max_batch_size if ready.qsize() < 2 else \
                        min(2 * window, 8 * self.max_batch_size)
                    self._prepare_window(jobs[:window], ready)
                    jobs = jobs[window:]
        finally:
            ready.put(None)

    def _prepare_window(self, jobs: list[Job], ready: queue.Queue) -> None:
        live = [j for j in jobs if not j.future.done()]  # skip requests already cancelled
        try:
            groups: dict[tuple, list[Job]] = {}
            for job in self._tokenize(live):
                groups.setdefault((job.kind, job.gen_key), []).append(job)
            for (kind, _), group in groups.items():
                group.sort(key=lambda j: len(j.ids))
                prefix = self._choose_prefix([j.ids for j in group]) if kind == "dist" else ()
                for chunk in chunks(group, self.max_batch_size, self.max_batch_tokens):
                    ready.put(make_batch(kind, chunk, prefix, self._pad_id, self.device.type == "cuda"))
        except Exception as exc:  # a bug or a broken tokenizer: fail these requests, not the thread
            fail(live, exc)

    def _tokenize(self, live: list[Job]) -> list[Job]:
        """The jobs of ``live`` whose prompt renders and fits, ``ids`` set; the others fail."""
        texts = []
        for job in list(live):
            try:
                texts.append(self.render_prompt(job.messages))
            except Exception as exc:
                live.remove(job)
                fail([job], exc)
        encoded = self.tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
        ok = []
        for job, ids in zip(live, encoded):
            if (err := self._overflows(ids)) is not None:
                reply(job, None, err)
            else:
                job.ids = list(ids)
                ok.append(job)
        return ok

    def _choose_prefix(self, seqs: list[list[int]]) -> tuple[int, ...]:
        """The prefix whose cached keys/values the prompts ``seqs`` will start from (or ())."""
        if not self.share_prefix:
            return ()
        # at least one token of every prompt is run: its logits are the answer
        limit = min(len(s) for s in seqs) - 1
        common = min(len(os.path.commonprefix(seqs)), limit)
        # reuse a recent prefix all prompts start with, unless they share much more than it
        slack = max(self.min_prefix_tokens, common // 8)
        for key in self._recent_prefixes:
            n = len(key)
            if n <= limit and all(tuple(s[:n]) == key for s in seqs) and \
                    (len(seqs) == 1 or n >= common - slack):
                self._recent_prefixes.remove(key)
                self._recent_prefixes.insert(0, key)
                return key
        if len(seqs) < 2 or common < self.min_prefix_tokens:
            return ()  # one prompt alone says nothing about what others share
        key = tuple(seqs[0][:common])
        self._recent_prefixes.insert(0, key)
        del self._recent_prefixes[self.prefix_cache_size:]
        return key

    def _forward_loop(self, ready: queue.Queue) -> None:
        in_flight: InFlight | None = None
        while True:
            try:
                # with a batch in flight, launch the next one only if it already waits
                batch = ready.get() if in_flight is None else ready.get_nowait()
            except queue.Empty:  # nothing to launch meanwhile: read the results now
                in_flight = self._finish(in_flight)
                continue
            launched = None if batch is None else self._run(batch)
            # the next batch is queued on the device before the last one's results are read
            if in_flight is not None:
                self._finish(in_flight)
            if batch is None:
                return
            in_flight = launched if launched is None or launched.event is not None \
                else self._finish(launched)

    def _run(self, batch: Batch) -> InFlight | None:
        """Launch a distribution batch, or generate its replies; a failed batch of several runs again
        one job at a time (out of memory: a failure is its own job's, never its batch-mates')."""
        try:
            if batch.kind == "dist":
                return self._launch(batch)
            for job, res in zip(batch.jobs, self._generate(batch)):
                reply(job, res, None)
            return None
        except Exception as exc:
            if len(batch.jobs) == 1:
                fail(batch.jobs, exc)
                return None
        # past the except clause: the failed pass's tensors, held by its traceback, are freed
        for job in batch.jobs:
            flight = self._run(make_batch(batch.kind, [job], batch.prefix, self._pad_id, self.device.type == "cuda"))
            if flight is not None:
                self._finish(flight)
        return None

    def _prefix_cache(self, prefix: tuple[int, ...], batch_size: int) -> Any:
        """A fresh cache holding ``prefix``'s keys/values for each of ``batch_size`` rows."""
        import torch

        layers = self._prefixes.get(prefix)
        if layers is None:
            ids = torch.tensor([prefix], dtype=torch.long, device=self.device)
            out = self.model(input_ids=ids, use_cache=True, **self._last_logits)
            layers = [(k.detach(), v.detach()) for k, v in output_layers(out)]
            self._prefixes[prefix] = layers
            while len(self._prefixes) > self.prefix_cache_size:
                self._prefixes.popitem(last=False)
            self.prefix_stats["computed"] += 1
        else:
            self._prefixes.move_to_end(prefix)
            self.prefix_stats["reused"] += 1
        return expanded_cache(layers, batch_size, self.model.config)

    def _launch(self, batch: Batch) -> InFlight:
        import torch

        started = time.perf_counter()
        dev = self.device
        with torch.inference_mode():
            ids = batch.ids.to(dev, non_blocking=True)
            mask = batch.mask.to(dev, non_blocking=True)
            columns = batch.columns.to(dev, non_blocking=True)
            skip = len(batch.prefix)
            positions = (mask.cumsum(-1) - 1).clamp(min=0) + skip
            kwargs: dict[str, Any] = {"input_ids": ids, "position_ids": positions, "attention_mask": mask,
                                      "use_cache": bool(skip), **self._last_logits}
            if skip:
                kwargs[self._cache_arg] = self._prefix_cache(batch.prefix, len(batch.jobs))
                kwargs["attention_mask"] = torch.cat(
                    [torch.ones((len(batch.jobs), skip), dtype=mask.dtype, device=dev), mask], 1)
            logits = self.model(**kwargs).logits[:, -1, :].float()
            # the exact softmax over the whole vocabulary, read at the choice tokens only
            probs = (logits.index_select(1, columns) - torch.logsumexp(logits, -1, keepdim=True)).exp()
            event = None
            if dev.type == "cuda":
                probs = probs.to("cpu", non_blocking=True)
                event = torch.cuda.Event()
                event.record()
        self.batches["dist"] += 1
        return InFlight(batch, probs, event, started)

    def _finish(self, flight: InFlight) -> None:
        """Wait for a launched batch's results and hand them to its callers."""
        try:
            if flight.event is not None:
                flight.event.synchronize()
            rows = flight.probs.tolist()
        except Exception as exc:
            fail(flight.batch.jobs, exc)
        else:
            settle_distributions(flight.batch, rows, time.perf_counter() - flight.started)

    def _generate(self, batch: Batch) -> list[Completion]:
        import torch
        from transformers import GenerationConfig

        max_new, temperature, top_p, seed, stop = batch.jobs[0].gen_key
        dev = self.device
        ids, mask = batch.ids.to(dev), batch.mask.to(dev)
        sample = temperature > 0
        config = GenerationConfig(max_new_tokens=max_new, do_sample=sample,
                                  temperature=temperature if sample else None,
                                  top_p=top_p if sample and top_p is not None else None,
                                  top_k=None, pad_token_id=self._pad_id, eos_token_id=self._eos_id)
        with torch.inference_mode():
            if seed is not None:
                torch.manual_seed(seed)
            out = self.model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
        self.batches["gen"] += 1
        new = out[:, ids.shape[1]:].cpu().tolist()
        return [self._reply_of(job, tokens, stop) for job, tokens in zip(batch.jobs, new)]

    def _reply_of(self, job: Job, tokens: list[int], stop: Sequence[str]) -> Completion:
        finish, n_out = "length", len(tokens)
        if self._eos_id is not None and self._eos_id in tokens:
            tokens = tokens[:tokens.index(self._eos_id)]
            finish, n_out = "stop", len(tokens) + 1
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        for s in stop:
            cut = text.find(s)
            if cut >= 0:
                text, finish = text[:cut], "stop"
        return Completion(text=text, usage={"prompt_tokens": len(job.ids), "completion_tokens": n_out,
                                            "total_tokens": len(job.ids) + n_out},
                          latency_s=time.perf_counter() - job.submitted, finish_reason=finish,
                          structured=False)

    def __repr__(self) -> str:
        return f"TorchModel({self.name!r}, device={self.device}, dtype={self.model.dtype})"


