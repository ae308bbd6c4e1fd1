"""An entry point's `main(argv)` run in this process, as `python ENTRY ARGS` would run it
(the caller passes the function: `local_evaluation.main`, `evaluator.report.__main__.main`).

Settings travel as arguments, so an evaluation runs in-process as well as in a subprocess; the
default test tier runs it so, and keeps a subprocess for what only a process shows (exit by a
signal, the real interpreter's start-up, workers: tests/full/). What a fresh process would give
it is given here and taken back afterwards:

- the environment: the caller's, less OPENAI_API_KEY and CRUISE_* (the tests' runs choose their
  own), plus `env`; os.environ is restored afterwards, whatever the run wrote into it;
- what libraries read from the environment once, at import (a fresh process would read `env`):
  huggingface_hub's HF_HUB_CACHE and datasets' HF_DATASETS_CACHE, set for the run and restored;
- stdout and stderr, captured as text; COLUMNS (default 250) fixes the width rich wraps at;
- the exit status: SystemExit as the interpreter turns it into one (None -> 0, an int -> itself,
  anything else printed to stderr -> 1); `os._exit(code)` (the scripted agent's crash) stops
  the run with that code instead of ending this process, so the run stops where a dying process
  would, although `finally` blocks still run.

Returns a subprocess.CompletedProcess, so a test reads it as it reads a subprocess's.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from unittest import mock


class ProcessExit(BaseException):
    """os._exit inside an in-process run: not an Exception, so nothing on the way catches it."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def _exit_instead(code: int):
    raise ProcessExit(code)


@contextlib.contextmanager
def fresh_environment(env: dict[str, str] | None = None, columns: int = 250):
    """os.environ as a test's subprocess would get it, restored afterwards."""
    saved = dict(os.environ)
    try:
        for key in [k for k in os.environ if k == "OPENAI_API_KEY" or k.startswith("CRUISE_")]:
            del os.environ[key]
        os.environ.update({"COLUMNS": str(columns), **(env or {})})
        with contextlib.ExitStack() as stack:
            if "HF_HUB_CACHE" in os.environ:
                from huggingface_hub import constants

                stack.enter_context(mock.patch.object(constants, "HF_HUB_CACHE", os.environ["HF_HUB_CACHE"]))
            if "HF_DATASETS_CACHE" in os.environ:
                from datasets import config

                stack.enter_context(mock.patch.object(config, "HF_DATASETS_CACHE", os.environ["HF_DATASETS_CACHE"]))
            yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def offline_env(root: Path) -> dict[str, str]:
    """No hub, and caches of the test's own under `root`: what a tool's runs are given."""
    return dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                HF_DATASETS_CACHE=str(root / "hf-datasets"), CRUISE_CACHE=str(root / "cache"))


def run_main(main: Callable[[list[str]], object], argv: list[str], *, env: dict[str, str] | None = None,
             columns: int = 250) -> subprocess.CompletedProcess:
    """`main(argv)` with a fresh process's environment and streams; its exit status as returncode."""
    out, err = io.StringIO(), io.StringIO()
    with fresh_environment(env, columns), mock.patch.object(os, "_exit", _exit_instead), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result = main(list(argv))
            code = result if isinstance(result, int) else 0
        except ProcessExit as exc:
            code = exc.code
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=err)
                code = 1
    return subprocess.CompletedProcess(list(argv), code, out.getvalue(), err.getvalue())

