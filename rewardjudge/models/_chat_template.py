"""Chat templates rendered here, sandboxed as transformers does (for ``/v1/completions``); a trailing
assistant message is a prefix, appended verbatim (no end-of-turn).

>>> t = ChatTemplate("{% for m in messages %}<{{m.role}}>{{m.content}}</s>{% endfor %}"
...                  "{% if add_generation_prompt %}<assistant>{% endif %}")
>>> t([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Grade: "}])
'<user>hi</s><assistant>Grade: '
"""

from __future__ import annotations

import os
import re
import threading
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

from ..errors import ConfigError

__all__ = ["ChatTemplate"]


#: literal special-token shapes inside a chat template's source (``[A_NAME]`` in capitals: Mistral's
#: tekken control tokens, ``[INST]``, ``[SYSTEM_PROMPT]``, ``[TOOL_RESULTS]``...)
_SPECIAL = re.compile(r"<\|[^|<>\s'\"]{1,40}\|>|<\uff5c[^<>\s'\"]{1,40}\uff5c>|<(?:start|end)_of_turn>|"
                      r"\[/?[A-Z][A-Z_]{1,31}\]|<</?SYS>>|</?s>")


class ChatTemplate:
    """A Jinja chat template, callable as ``template(messages) -> prompt``; ``bos_token`` /
    ``eos_token`` are what it sees for those names (``""`` when the server adds BOS itself);
    ``gguf_path``: the template and special tokens of a GGUF file's metadata, read at first use."""

    def __init__(self, source: str | None = None, *, bos_token: str = "", eos_token: str = "",
                 gguf_path: str | os.PathLike | None = None):
        if source is None and gguf_path is None:
            raise ConfigError("ChatTemplate needs a Jinja source or a GGUF path")
        self._source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.gguf_path = None if gguf_path is None else Path(gguf_path)
        self._compiled: Any = None
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        self._load()
        return self._source  # type: ignore[return-value]

    def _load(self) -> None:
        if self._source is not None or self.gguf_path is None:
            return
        with self._lock:
            if self._source is None:
                self._source, self.bos_token, self.eos_token = _read_gguf_template(self.gguf_path)

    def _template(self):
        if self._compiled is None:
            self._load()
            from jinja2 import TemplateError as JinjaError
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            def raise_exception(message: str) -> None:
                raise ConfigError(f"chat template refused the messages: {message}")

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            env.globals["raise_exception"] = raise_exception
            try:
                self._compiled = env.from_string(self._source)
            except JinjaError as exc:
                raise ConfigError(f"invalid chat template: {exc}") from exc
        return self._compiled

    @cached_property
    def control_tokens(self) -> tuple[str, ...]:
        """The special tokens this template writes (``<|im_start|>``, ``[INST]``...) and its BOS/EOS texts."""
        self._load()
        found = dict.fromkeys(t for t in (self.bos_token, self.eos_token) if t)
        found.update(dict.fromkeys(m.group() for m in _SPECIAL.finditer(self.source or "")))
        return tuple(found)

    def render(self, messages: Sequence[dict[str, Any]]) -> str:
        """The prompt for ``messages``, the assistant's turn opened (or a trailing one continued)."""
        msgs, prefix = split_prefix(messages)
        return self._template().render(messages=msgs, add_generation_prompt=True, bos_token=self.bos_token,
                                       eos_token=self.eos_token) + (prefix or "")

    __call__ = render

    def __repr__(self) -> str:
        where = f"gguf={str(self.gguf_path)!r}" if self.gguf_path else f"{len(self._source or '')} chars"
        return f"ChatTemplate({where})"


def split_prefix(messages: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """``(the messages before it, the text to continue)`` after an assistant message, else ``(messages, None)``."""
    msgs = [dict(m) for m in messages]
    if not msgs:
        raise ConfigError("a chat prompt needs at least one message")
    if msgs[-1].get("role") != "assistant":
        return msgs, None
    prefix = str(msgs.pop().get("content") or "")
    if not msgs:
        raise ConfigError("a trailing assistant prefix needs a message before it")
    return msgs, prefix


def _read_gguf_template(path: Path) -> tuple[str, str, str]:
    """``(chat template, bos text, eos text)`` from a GGUF's metadata (bos "" when the tokenizer adds it)."""
    try:
        from gguf import GGUFReader
    except ImportError:
        raise ConfigError("reading a GGUF's chat template needs the gguf package: "
                          "pip install gguf") from None
    reader = GGUFReader(str(path))

    def field(name: str) -> Any:
        f = reader.fields.get(name)
        if f is None or not f.data:
            return None
        part = f.parts[f.data[0]]
        return part.tobytes().decode("utf-8") if f.types and f.types[0].name == "STRING" else part[0]

    source = field("tokenizer.chat_template")
    if not source:
        raise ConfigError(f"{path} holds no chat template (tokenizer.chat_template); pass one as "
                          f"chat_template=")
    tokens = reader.fields.get("tokenizer.ggml.tokens")

    def token_text(id_field: str) -> str:
        idx = field(id_field)
        if idx is None or tokens is None:
            return ""
        return tokens.parts[tokens.data[int(idx)]].tobytes().decode("utf-8", "replace")

    add_bos = field("tokenizer.ggml.add_bos_token")
    bos = "" if add_bos is None or bool(add_bos) else token_text("tokenizer.ggml.bos_token_id")
    return str(source), bos, token_text("tokenizer.ggml.eos_token_id")
