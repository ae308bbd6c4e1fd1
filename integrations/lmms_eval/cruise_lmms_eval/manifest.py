"""The entry point of the group lmms_eval.models (pyproject.toml): `--model cruise_agent`."""
from lmms_eval.models.registry_v2 import ModelManifest

MANIFEST = ModelManifest(model_id="cruise_agent", simple_class_path="cruise_lmms_eval.model.CruiseAgentModel")
