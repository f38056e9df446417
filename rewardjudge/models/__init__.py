"""Judge models: the InferenceModel seam and its implementations."""

from .base import (Completion, GenerationParams, GradeDistributionUnsupported, InferenceModel,
                   TokenDistribution)
from .cache import CachedModel, SQLiteCache
from .chat_template import ChatTemplate
from .openai_compat import OpenAIModel
from .retry import RetryPolicy
from .spawn import JudgeServer, embedded_model_path, server_command, spawn_judge
from .torch_model import TorchModel
from .typed_question_client import TypedQuestionClient

__all__ = ["CachedModel", "ChatTemplate", "Completion", "GenerationParams", "GradeDistributionUnsupported",
           "InferenceModel", "JudgeServer", "OpenAIModel", "RetryPolicy", "SQLiteCache", "TokenDistribution", "TorchModel",
           "TypedQuestionClient",
           "embedded_model_path", "server_command", "spawn_judge"]
