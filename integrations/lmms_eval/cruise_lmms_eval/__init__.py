"""CruiseAgent inside lmms-eval: the CRAG-MM tasks (crag_mm.py and its parts: settings, documents,
prompts, search, tools, results, metrics; hooks.py: the functions each task YAML names; task.py:
lmms-eval's task class made from the YAML) and our systems as the lmms-eval model `cruise_agent`
(model.py, registered by manifest.py). Only task.py, model.py and manifest.py import lmms-eval."""
