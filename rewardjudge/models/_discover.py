"""What a judge server serves: its model names (``GET /models``) and the
one a command or trainer should ask for."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

from ..errors import ConfigError

__all__ = ["get_models", "model_name", "served_models"]


def get_models(url: str, timeout: float, api_key: str | None = None) -> Any:
    """The JSON reply of ``GET {url}/models`` (``api_key``, when given, as a bearer token);
    urllib's errors (``OSError``: unreachable, any status but 2xx) and ``ValueError`` pass."""
    request = urllib.request.Request(url.rstrip("/") + "/models")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    with urllib.request.urlopen(request, timeout=timeout) as r:
        return json.load(r)


def served_models(url: str, timeout: float) -> list[str] | None:
    """The model names a judge server lists (GET /models); None when it lists none (the endpoint
    is optional); a ConfigError when it cannot be reached."""
    try:
        data = get_models(url, min(timeout, 10.0), os.environ.get("OPENAI_API_KEY")).get("data", [])
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise ConfigError(f"the judge at {url} refused the request (HTTP {exc.code}): set OPENAI_API_KEY "
                              f"to its key") from None
        return None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigError(f"the judge at {url} is not reachable ({reason}): start it, or fix --judge "
                          f"(an OpenAI-compatible server URL ending in /v1)") from None
    except ValueError:
        return None
    names = [m.get("id") for m in data if isinstance(m, dict) and m.get("id")] if isinstance(data, list) else []
    return names or None


def model_name(url: str, asked: str | None, timeout: float, prefer: str | None = None) -> str:
    """``asked``, checked against what the server lists; else ``prefer`` (a
    scorer's model) when the server lists it; else its only model."""
    names = served_models(url, timeout)
    if not asked and prefer and (names is None or prefer in names):
        return prefer
    if asked:
        if names is not None and asked not in names:
            raise ConfigError(f"the judge at {url} does not serve {asked!r}; it lists {names}: pass "
                              f"--judge-model with one of them")
        return asked
    if names is None or len(names) != 1:
        listed = names or f"no models at {url.rstrip('/')}/models"
        hint = "" if names or url.rstrip("/").endswith("/v1") else " (an OpenAI-compatible URL ends in /v1)"
        raise ConfigError(f"--judge-model not given and the server lists {listed}{hint}; pass --judge-model NAME")
    return names[0]
