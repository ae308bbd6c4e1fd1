"""scripts/mutation.sh run for real (mutmut, in a copy of the tree) over one small module and the
test file that covers it: it prints the module's score and leaves the working tree as it was."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_mutation_script_scores_a_module_in_a_copy_and_leaves_the_working_tree_alone(tmp_path):
    def tree_state():
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO_ROOT,
                              capture_output=True, text=True, check=True).stdout

    before = tree_state()
    work = tmp_path / "work"
    done = subprocess.run(["bash", "scripts/mutation.sh", "--files", "agents/runtime/package_files.py",
                           "--tests", "tests/test_plugin_system.py", "--max-children", "1", "--work", str(work)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    scored = re.search(r"^agents/runtime/package_files\.py: (\d+) / (\d+) = (\d+)% \((\d+) of (\d+) checked timed out"
                       r"(?:, \d+ not checked)?; (\d+) marked equivalent\)$", done.stdout, re.M)
    assert scored, done.stdout[-3000:] + done.stderr[-3000:]
    killed, measured, timeouts, checked = int(scored[1]), int(scored[2]), int(scored[4]), int(scored[5])
    assert measured > 0 and killed <= measured and measured + timeouts == checked
    assert done.returncode == (0 if killed / measured >= 0.85 and timeouts / checked < 0.2 else 1)
    survivors = re.findall(r"^  (?:survived|no tests|suspicious): "
                           r"agents/runtime/package_files\.py:\d+: .+  ->  .+  \[agents\.runtime\.package_files\.\S+\]$",
                           done.stdout, re.M)
    assert len(survivors) == measured - killed
    assert len(re.findall(r"^  (?:timeout|segfault): \[agents\.runtime\.package_files\.\S+\]$", done.stdout, re.M)) == timeouts
    assert (work / "mutants" / "agents" / "runtime" / "package_files.py").is_file()  # mutmut worked in the copy
    assert tree_state() == before
