"""What a TorchModel is built from: options, device and dtype, a GGUF converted once, cache layouts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Optional, Union

from pydantic import ConfigDict, Field, StrictInt, StrictStr

from .._option_types import Options
from .._hash import canonical_hash
from .._paths import built_once, cache_root
from ..errors import ConfigError

# Default padded tokens per forward pass. On CPU batching pays only for short prompts (2 cores,
# SmolLM2-135M bf16: 8 x 60 tokens 1.9x faster per prompt, 8 x 436 1.2x slower); a GPU needs many.
CPU_BATCH_TOKENS = 2048
GPU_BATCH_TOKENS = 65536


class TorchModelOptions(Options):
    """``TorchModel``'s keyword options: ``max_batch_size``/``max_batch_tokens`` bound one forward pass
    (padded tokens, prefix included; None: 2048 on CPU, 65536 on a GPU); ``max_new_tokens`` when
    ``GenerationParams.max_tokens`` is unset; ``share_prefix`` works with full attention only."""

    model_config = ConfigDict(frozen=True)

    name: Optional[StrictStr] = Field(None, description="must be a str (or None)")
    chat_template: Optional[Union[StrictStr, Callable[..., Any]]] = Field(
        None, description="must be a Jinja source string or a callable f(messages) -> prompt")
    max_batch_size: StrictInt = Field(16, ge=1, description="must be an int >= 1")
    max_batch_tokens: Optional[StrictInt] = Field(None, ge=1, description="must be an int >= 1 (or None)")
    max_new_tokens: StrictInt = Field(256, ge=1, description="must be an int >= 1")
    share_prefix: bool = Field(True, description="must be True or False")
    min_prefix_tokens: StrictInt = Field(32, ge=1, description="must be an int >= 1")
    prefix_cache_size: StrictInt = Field(4, ge=1, description="must be an int >= 1")


def default_cache_dir() -> Path:
    """``torch/`` under the one cache folder (``rewardjudge._paths.cache_root``)."""
    return cache_root() / "torch"


def _cpu_has_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _resolve_device_dtype(device: str | None, dtype: Any) -> tuple[Any, Any]:
    import torch
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if dtype is None or dtype == "auto":
        if dev.type == "cuda":
            return dev, torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return dev, torch.bfloat16 if _cpu_has_bf16() else torch.float32
    if not isinstance(dtype, str):
        return dev, dtype
    names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype not in names:
        raise ConfigError(f"dtype must be 'auto', one of {sorted(names)} or a torch.dtype, "
                          f"got {dtype!r}")
    return dev, names[dtype]


def _import_transformers():
    try:
        import transformers
    except ImportError:
        raise ConfigError("TorchModel needs transformers: pip install 'rewardjudge[torch-judge]'") from None
    return transformers


def converted_gguf_dir(gguf: Path, cache_dir: Path | None = None) -> Path:
    """The cache folder holding ``gguf`` as safetensors (made once, atomically), keyed by the file's
    path, size and mtime and the transformers version."""
    transformers = _import_transformers()
    gguf = gguf.resolve()
    st = gguf.stat()
    key = canonical_hash([str(gguf), st.st_size, st.st_mtime_ns, transformers.__version__])[:16]
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = root / f"{gguf.stem}-{key}"

    def build(tmp: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                     dtype=torch.float32)
        # saved with its GGUF quantizer, a reload would dequantise again: the weights are floats
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))

    return built_once(target, build, marker="config.json")


def checkpoint_folder(source: str | os.PathLike, cache_dir: str | os.PathLike | None) -> tuple[Path, str]:
    """``(the transformers checkpoint folder, a default name)`` for a folder or a ``.gguf``."""
    path = Path(source)
    if not path.exists():
        raise ConfigError(f"TorchModel loads local checkpoints only (nothing is downloaded): "
                          f"{str(source)!r} is not an existing file or folder")
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ConfigError(f"{path} is a file but not a .gguf; pass a checkpoint folder "
                              f"(config.json + weights) or a GGUF file")
        return converted_gguf_dir(path, None if cache_dir is None else Path(cache_dir)), f"torch:{path.stem}"
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path} has no config.json: not a transformers checkpoint folder")
    return path, f"torch:{path.name}"


def output_layers(out: Any) -> list[tuple[Any, Any]]:
    """Per layer ``(keys, values)`` of the cache a forward returned, in any of its layouts."""
    cache = out.get("cache") if hasattr(out, "get") else None
    cache = cache if cache is not None else out.past_key_values
    layers = getattr(cache, "layers", None)
    if layers is not None:  # transformers >= 4.56: DynamicCache.layers[i].keys / .values
        return [(layer.keys, layer.values) for layer in layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [(k, v) for k, v in cache]  # the legacy tuple of tuples


def expanded_cache(layers: list[tuple[Any, Any]], rows: int, config: Any) -> Any:
    """A fresh ``DynamicCache`` holding the keys/values ``layers`` for each of ``rows`` rows."""
    from transformers import DynamicCache

    # transformers 5 builds its layers from the config; 4.x takes no argument
    try:
        cache = DynamicCache(config=config)
    except TypeError:
        cache = DynamicCache()
    for i, (k, v) in enumerate(layers):
        # expand is a view: the cache copies it once when it appends the suffix
        cache.update(k.expand(rows, -1, -1, -1), v.expand(rows, -1, -1, -1), i)
    return cache


def _full_attention_only(config: Any) -> bool:
    """True when a prefix's keys/values can be reused as they are (no sliding windows)."""
    cfgs = [config] + [getattr(config, n) for n in ("text_config",) if getattr(config, n, None)]
    for cfg in cfgs:
        if getattr(cfg, "sliding_window", None) and getattr(cfg, "use_sliding_window", True):
            return False
        types = getattr(cfg, "layer_types", None)
        if types and any(t != "full_attention" for t in types):
            return False
    return True
