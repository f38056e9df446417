"""Judge models: the InferenceModel seam and its implementations."""

from ._base import (Completion, GenerationParams, GradeDistributionUnsupported, InferenceModel,
                   TokenDistribution)
from ._cache import CachedModel, SQLiteCache
from ._chat_template import ChatTemplate
from ._openai_compat import OpenAIModel
from ._retry import RetryPolicy
from ._spawn import JudgeServer, embedded_model_path, server_command, spawn_judge
from ._torch_model import TorchModel
from ._typed_question_client import TypedQuestionClient

__all__ = ["CachedModel", "ChatTemplate", "Completion", "GenerationParams", "GradeDistributionUnsupported",
           "InferenceModel", "JudgeServer", "OpenAIModel", "RetryPolicy", "SQLiteCache", "TokenDistribution", "TorchModel",
           "TypedQuestionClient",
           "embedded_model_path", "server_command", "spawn_judge"]
