"""Judge models: the InferenceModel seam and its implementations."""

from .base import Completion, GenerationParams, InferenceModel
from .openai_compat import OpenAIModel
from .retry import RetryPolicy
from .spawn import JudgeServer, embedded_model_path, server_command, spawn_judge

__all__ = ["Completion", "GenerationParams", "InferenceModel", "JudgeServer", "OpenAIModel",
           "RetryPolicy", "embedded_model_path", "server_command", "spawn_judge"]
