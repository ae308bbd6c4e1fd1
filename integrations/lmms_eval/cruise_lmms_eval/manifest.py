"""The entry point of the group lmms_eval.models (pyproject.toml): lmms-eval's models of this
package, `--model cruise_agent` (our systems) and `--model openai_tools` (any OpenAI-compatible
server that calls tools natively)."""
from lmms_eval.models.registry_v2 import ModelManifest

MANIFESTS = (
    ModelManifest(model_id="cruise_agent", simple_class_path="cruise_lmms_eval.model.CruiseAgentModel"),
    ModelManifest(model_id="openai_tools", simple_class_path="cruise_lmms_eval.openai_tools.OpenAIToolsModel"),
)
