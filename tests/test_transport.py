"""OpenAIModel's HTTP transport (aiohttp) against raw loopback servers.

Each server here is a few lines of asyncio in a background thread that
writes exactly the bytes a case needs: servers that close after every
reply, replies far over the size cap, redirects, TLS with a private CA, a
forward proxy, an IPv6 listener, broken framings.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest

from rewardjudge.testing import seal_reply

from rewardjudge import StringThread
from rewardjudge.errors import (ConfigError, JudgeConnectionError, JudgeHTTPError,
                                JudgeResponseError)
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.models import OpenAIModel, RetryPolicy

MSG = [{"role": "user", "content": "grade this"}]
VERDICT = '{"reasoning": "fine", "score": "PASS"}'
NO_RETRY = RetryPolicy(max_retries=0)
FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)


def chat_body(content: str = VERDICT) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 5,
                                 "total_tokens": 8}}).encode()


def http_reply(body: bytes, status: str = "200 OK", headers: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{headers}\r\n").encode() + body


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Close:
    """Write these bytes, then close the connection."""
    data: bytes


@dataclass
class Stream:
    """Write the head, then ``chunk`` up to ``total`` bytes (as chunked encoding if
    ``chunked``) while the client keeps reading; ``sent`` counts what got out."""
    head: bytes
    chunk: bytes
    total: int
    chunked: bool = False
    sent: int = 0


@dataclass
class Loopback:
    """A raw HTTP/1.1 server in a background thread: ``handler(Request)`` returns the
    bytes to write (the connection stays open), a ``Close`` or a ``Stream``."""

    handler: Callable[[Request], Any]
    host: str = "127.0.0.1"
    ssl_context: ssl.SSLContext | None = None
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    open: int = 0
    port: int = 0

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if line:
                        k, _, v = line.partition(":")
                        headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                req = Request(method, target, headers, body)
                self.requests.append(req)
                reply = self.handler(req)
                if isinstance(reply, Stream):
                    writer.write(reply.head)
                    while reply.sent < reply.total:
                        data = (b"%x\r\n%s\r\n" % (len(reply.chunk), reply.chunk)
                                if reply.chunked else reply.chunk)
                        writer.write(data)
                        await writer.drain()
                        reply.sent += len(reply.chunk)
                    break
                writer.write(reply.data if isinstance(reply, Close) else reply)
                await writer.drain()
                if isinstance(reply, Close):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError, OSError):
            pass
        finally:
            self.open -= 1
            writer.close()

    def __enter__(self) -> "Loopback":
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            server = self._loop.run_until_complete(
                asyncio.start_server(self._serve, self.host, 0, ssl=self.ssl_context))
            self._server = server
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: Any) -> None:
        async def stop() -> None:
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def wait_closed(self, timeout: float = 10.0) -> bool:
        """True once no client connection is open (waits for the server thread to see EOF)."""
        done = threading.Event()

        async def poll() -> None:
            while self.open:
                await asyncio.sleep(0.01)
            done.set()

        fut = asyncio.run_coroutine_threadsafe(poll(), self._loop)
        ok = done.wait(timeout)
        fut.cancel()
        return ok


def answer(req: Request) -> bytes:
    """The judge's verdict, sealed with the request's seal as an obedient judge writes it."""
    try:
        messages = json.loads(req.body).get("messages") or []
    except ValueError:
        messages = []
    return http_reply(chat_body(seal_reply(VERDICT, messages)))


# --------------------------------------------------------------------------
# servers that close the connection after replying
# --------------------------------------------------------------------------
@pytest.mark.parametrize("announce", [True, False], ids=["Connection: close", "silent close"])
async def test_server_that_closes_after_every_reply(announce):
    headers = "Connection: close\r\n" if announce else ""
    with Loopback(lambda req: Close(http_reply(chat_body(), headers=headers))) as srv:
        # announced: nothing to retry. A silent close races the connection's reuse; the
        # one retry that covers it is sent at once, not after a backoff of up to an hour
        slow = RetryPolicy(max_retries=1, base_delay=3600, max_delay=3600)
        # (silently closed: one connection at a time, so the one immediate retry always gets
        # a fresh connection; with 8 in flight, 2 stale pooled connections in a row may serve
        # a request and its retry, which no bounded retry policy can rule out)
        async with OpenAIModel(srv.url, "judge", max_concurrency=8 if announce else 1, timeout=5,
                               retry_policy=NO_RETRY if announce else slow) as m:
            async def run():
                for _ in range(40):                                   # back to back
                    assert (await m.chat(MSG)).text == VERDICT
                return await asyncio.gather(*(m.chat(MSG) for _ in range(40)))  # 8 at a time

            replies = await asyncio.wait_for(run(), 300)  # a backoff taken would hang here
        assert [r.text for r in replies] == [VERDICT] * 40
        assert len(srv.requests) == 80 if announce else len(srv.requests) >= 80


# --------------------------------------------------------------------------
# reply size cap
# --------------------------------------------------------------------------
_BIG = 200 * 1024 * 1024
_MIB = b"x" * (1 << 20)


def _gzip_bomb() -> bytes:
    body = gzip.compress(b" " * (64 << 20), 9)   # 64 MiB of spaces in ~64 KiB
    return http_reply(body, headers="Content-Encoding: gzip\r\n")


SIZE_CASES = [
    # announces 200 MB and streams it: refused from the header, nothing buffered
    ("content-length", lambda: Stream(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % _BIG,
                                       _MIB, _BIG)),
    # chunked, no length: read incrementally and cut once past the cap
    ("chunked", lambda: Stream(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                               _MIB, _BIG, chunked=True)),
    # small on the wire, 64 MiB once decompressed
    ("gzip bomb", _gzip_bomb),
]


@pytest.mark.parametrize("name,make", SIZE_CASES, ids=[c[0] for c in SIZE_CASES])
async def test_reply_over_the_size_cap_is_refused(name, make):
    sent: list[Stream] = []

    def handler(req: Request):
        reply = make()
        if isinstance(reply, Stream):
            sent.append(reply)
        return reply

    with Loopback(handler) as srv:
        async with OpenAIModel(srv.url, "judge", retry_policy=FAST, timeout=30,
                               max_response_bytes=4 << 20) as m:
            with pytest.raises(JudgeResponseError, match="max_response_bytes=4194304") as info:
                await m.chat(MSG)
        assert info.value.attempts == 1 and len(srv.requests) == 1  # not retried
        assert srv.wait_closed()
    # the client stopped reading: most of the 200 MB never left the server
    assert all(s.sent < _BIG // 4 for s in sent)


async def test_error_reply_body_is_cut_at_the_cap():
    with Loopback(lambda req: http_reply(b"e" * (3 << 20), "500 Internal Server Error")) as srv:
        async with OpenAIModel(srv.url, "judge", retry_policy=NO_RETRY,
                               max_response_bytes=1 << 20) as m:
            with pytest.raises(JudgeHTTPError) as info:
                await m.chat(MSG)
    assert info.value.status == 500 and len(info.value.body) == 1 << 20


def test_default_cap_is_a_few_mib():
    assert 1 << 20 <= OpenAIModel("http://127.0.0.1:1/v1", "m").max_response_bytes <= 16 << 20


# --------------------------------------------------------------------------
# broken framing is an error, never a silently wrong body
# --------------------------------------------------------------------------
@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 3_3_6\r\n\r\n" + b"x" * 336,        # not a number
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n",           # negative chunk
    b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"choices\": [",         # cut short
    b"SSH-2.0-OpenSSH_9.6\r\n\r\n",                                          # not HTTP
], ids=["underscored length", "negative chunk", "truncated", "not http"])
async def test_broken_framing_is_a_connection_error(raw):
    with Loopback(lambda req: Close(raw)) as srv:
        async with OpenAIModel(srv.url, "judge", retry_policy=NO_RETRY, timeout=5) as m:
            with pytest.raises(JudgeConnectionError):
                await m.chat(MSG)


# --------------------------------------------------------------------------
# redirects: never followed, http and https alike
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """A private CA and a server certificate for 127.0.0.1 signed by it."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    d = tmp_path_factory.mktemp("tls")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj",
        "/CN=rewardjudge test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", *ec, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                               "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                               "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "ext.cnf")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(d / "srv.pem", d / "srv.key")
    return {"ca": d / "ca.pem", "server": server_ctx}


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_redirects_are_not_followed(scheme, request):
    ctx = request.getfixturevalue("tls") if scheme == "https" else None

    def handler(req: Request) -> bytes:
        if req.target == "/v1/chat/completions":
            return http_reply(b"", "307 Temporary Redirect", "Location: /elsewhere/chat\r\n")
        return http_reply(chat_body())   # following would have succeeded here

    with Loopback(handler, ssl_context=ctx and ctx["server"]) as srv:
        verify = str(ctx["ca"]) if ctx else True
        async with OpenAIModel(srv.url, "judge", retry_policy=FAST, verify=verify) as m:
            with pytest.raises(JudgeHTTPError, match="redirects to '/elsewhere/chat'") as info:
                await m.chat(MSG)
    assert info.value.status == 307 and info.value.attempts == 1
    assert [r.target for r in srv.requests] == ["/v1/chat/completions"]


