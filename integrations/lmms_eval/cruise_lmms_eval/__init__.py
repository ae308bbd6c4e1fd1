"""CruiseAgent inside lmms-eval: the CRAG-MM tasks (crag_mm.py and its parts: settings, documents,
prompts, search, tools, results, metrics; hooks.py: the functions each task YAML names; task.py:
lmms-eval's task class made from the YAML), our systems as the lmms-eval model `cruise_agent`
(model.py) and any OpenAI-compatible server that calls tools natively as `openai_tools`
(openai_tools.py, over openai_chat.py and native_tools.py), both registered by manifest.py. Only
task.py, model.py, openai_tools.py and manifest.py import lmms-eval."""
