"""Judge models: the ``InferenceModel`` seam and its implementations (see docs/judges.md)."""

from ._base import Completion, GenerationParams, GradeDistributionUnsupported, InferenceModel, TokenDistribution
from ._cache import CachedModel
from ._openai_compat import OpenAIModel, OpenAIModelOptions
from ._http import RetryPolicy
from .._paths import embedded_model_path
from ._spawn import spawn_judge
from ._torch_model import TorchModel
from ._typed_question_client import TypedQuestionClient

__all__ = ["CachedModel", "Completion", "GenerationParams", "GradeDistributionUnsupported", "InferenceModel",
           "OpenAIModel", "OpenAIModelOptions", "RetryPolicy", "TokenDistribution", "TorchModel", "TypedQuestionClient",
           "embedded_model_path", "spawn_judge"]
