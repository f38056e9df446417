"""Fakes for tests, notebooks and benchmarks: ``ScriptedModel``, ``FakeJudgeServer`` (``python -m
rewardjudge.testing --port 8000`` runs one in its own process) and ``FakeTypedQuestionProvider``."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import http.client
import json
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ._sync import LoopThread
from .errors import ConfigError
from .models._base import Completion, GenerationParams, InferenceModel, Message
from .models._typed_question_client import request_problems
from .readouts import json_objects
from .readouts._seal import SEAL_LEAD
from .thread import content_text

__all__ = ["FakeJudgeServer", "FakeTypedQuestionProvider", "Fault", "ScriptExhausted", "ScriptedModel",
           "request_seal", "seal_reply", "without_seal"]


_SEAL_ASKED = re.compile(r'(?:the value "|the code )([0-9a-f]{16})\b')


def request_seal(messages: Sequence[Any]) -> "str | None":
    """The seal a request asks the judge to write on its verdict, or None for an unsealed request."""
    for m in reversed(list(messages)):
        found = _SEAL_ASKED.findall(content_text(m.get("content") if isinstance(m, dict) else "", images=[]))
        if found:
            return found[-1]
    return None


def without_seal(text: str) -> str:
    """A prompt text without the seal instruction the library appended to it."""
    at = text.rfind(SEAL_LEAD)
    return text if at < 0 else text[:at]


def seal_reply(reply: str, messages: Sequence[Any]) -> str:
    r"""``reply`` as a judge that follows the seal instruction writes it: the seal as the first and
    the last field of the last top-level JSON object, else the last line as ``VERDICT <seal>:
    <label>``; unchanged when the request is unsealed or the reply holds the seal already.

    >>> msgs = [{"role": "user", "content": 'Grade. ... with the value "0123456789abcdef": ...'}]
    >>> seal_reply('{"score": "PASS"}', msgs)
    '{"seal": "0123456789abcdef", "score": "PASS", "seal_end": "0123456789abcdef"}'
    >>> seal_reply('Looks right.\nVerdict: PASS', msgs)
    'Looks right.\nVERDICT 0123456789abcdef: PASS'
    """
    seal = request_seal(messages)
    if seal is None or seal in reply:
        return reply
    objects = json_objects(reply)   # the readout's own scanner: the outermost objects, in order
    if objects:
        start, end = objects[-1].start, objects[-1].end
        body = reply[start + 1:end - 1].strip()
        fields = f'"seal": "{seal}", {body}, "seal_end": "{seal}"' if body else \
            f'"seal": "{seal}", "seal_end": "{seal}"'
        return f'{reply[:start]}{{{fields}}}{reply[end:]}'
    body = reply.rstrip()
    cut = body.rfind("\n") + 1
    line = body[cut:].strip()
    head, colon, tail = line.partition(":")
    if colon and head.strip(" *_").casefold() in ("verdict", "final verdict") and tail.strip():
        line = tail.strip()
    return f"{body[:cut]}VERDICT {seal}: {line}{reply[len(body):]}"


def _unsealed_messages(messages: Sequence[Any]) -> list[Any]:
    """``messages`` with the seal instruction cut from the message holding it."""
    return [{**m, "content": without_seal(m["content"])}
            if isinstance(m, dict) and isinstance(m.get("content"), str) and request_seal([m]) is not None else m
            for m in messages]


class ScriptExhausted(ConfigError):
    """A ScriptedModel was asked more often than its script allows."""


Reply = Any  # str | Completion | BaseException


class ScriptedModel(InferenceModel):
    """Answers from a script (a list consumed one item per call, then ``default``, or
    ``f(messages, params, json_schema)``) of strs, ``Completion``s or exceptions; ``calls`` records
    every call; ``seal=True`` seals each reply and hides the seal instruction from a script function.

    >>> m = ScriptedModel(['{"reasoning": "fine", "score": "PASS"}'])
    """

    def __init__(self, script: Sequence[Reply] | Callable[..., Reply] = (), *, default: Reply = None,
                 delay: float = 0.0, name: str = "scripted", seal: bool = True):
        self._fn = script if callable(script) else None
        self._items = list(script) if not callable(script) else []
        self.default, self.delay, self.name, self.seal = default, delay, name, seal
        self.calls: list[dict[str, Any]] = []

    async def chat(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
                   json_schema: dict[str, Any] | None = None) -> Completion:
        self.calls.append({"messages": [dict(m) for m in messages], "params": params, "json_schema": json_schema})
        if self.delay:
            await asyncio.sleep(self.delay)
        if self._fn is not None:
            shown = _unsealed_messages(messages) if self.seal else list(messages)
            item = self._fn(shown, params, json_schema)
            if asyncio.iscoroutine(item):
                item = await item
        elif self._items:
            item = self._items.pop(0)
        elif self.default is not None:
            item = self.default
        else:
            raise ScriptExhausted(f"ScriptedModel {self.name!r} has no reply left for call {len(self.calls)}")
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Completion):
            return dataclasses.replace(item, text=seal_reply(item.text, messages)) if self.seal else item
        if not isinstance(item, str):
            raise ConfigError(f"a script item must be a str, Completion or exception, got {item!r:.60}")
        item = seal_reply(item, messages) if self.seal else item
        prompt_words = sum(len(content_text(m.get("content"), images=[]).split()) for m in messages)
        return Completion(text=item, usage={"prompt_tokens": prompt_words, "completion_tokens": len(item.split())},
                          structured=json_schema is not None)


@dataclass
class Fault:
    """What the fake server does with one request instead of a normal reply."""

    kind: str
    status: int = 200
    retry_after: str | None = None
    body: bytes = b""
    seconds: float = 0.0
    content: str = ""
    logprobs: list[dict[str, float]] | None = None

    @classmethod
    def http(cls, status: int, *, retry_after: float | str | None = None, body: str | None = None) -> "Fault":
        """Answer with an HTTP error status (and a Retry-After header)."""
        payload = body if body is not None else json.dumps({"error": {"message": f"status {status}"}})
        return cls("status", status=status, retry_after=None if retry_after is None else str(retry_after),
                   body=payload.encode())

    @classmethod
    def timeout(cls, seconds: float = 3600.0) -> "Fault":
        """Hold the request without answering for ``seconds``."""
        return cls("timeout", seconds=seconds)

    @classmethod
    def drop(cls) -> "Fault":
        """Close the connection without answering."""
        return cls("drop")

    @classmethod
    def malformed(cls, body: bytes | str = b"{not json") -> "Fault":
        """Answer 200 with a body that is not a chat completion."""
        return cls("malformed", body=body.encode() if isinstance(body, str) else body)

    @classmethod
    def truncated(cls) -> "Fault":
        """Announce a longer body than is sent, then close."""
        return cls("truncated")

    @classmethod
    def reply(cls, content: str, *, logprobs: list[dict[str, float]] | None = None) -> "Fault":
        """A normal reply with this content (and optional per-token top logprobs)."""
        return cls("reply", content=content, logprobs=logprobs)


DEFAULT_REPLY = '{"reasoning": "The answer addresses the question.", "score": "PASS"}'


def _completion_body(text: str, model: str, prompt_tokens: int, logprobs=None, *, chat: bool) -> bytes:
    """A chat completion body, or (``chat`` False) a legacy ``/v1/completions`` one."""
    tops = [(max(alts, key=alts.get), max(alts.values())) if alts else ("", 0.0) for alts in logprobs or ()]
    if chat:
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                  "finish_reason": "stop"}
        if logprobs is not None:
            choice["logprobs"] = {"content": [
                {"token": tok, "logprob": lp, "top_logprobs": [{"token": t, "logprob": v} for t, v in alts.items()]}
                for (tok, lp), alts in zip(tops, logprobs)]}
    else:
        choice = {"index": 0, "text": text, "finish_reason": "length", "logprobs": None}
        if logprobs is not None:
            choice["logprobs"] = {"tokens": [t for t, _ in tops], "token_logprobs": [lp for _, lp in tops],
                                  "top_logprobs": [dict(alts) for alts in logprobs],
                                  "text_offset": [0] * len(logprobs)}
    n = max(1, len(text.split()))
    return json.dumps({"id": "fake", "object": "chat.completion" if chat else "text_completion",
                       "created": int(time.time()), "model": model, "choices": [choice],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n,
                                 "total_tokens": prompt_tokens + n}}).encode()


class _Conn(asyncio.Protocol):
    def __init__(self, server: "FakeJudgeServer"):
        self.server, self.buf = server, b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport):
        self.transport = transport
        self.server._conns.add(self)

    def connection_lost(self, exc):
        self.server._conns.discard(self)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].decode("latin-1")
            lines = head.split("\r\n")
            try:
                method, path, _ = lines[0].split(" ", 2)
            except ValueError:
                self._send(400, b'{"error": "bad request line"}')
                self.transport.close()
                return
            length = 0
            for line in lines[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "content-length":
                    length = int(v.strip() or 0)
            if len(self.buf) < head_end + 4 + length:
                return
            body = self.buf[head_end + 4:head_end + 4 + length]
            self.buf = self.buf[head_end + 4 + length:]
            self.server._handle(self, method, path, body)

    def _send(self, status: int, body: bytes, extra: str = "") -> None:
        if self.transport is None or self.transport.is_closing():
            return
        reason = http.client.responses.get(status, "Status")
        self.transport.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n".encode() + body)


class FakeJudgeServer:
    """A loopback OpenAI-compatible judge server: ``responder(request) -> str | Fault`` (default: PASS),
    ``enqueue(*faults)`` answers the next requests first; ``requests`` records every body.

    >>> with FakeJudgeServer(latency=0.01) as server:   # doctest: +SKIP
    ...     model = OpenAIModel(server.url, "fake")
    """

    def __init__(self, responder: Callable[[dict[str, Any]], str | Fault] | None = None, *, latency: float = 0.0,
                 host: str = "127.0.0.1", port: int = 0, model: str = "fake-judge", record: bool = True,
                 seal: bool = True):
        self.responder = responder or (lambda req: DEFAULT_REPLY)
        self.seal = seal
        self.latency, self.host, self.port, self.model, self.record = latency, host, port, model, record
        self.requests: list[dict[str, Any]] = []
        self.request_count = 0
        self._queue: list[Fault] = []
        self._lock = threading.Lock()
        self._conns: set[_Conn] = set()
        self._runner: LoopThread | None = None
        self._server: Any = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def enqueue(self, *faults: Fault) -> None:
        with self._lock:
            self._queue.extend(faults)

    def _accept(self, conn: "_Conn", method: str, path: str, body: bytes, endpoint: str) -> "dict[str, Any] | None":
        """The JSON body of a POST to ``endpoint``, counted and recorded; None once an error was sent."""
        if method != "POST" or not path.rstrip("/").endswith(endpoint):
            conn._send(404, b'{"error": "not found"}')
            return None
        try:
            req = json.loads(body)
        except ValueError:
            conn._send(400, b'{"error": "body is not JSON"}')
            return None
        self.request_count += 1
        if self.record:
            self.requests.append(req)
        return req

    def _handle(self, conn: _Conn, method: str, path: str, body: bytes) -> None:
        if method == "GET" and path.rstrip("/").endswith("/models"):
            conn._send(200, json.dumps({"object": "list", "data": [{"id": self.model}]}).encode())
            return
        req = self._accept(conn, method, path, body, "/completions")
        if req is not None:
            self._schedule(conn, req)

    def _reply_for(self, req: dict[str, Any]) -> Fault:
        """What the responder says to ``req``, as a Fault (a reply is one)."""
        if self.seal and isinstance(req.get("messages"), list):
            req = {**req, "messages": _unsealed_messages(req["messages"])}
        out = self.responder(req)
        return out if isinstance(out, Fault) else Fault.reply(str(out))

    def _schedule(self, conn: _Conn, req: dict[str, Any]) -> None:
        """Answer ``req`` after the latency: the next queued fault, else the responder's reply."""
        with self._lock:
            fault = self._queue.pop(0) if self._queue else None
        if fault is None:
            try:
                fault = self._reply_for(req)
            except Exception as exc:  # a broken responder is a 500, like a broken server
                fault = Fault.http(500, body=json.dumps({"error": repr(exc)}))
        delay = fault.seconds if fault.kind == "timeout" else self.latency
        asyncio.get_running_loop().call_later(delay, self._answer, conn, fault, req)

    def _answer(self, conn: _Conn, fault: Fault, req: dict[str, Any]) -> None:
        t = conn.transport
        if t is None or t.is_closing():
            return
        if fault.kind == "reply" and "prompt" in req:
            words = len(str(req.get("prompt", "")).split())
            conn._send(200, _completion_body(fault.content, req.get("model", self.model), words,
                                             fault.logprobs, chat=False))
        elif fault.kind == "reply":
            words = sum(len(str(m.get("content", "")).split()) for m in req.get("messages", []))
            content = seal_reply(fault.content, req.get("messages") or []) if self.seal else fault.content
            conn._send(200, _completion_body(content, req.get("model", self.model), words, fault.logprobs, chat=True))
        elif fault.kind == "status":
            extra = f"Retry-After: {fault.retry_after}\r\n" if fault.retry_after is not None else ""
            conn._send(fault.status, fault.body, extra)
        elif fault.kind == "malformed":
            conn._send(200, fault.body)
        elif fault.kind == "truncated":
            t.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"
                    b'{"choices": [{"message": {"con')
            t.close()
        elif fault.kind in ("drop", "timeout"):
            t.abort()

    def start(self) -> "FakeJudgeServer":
        self._runner = LoopThread("FakeJudgeServer")

        async def listen() -> asyncio.AbstractServer:
            return await asyncio.get_running_loop().create_server(
                lambda: _Conn(self), self.host, self.port, reuse_address=True, backlog=1024)

        try:
            self._server = self._runner.run(listen())
        except BaseException:  # port taken: reported to the caller
            self._runner.close()
            raise
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Close the listener and every open connection (like a killed server)."""
        runner, self._runner = self._runner, None
        if runner is None:
            return

        async def shutdown() -> None:
            self._server.close()
            for c in list(self._conns):
                c.transport.abort()
            await self._server.wait_closed()

        try:
            runner.run(shutdown())
        finally:
            runner.close()   # answers not yet sent are dropped with the loop

    def __enter__(self) -> "FakeJudgeServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    async def __aenter__(self) -> "FakeJudgeServer":
        return self.start()

    async def __aexit__(self, *exc) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.stop)


class FakeTypedQuestionProvider(FakeJudgeServer):
    """A loopback typed-question provider (``POST {url}/questions``; another shape gets 400):
    ``responder(request) -> {name: probabilities} | list | Fault`` (default: uniform).

    >>> with FakeTypedQuestionProvider(lambda req: {"relevance": [0.1, 0.9]}) as p:  # doctest: +SKIP
    ...     client = TypedQuestionClient(p.url)
    """

    def __init__(self, responder: Callable[[dict[str, Any]], Any] | None = None, *, model: str = "jev-latest",
                 **kwargs: Any):
        super().__init__(None, model=model, **kwargs)
        self.responder = responder or (lambda req: {
            name: [1.0 / len(q["criteria"])] * len(q["criteria"]) for name, q in req["questions"].items()})

    def _handle(self, conn: _Conn, method: str, path: str, body: bytes) -> None:
        req = self._accept(conn, method, path, body, "/questions")
        if req is None:
            return
        problems = request_problems(req, "score")
        if problems:
            conn._send(400, json.dumps({"error": "; ".join(problems)}).encode())
            return
        self._schedule(conn, req)

    def _reply_for(self, req: dict[str, Any]) -> Fault:
        out = self.responder(req)
        if isinstance(out, Fault):
            return out
        if isinstance(out, (list, tuple)):
            out = {name: out for name in req["questions"]}
        answers = {name: {"probabilities": ps, "score": sum(i * p for i, p in enumerate(ps)) / (sum(ps) or 1.0)}
                   for name, ps in ((n, list(p)) for n, p in out.items())}
        return Fault.reply(json.dumps({"model": req.get("model", self.model), "answers": answers,
                                       "usage": {"questions": len(req["questions"])}}))

    def _answer(self, conn: _Conn, fault: Fault, req: dict[str, Any]) -> None:
        if fault.kind == "reply":
            conn._send(200, fault.content.encode())   # _send skips a closed connection
        else:
            super()._answer(conn, fault, req)


def main(argv: list[str] | None = None) -> None:
    """Run a FakeJudgeServer in the foreground (for benchmarks)."""
    p = argparse.ArgumentParser(prog="python -m rewardjudge.testing",
                                description="Loopback fake OpenAI-compatible judge server.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    p.add_argument("--reply", default=DEFAULT_REPLY, help="the reply content")
    args = p.parse_args(argv)
    server = FakeJudgeServer(lambda req: args.reply, latency=args.latency, host=args.host,
                             port=args.port, record=False).start()
    print(f"listening {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
