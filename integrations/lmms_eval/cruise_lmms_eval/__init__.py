"""CruiseAgent inside lmms-eval: the CRAG-MM tasks' logic (crag_mm.py, bound into lmms-eval's task
class by task.py) and our systems as the lmms-eval model `cruise_agent` (model.py, registered by
manifest.py). Only task.py, model.py and manifest.py import lmms-eval."""
