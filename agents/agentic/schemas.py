"""The two search tools' schemas, in OpenAI's function-tool shape (agents/engines/tool_calls.py):
the one place they are written, so that a model is measured on the same tools in our runtime
(agents/agentic/) and in lmms-eval's crag_mm_agentic (integrations/lmms_eval/). Nothing is imported
here, so either side reads them without loading the chain.

- image_search: the photo, or the part of it inside `box` ([x1, y1, x2, y2] in the photo's pixels);
- web_search: a text `query`.
"""
from __future__ import annotations

IMAGE_SEARCH = {"type": "function", "function": {
    "name": "image_search",
    "description": "Search the image index with the photo, or with the part of it inside a box, for the "
                   "entities it shows.",
    "parameters": {"type": "object", "properties": {
        "box": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4,
                "description": "optional crop [x1, y1, x2, y2] in the photo's pixels"}},
        "required": []}}}
WEB_SEARCH = {"type": "function", "function": {
    "name": "web_search",
    "description": "Search the web index with a text query.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}
TOOLS = (IMAGE_SEARCH, WEB_SEARCH)
TOOL_NAMES = tuple(tool["function"]["name"] for tool in TOOLS)
