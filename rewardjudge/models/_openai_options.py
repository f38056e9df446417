"""OpenAIModel's constructor options, checked once (types and ranges; the URL, headers and TLS in ``_http.py``)."""

from __future__ import annotations

import random
from typing import Any, Callable, Literal, Mapping, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

from ._http import DEFAULT_MAX_RESPONSE_BYTES
from ._retry import RetryPolicy

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "DEFAULT_REPROBE_AFTER", "OpenAIModelOptions"]

#: requests sent in a weaker structured-output form before the stronger one is tried again
DEFAULT_REPROBE_AFTER = 1000


class OpenAIModelOptions(BaseModel):
    """What ``OpenAIModel(...)`` was given, checked (see its docstring)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)

    base_url: StrictStr = Field(description="must be an http(s) URL ending in /v1")
    model: StrictStr = Field(min_length=1,
                             description="(the judge model's name on the server) is required")
    api_key: Any = None            # checked by request_headers (not echoed)
    max_concurrency: StrictInt = Field(64, ge=1, description="must be an int >= 1 (requests in flight)")
    timeout: Union[StrictFloat, StrictInt] = Field(60.0, gt=0, description="must be a number of seconds > 0")
    max_retries: StrictInt = Field(3, ge=0, description="must be an int >= 0")
    retry_policy: Optional[RetryPolicy] = Field(None, description="must be a RetryPolicy (or None)")
    structured_output: Literal["json_schema", "json_object", "none"] = Field(
        "json_schema", description="must be json_schema, json_object or none")
    structured_output_reprobe: Optional[StrictInt] = Field(
        DEFAULT_REPROBE_AFTER, ge=1, description="must be an int >= 1 (requests) or None")
    http_client: Any = None
    extra_body: Optional[Mapping[Any, Any]] = Field(None, description="must be a dict")
    headers: Any = None            # checked by request_headers (not echoed)
    verify: Any = True             # checked by _http.ssl_option
    max_response_bytes: StrictInt = Field(DEFAULT_MAX_RESPONSE_BYTES, ge=1024,
                                          description="must be an int >= 1024")
    seed_rng: Optional[random.Random] = Field(None, description="must be a random.Random (or None)")
    chat_template: Optional[Union[StrictStr, Callable[..., Any]]] = Field(
        None, description="must be a Jinja source string or a callable f(messages) -> prompt")
    max_top_logprobs: StrictInt = Field(20, ge=1, description="must be an int >= 1")
    logprobs_endpoint: Literal["auto", "chat", "completions"] = Field(
        "auto", description="must be auto, chat or completions")
    grammar_field: Optional[StrictStr] = Field(None, min_length=1,
                                               description="must be a request body field name or None")