async def test_redirects_are_not_followed_with_a_users_httpx_client():
    with Loopback(lambda req: http_reply(b"", "308 Permanent Redirect",
                                         "Location: /v2/chat/completions\r\n")) as srv:
        async with httpx.AsyncClient(follow_redirects=True) as client:
            m = OpenAIModel(srv.url, "judge", http_client=client, retry_policy=FAST)
            with pytest.raises(JudgeHTTPError, match="redirects to"):
                await m.chat(MSG)
            await m.aclose()
            assert not client.is_closed  # the user's client is theirs to close
    assert len(srv.requests) == 1


# --------------------------------------------------------------------------
# TLS: verify= a CA bundle, an SSLContext, or False
# --------------------------------------------------------------------------
async def test_tls_verification_options(tls):
    with Loopback(answer, ssl_context=tls["server"]) as srv:
        # a private CA is not trusted by default; a certificate error is not retried
        async with OpenAIModel(srv.url, "judge", retry_policy=FAST) as m:
            with pytest.raises(JudgeConnectionError, match="verify=") as info:
                await m.chat(MSG)
        assert info.value.attempts == 1
        ctx = ssl.create_default_context(cafile=str(tls["ca"]))
        for verify in (str(tls["ca"]), tls["ca"], ctx, False):
            async with OpenAIModel(srv.url, "judge", retry_policy=NO_RETRY, verify=verify) as m:
                assert (await m.chat(MSG)).text == VERDICT


