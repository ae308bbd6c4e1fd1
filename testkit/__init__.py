"""What the tests and the benchmarks share, shipped with the image (tests/ is not): tiny
random-weight models and their chat templates, scripted engines, agents and judge, fake search
pipelines, a real OpenAI-compatible test server, headless Chromium. Nothing the submission runs
imports it (tests/test_layers.py); tests/ holds only test modules and conftest.py.
"""
