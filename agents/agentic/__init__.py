"""agentic: the VLM searches for itself, calling image_search and web_search over the profile's
search pipeline until it answers or its budget ends (agents/agentic/system.py; docs/evaluation.md
"The agentic system")."""