@pytest.mark.parametrize("verify, words", [
    ("/nonexistent/ca.pem", "no CA bundle file or directory"),
    (1, "verify must be True, False, a CA bundle path or an ssl.SSLContext"),
])
def test_bad_verify(verify, words):
    with pytest.raises(ConfigError, match=words):
        OpenAIModel("https://127.0.0.1:1/v1", "m", verify=verify)


def test_unreadable_ca_bundle(tmp_path):
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(ConfigError, match="verify: cannot load the CA bundle"):
        OpenAIModel("https://127.0.0.1:1/v1", "m", verify=str(bad))


# --------------------------------------------------------------------------
# proxies from the environment
# --------------------------------------------------------------------------
async def test_http_proxy_and_no_proxy_are_honoured(monkeypatch):
    with Loopback(answer) as proxy, Loopback(answer) as judge:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("http_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        # a name nothing resolves: only the proxy can answer for it
        async with OpenAIModel("http://judge.invalid:8000/v1", "judge", retry_policy=NO_RETRY) as m:
            assert (await m.chat(MSG)).text == VERDICT
        assert proxy.requests[0].target == "http://judge.invalid:8000/v1/chat/completions"
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with OpenAIModel(judge.url, "judge", retry_policy=NO_RETRY) as m:
            assert (await m.chat(MSG)).text == VERDICT
        assert len(proxy.requests) == 1 and len(judge.requests) == 1


# --------------------------------------------------------------------------
# the URL and headers, checked at construction
# --------------------------------------------------------------------------
def test_transport_failures_map_to_judge_errors():
    """Only a first attempt's dropped connection (a kept-alive one the server closed) is retried at
    once; a refused or unreachable one backs off; what is no transport failure passes as it is."""
    import aiohttp

    from rewardjudge.errors import JudgeTimeoutError

    failure = OpenAIModel("http://127.0.0.1:9/v1", "m")._http._failure
    refused = aiohttp.ClientConnectorError(object(), ConnectionRefusedError(111, "refused"))
    for exc, attempt, retry_now in [(aiohttp.ServerDisconnectedError(), 1, True),
                                    (aiohttp.ClientOSError(104, "reset"), 1, True),
                                    (aiohttp.ServerDisconnectedError(), 2, False),
                                    (refused, 1, False), (ConnectionResetError(), 1, False),
                                    (aiohttp.ClientPayloadError("cut"), 1, False)]:
        err = failure(exc, attempt)
        assert type(err) is JudgeConnectionError and err.retryable, exc
        assert getattr(err, "retry_after", None) == (0.0 if retry_now else None), exc
        assert "judge connection failed" in str(err)
    assert type(failure(asyncio.TimeoutError(), 1)) is JudgeTimeoutError
    assert failure(ValueError("a bug"), 1) is None


def _ipv6_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_available(), reason="no IPv6 loopback")
async def test_ipv6_literal_url():
    with Loopback(answer, host="::1") as srv:
        async with OpenAIModel(srv.url, "judge", retry_policy=NO_RETRY) as m:
            assert (await m.chat(MSG)).text == VERDICT
    assert srv.requests[0].headers["host"] == f"[::1]:{srv.port}"


