"""Benchmarks and one-off experiments: each module's docstring names the docs table it fills.

They sit at the top of the import floors, beside tools/ (tests/test_layers.py); nothing in the
agent, the mini benchmark or the evaluator imports them.
"""
