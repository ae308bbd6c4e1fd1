"""A process's own peak memory as benchmarks/cpu_engines.py `measure` reports it, in child
processes started from a parent that holds much more (full tier: it starts subprocesses)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


CHILD = """
import sys
from benchmarks.cpu_engines import Backend, measure
held = b"x" * (int(sys.argv[1]) * 2 ** 20)  # written, so resident
del held  # given back before the figure is taken: a peak still counts it

class Still(Backend):
    name = "still"
    def load(self):
        pass
    def generate(self, rows, new_tokens, fixed):
        return [[1] * new_tokens for _ in rows]

figures = measure("still", Still("", 1, [0], 0), {8: [[5, 6]], 16: [[5, 6]]}, [[[5, 6]]])
print(figures.error or figures.rss_mib)
"""


def child_peak_mib(megabytes: int) -> float:
    """The RSS figure cpu_engines.measure reports in a fresh process that held `megabytes` before."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(megabytes)], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.strip().splitlines()[-1])


def test_each_child_reports_its_own_peak_memory_not_its_large_parents():
    """Spawned from a parent that holds 400 MB more, a child that held 10 MB reports tens of
    MiB and one that held 200 MB over 200 MiB, though it has given them back by then: its peak
    (getrusage's ru_maxrss would give both the parent's, inherited across fork and exec; the
    current RSS would miss the 200 MB)."""
    parent_holds = b"p" * (400 * 2 ** 20)
    small, large = child_peak_mib(10), child_peak_mib(200)
    assert len(parent_holds) == 400 * 2 ** 20
    assert small < 150, small
    assert large >= 200, large
    assert large - small > 150