async def test_headers_reach_the_server():
    with Loopback(answer) as srv:
        async with OpenAIModel(srv.url, "judge", api_key="k-1", retry_policy=NO_RETRY,
                               headers={"X-Team": "evals", "OpenAI-Project": "p1"}) as m:
            await m.chat(MSG)
    h = srv.requests[0].headers
    assert (h["authorization"], h["x-team"], h["openai-project"]) == ("Bearer k-1", "evals", "p1")


BAD_CONFIG = [
    # a header value with CR/LF would inject headers into the request
    ({"api_key": "sk-abc\r\nX-Admin: 1"}, "api_key must not contain a line break"),
    ({"api_key": "sk-abc\n"}, "trailing newline read from a file"),
    ({"headers": {"X-A": "ok\r\nHost: evil"}}, r"headers\['X-A'\] must not contain a line break"),
    ({"headers": {"X-A": "a\x00b"}}, r"headers\['X-A'\] contains the control character"),
    ({"headers": {"Bad Name": "v"}}, "not a valid HTTP header name"),
    ({"headers": {"X-A": 3}}, "must be a str"),
    ({"headers": {"X-A": "café ☕"}}, "outside Latin-1"),
    ({"api_key": " sk "}, "leading or trailing whitespace"),
    # URLs
    ({"base_url": "ftp://judge/v1"}, r"http\(s\) URL ending in /v1"),
    ({"base_url": "http://::1:8000/v1"}, r"IPv6 address goes in brackets"),
    ({"base_url": "http://[::zz]:8000/v1"}, "not a valid URL|not an IPv6 address"),
    ({"base_url": "http://judge:99999/v1"}, "invalid port"),
    ({"base_url": "http://judge:80x/v1"}, "invalid port"),
    ({"base_url": "http://user:pw@judge/v1"}, "must not carry credentials"),
    ({"base_url": "http://judge/v1?x=1"}, "must not have a query"),
    ({"base_url": "http://judge/v1\r\nX: y"}, "spaces or control characters"),
    ({"base_url": "http://ju dge/v1"}, "spaces or control characters"),
    ({"base_url": "http:///v1"}, r"http\(s\) URL ending in /v1"),
    ({"base_url": "http://ju<dge>:80/v1"}, "not a valid host name"),
    # transport limits
    ({"max_response_bytes": 10}, "max_response_bytes must be an int >= 1024"),
    ({"structured_output_reprobe": 0}, "structured_output_reprobe must be an int >= 1"),
]


@pytest.mark.parametrize("kwargs, words", BAD_CONFIG, ids=[w for _, w in BAD_CONFIG])
def test_bad_url_and_headers_are_refused_at_construction(kwargs, words):
    args = {"base_url": "http://127.0.0.1:8000/v1", **kwargs}
    with pytest.raises(ConfigError, match=words):
        OpenAIModel(args.pop("base_url"), "m", **args)


