"""Small local policies for recipes and tests, built from the embedded SmolLM2 GGUF without downloading.

Conversions are cached once in the cache folder (``rewardjudge._paths``); they need
``transformers`` and ``gguf`` (the ``torch-judge`` or ``rl`` extra).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._paths import built_once, cache_root, embedded_model_path
from ..models._torch_model import converted_gguf_dir

__all__ = ["smollm2_policy", "smollm2_tokenizer", "tiny_llama"]


def smollm2_tokenizer(root: Path | None = None):
    """SmolLM2's tokenizer (cached conversion from the embedded GGUF)."""
    from transformers import AutoTokenizer

    def build(out: Path) -> None:
        gguf = embedded_model_path()
        AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(out)

    tok = AutoTokenizer.from_pretrained(str(built_once((root or cache_root()) / "smollm2-tokenizer", build)))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def tiny_llama(tokenizer: Any, *, hidden_size: int = 64, layers: int = 2, heads: int = 4,
               intermediate_size: int = 128, seed: int = 0, dtype: Any = None):
    """A random Llama around ``tokenizer`` (vocab, pad/bos/eos ids) from a config."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size,
                         intermediate_size=intermediate_size, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=heads,
                         max_position_embeddings=2048, tie_word_embeddings=True,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    if dtype is not None:
        model = model.to(dtype)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def smollm2_policy(root: Path | None = None, *, dtype: Any = None):
    """SmolLM2-135M-Instruct as a trainable model, sharing ``TorchModel``'s cached conversion."""
    from transformers import AutoModelForCausalLM

    path = converted_gguf_dir(embedded_model_path(), (root or cache_root()) / "torch")
    kwargs = {} if dtype is None else {"dtype": dtype}
    return AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
