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
    scored = re.search(r"^agents/runtime/package_files\.py: (\d+) / (\d+) = (\d+)% \((\d+) marked equivalent\)$",
                       done.stdout, re.M)
    assert scored, done.stdout[-3000:] + done.stderr[-3000:]
    killed, checked = int(scored[1]), int(scored[2])
    assert checked > 0 and killed <= checked
    assert done.returncode == (0 if killed / checked >= 0.85 else 1)
    survivors = re.findall(r"^  (?:survived|no tests|suspicious|segfault|skipped|not checked): "
                           r"agents/runtime/package_files\.py:\d+: .+  ->  .+  \[agents\.runtime\.package_files\.\S+\]$",
                           done.stdout, re.M)
    assert len(survivors) == checked - killed
    assert (work / "mutants" / "agents" / "runtime" / "package_files.py").is_file()  # mutmut worked in the copy
    assert tree_state() == before