def test_api_key_from_the_environment_is_checked(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-file\n")
    with pytest.raises(ConfigError, match=r"api_key \(from OPENAI_API_KEY\)"):
        OpenAIModel("http://127.0.0.1:8000/v1", "m")


@pytest.mark.parametrize("url", ["http://[::1]:8000/v1", "https://judge.example.com/v1/",
                                 "http://judge_svc:8000/v1", "HTTP://localhost/v1"])
def test_good_urls(url):
    assert OpenAIModel(url, "m").base_url == url.rstrip("/")


# --------------------------------------------------------------------------
# sessions: one per event loop, closed when the loop ends
# --------------------------------------------------------------------------
@contextlib.contextmanager
def no_unclosed_warnings():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield
        gc.collect()
    bad = [str(w.message) for w in seen
           if issubclass(w.category, ResourceWarning) or "Unclosed" in str(w.message)]
    assert not bad, bad


def _grader(url: str) -> TemplatedPromptJudgeGrader:
    model = OpenAIModel(url, "judge", retry_policy=NO_RETRY, max_concurrency=4)
    return TemplatedPromptJudgeGrader("t", model, "Reply as JSON: {{output_schema}}",
                                      "Q: {{last_user_turn_content}}\nA: {{completion}}")


def _samples(n: int = 6) -> list[StringThread]:
    return [StringThread([("user", f"q{i}"), ("assistant", f"a{i}")]) for i in range(n)]


def test_three_sync_batches_leave_no_session_open():
    with Loopback(answer) as srv, no_unclosed_warnings():
        grader = _grader(srv.url)
        for _ in range(3):   # each call runs its own event loop
            grades = grader.grade_batch_sync(_samples())
            assert [g.status for g in grades] == ["scored"] * 6
            assert srv.wait_closed()  # the loop's session closed its connections
        del grader
    assert srv.connections >= 3


def test_sync_batches_from_a_running_loop_leave_no_session_open():
    # a notebook cell: a loop already runs in this thread
    with Loopback(answer) as srv, no_unclosed_warnings():
        grader = _grader(srv.url)

        async def cell() -> None:
            for _ in range(3):
                grades = grader.grade_batch_sync(_samples(3))
                assert [g.status for g in grades] == ["scored"] * 3
                assert srv.wait_closed()

        asyncio.run(cell())


def test_model_dropped_on_a_running_loop_closes_its_session():
    # a notebook re-runs a cell: the old model is garbage-collected while the loop runs on
    with Loopback(answer) as srv, no_unclosed_warnings():
        async def cells() -> None:
            grader = _grader(srv.url)
            assert [g.status for g in await grader.grade_batch(_samples(2))] == ["scored"] * 2
            del grader
            gc.collect()
            for _ in range(5):
                await asyncio.sleep(0.01)  # the loop runs the scheduled close
            assert srv.wait_closed()

        asyncio.run(cells())


async def test_aclose_closes_connections_and_the_model_stays_usable():
    with Loopback(answer) as srv:
        m = OpenAIModel(srv.url, "judge", retry_policy=NO_RETRY)
        async with m:
            await m.chat(MSG)
        assert srv.wait_closed()
        await m.aclose()  # twice is fine
        async with m:
            assert (await m.chat(MSG)).text == VERDICT
    assert srv.connections == 2


async def test_a_netrc_entry_for_the_judge_does_not_clash_with_the_api_key(monkeypatch, tmp_path):
    # aiohttp's trust_env would add netrc credentials beside our Authorization header
    # and refuse the request (ValueError); proxies come from the environment, netrc does not
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    with Loopback(answer) as srv:
        async with OpenAIModel(srv.url, "judge", api_key="k-2", retry_policy=NO_RETRY) as m:
            assert (await m.chat(MSG)).text == VERDICT
    assert srv.requests[0].headers["authorization"] == "Bearer k-2"


async def test_a_used_model_pickles_without_its_sessions(tls):
    import pickle

    with Loopback(answer, ssl_context=tls["server"]) as srv:
        m = OpenAIModel(srv.url, "judge", retry_policy=NO_RETRY, verify=str(tls["ca"]))
        async with m:
            await m.chat(MSG)
            copy = pickle.loads(pickle.dumps(m))  # e.g. shipped to a Ray worker
            async with copy:
                assert (await copy.chat(MSG)).text == VERDICT


def test_a_long_lived_loop_thread_keeps_its_session_and_closes_it_at_close():
    # verl calls compute_score once per sample: one LoopThread serves them all, connections stay
    # warm between calls, and close() shuts the session down like asyncio.run would
    from rewardjudge._sync import LoopThread

    with Loopback(answer) as srv, no_unclosed_warnings():
        grader = _grader(srv.url)
        runner = LoopThread("test-loop")
        for _ in range(3):
            (grade,) = runner.run(grader.grade_batch(_samples(1)))
            assert grade.status == "scored"
        assert srv.connections == 1     # one keep-alive connection for the three calls
        runner.close()
        assert srv.wait_closed()
        del grader
