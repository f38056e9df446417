"""spawn_judge: a local judge server as a child process on a free loopback port (docs/judges.md),
stopped on exit, error or interpreter exit, and on Linux when the spawning main thread dies."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Sequence

from .._paths import embedded_model_path
from ..errors import ConfigError, JudgeStartupError
from ._chat_template import ChatTemplate
from ._discover import get_models
from ._openai_compat import OpenAIModel
from ._torch_model import TorchModel

BACKENDS = ("llama_cpp", "vllm", "sglang")
EMBEDDED_ALIAS = "smollm2-135m-instruct"
_LIVE: "weakref.WeakSet[JudgeServer]" = weakref.WeakSet()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _check_backend(backend: str, known: tuple[str, ...] = BACKENDS) -> str:
    if backend not in known:
        raise ConfigError(f"unknown judge backend {backend!r}; expected one of {known}")
    return backend


def server_command(backend: str, model: str, host: str, port: int, *, served_name: str,
                   n_threads: int | None = None, context_length: int | None = None,
                   extra_args: Sequence[str] | None = (), n_threads_batch: int | None = None) -> list[str]:
    """The command line that starts ``backend`` serving ``model`` on host:port (llama_cpp:
    ``n_threads`` generate, ``n_threads_batch``, by default the same, read the prompt)."""
    _check_backend(backend)
    py = sys.executable
    if backend == "llama_cpp":
        cmd = [py, "-m", "llama_cpp.server", "--model", model, "--host", host, "--port", str(port),
               "--model_alias", served_name, "--n_ctx", str(context_length or 2048), "--verbose", "False"]
        if n_threads:
            cmd += ["--n_threads", str(n_threads)]
        if n_threads_batch or n_threads:
            cmd += ["--n_threads_batch", str(n_threads_batch or n_threads)]
    else:
        vllm = backend == "vllm"
        cmd = [py, "-m", "vllm.entrypoints.openai.api_server" if vllm else "sglang.launch_server",
               "--model" if vllm else "--model-path", model, "--host", host, "--port", str(port),
               "--served-model-name", served_name]
        if context_length:
            cmd += ["--max-model-len" if vllm else "--context-length", str(context_length)]
    return cmd + list(extra_args or ())  # None: no extra arguments, as ()


def _pdeathsig() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class JudgeServer:
    """A spawned judge server process; use through ``spawn_judge``."""

    def __init__(self, backend: str = "llama_cpp", model: str | os.PathLike | None = None, *,
                 host: str = "127.0.0.1", port: int | None = None, served_name: str | None = None,
                 n_threads: int | None = None, context_length: int | None = None,
                 extra_args: Sequence[str] | None = (), startup_timeout: float = 120.0,
                 env: dict[str, str] | None = None, model_kwargs: dict[str, Any] | None = None):
        self.backend = _check_backend(backend)
        if model is None:
            if backend != "llama_cpp":
                raise ConfigError(f"backend {backend!r} needs a model (a path or hub name)")
            model = embedded_model_path()
        self.model_path = str(model)
        self.host = host
        self.port = port or free_port(host)
        self.served_name = served_name or (EMBEDDED_ALIAS if backend == "llama_cpp" else str(model))
        cores = os.cpu_count() or 1
        # Each generated token ends at a barrier of all its threads: one descheduled thread
        # stalls the rest (2 loaded cores: a 4-candidate reply 44-50 s with 2 threads, 5-8 s
        # with 1). So by default half the cores generate and all read the prompt.
        self.command = server_command(backend, self.model_path, host, self.port,
                                      served_name=self.served_name,
                                      n_threads=n_threads or max(1, cores // 2),
                                      n_threads_batch=n_threads or cores,
                                      context_length=context_length, extra_args=extra_args)
        self.startup_timeout = startup_timeout
        self.env = env
        self.model_kwargs = dict(model_kwargs or {})
        self.process: subprocess.Popen | None = None
        self._log = tempfile.NamedTemporaryFile(prefix=f"rewardjudge-{backend}-", suffix=".log",
                                                delete=False)
        self.log_path = Path(self._log.name)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def start(self) -> None:
        env = {**os.environ, **(self.env or {})}
        in_main = threading.current_thread() is threading.main_thread()
        self.process = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                        preexec_fn=_pdeathsig if in_main and sys.platform == "linux" else None)
        _LIVE.add(self)

    def wait_ready(self) -> None:
        """Block until the server lists its models, or raise JudgeStartupError."""
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise JudgeStartupError(f"{self.backend} judge server exited with code {code} "
                                        f"before answering", log_tail=self.log_tail())
            with contextlib.suppress(OSError, ValueError):  # not listening yet, or still loading
                get_models(self.base_url, 2)
                return
            time.sleep(0.2)
        self.stop()
        raise JudgeStartupError(f"{self.backend} judge server did not answer within "
                                f"{self.startup_timeout}s", log_tail=self.log_tail())

    def stop(self, grace: float = 10.0) -> None:
        """Stop the process group: SIGTERM, then SIGKILL after ``grace`` seconds."""
        p, self.process = self.process, None
        _LIVE.discard(self)
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(grace)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)

    def model(self) -> OpenAIModel:
        llama = self.backend == "llama_cpp"
        # llama-cpp-python's server: its json_schema response_format is an HTTP 500, it reads a
        # GBNF grammar from the body's "grammar" field, and it converts every request's schema
        kwargs: dict[str, Any] = {"structured_output": "json_object" if llama else "json_schema",
                                  "max_concurrency": 4 if llama else 256, "timeout": 120.0,
                                  **({"grammar_field": "grammar"} if llama else {})}
        if llama and self.model_path.lower().endswith(".gguf"):
            # for /v1/completions (reading a grade after an assistant prefix); read at first use
            kwargs["chat_template"] = ChatTemplate(gguf_path=self.model_path)
        model = OpenAIModel(self.base_url, self.served_name, api_key="local", **{**kwargs, **self.model_kwargs})
        model.caches_grammars = not llama
        return model


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop(grace=3.0)


class spawn_judge:
    """Start a local judge server (``"llama_cpp"``, ``"vllm"``, ``"sglang"``) and yield an ``OpenAIModel``
    bound to it, stopped when the block exits, or load a ``TorchModel`` (``"torch"``; keywords go to
    ``TorchModel.load``). Keywords: ``port``, ``n_threads``, ``context_length``, ``extra_args``,
    ``startup_timeout``, ``model_kwargs`` (for ``OpenAIModel``); see docs/judges.md."""

    def __init__(self, backend: str = "llama_cpp", model: str | os.PathLike | None = None, **kwargs: Any):
        self._torch = (model, kwargs) if _check_backend(backend, (*BACKENDS, "torch")) == "torch" else None
        self.server = JudgeServer(backend, model, **kwargs) if backend != "torch" else None
        self._model: OpenAIModel | None = None

    def _ready(self) -> Any:
        """Blocking: the torch model loaded, or the started server's model once it answers."""
        if self.server is None:
            self._model = TorchModel.load(self._torch[0], **self._torch[1])
        else:
            self.server.wait_ready()
            self._model = self.server.model()
        return self._model

    async def __aenter__(self) -> OpenAIModel:
        loop = asyncio.get_running_loop()
        if self.server is not None:
            self.server.start()   # in this thread: the child's PDEATHSIG follows the thread that spawns it
        try:
            return await loop.run_in_executor(None, self._ready)
        except BaseException:
            if self.server is not None:
                await loop.run_in_executor(None, self.server.stop)
            raise

    async def __aexit__(self, *exc: Any) -> None:
        try:
            if self._model is not None:
                await self._model.aclose()
        finally:
            if self.server is not None:
                await asyncio.get_running_loop().run_in_executor(None, self._stopped)

    def _stopped(self) -> None:
        """Stop the server; its model's requests are refused from now on, saying why."""
        self.server.stop()
        if isinstance(self._model, OpenAIModel):
            self._model._http.stopped = (f"the judge spawned at {self.server.base_url} was stopped when its "
                                         f"spawn_judge block ended: grade inside `async with spawn_judge() as judge:`")

    def __enter__(self) -> OpenAIModel:
        """Synchronous form: start and wait; the model is used from async code later."""
        if self.server is not None:
            self.server.start()
        try:
            return self._ready()
        except BaseException:
            if self.server is not None:
                self.server.stop()
            raise

    def __exit__(self, *exc: Any) -> None:
        if self.server is not None:
            self._stopped()
