"""The test suite, a package so that its modules import each other's helpers by name.

Python and pytest keep each module's bytecode and each test module's rewritten asserts in
__pycache__ (ignored by git), unless `sys.dont_write_bytecode` is set, as PYTHONDONTWRITEBYTECODE
sets it on our machines. Without that cache each test process compiles the project and rewrites
the ~230 test modules again on every run: 40 s of the default tier's 3 min 20 s on 2 cores
(docs/benchmarks.md#tests). pytest imports this package before tests/conftest.py, so the cache
is on before any of our modules is imported.
"""
import sys

sys.dont_write_bytecode = False
