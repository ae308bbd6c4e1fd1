"""The plants: realistic bugs kept beside the tests that catch them (tests/plants/, docs/testing.md
"Plants"). Each plant is a small diff with a header naming the bug and the tests that must catch
it; here each is applied alone to a copy of the tree, and its named tests must fail there (a
failing test, not an error before any test runs). A plant its tests no longer catch fails here:
a test was weakened, or the code moved and the plant must move with it (then it no longer
applies, which fails here too)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLANTS = sorted((REPO / "tests" / "plants").glob("*.diff"))


def header(plant: Path) -> dict[str, str]:
    """The plant's 'Key: value' lines before its diff (Bug, Tests)."""
    fields = {}
    for line in plant.read_text(encoding="utf-8").splitlines():
        if line.startswith("diff --git") or line.startswith("--- "):
            break
        key, sep, value = line.partition(": ")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def test_there_are_plants_and_each_names_its_bug_and_its_tests():
    assert len(PLANTS) >= 30
    for plant in PLANTS:
        fields = header(plant)
        assert fields.get("Bug") and fields.get("Tests"), f"{plant.name}: a Bug: and a Tests: line before the diff"
        for test in fields["Tests"].split():
            assert (REPO / test.split("::")[0]).is_file(), f"{plant.name}: no test file {test}"


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """The project's files as git sees them (tracked and not ignored), copied once; each plant gets
    its own copy of this."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    root = tmp_path_factory.mktemp("tree") / "repo"
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return root


@pytest.mark.parametrize("plant", PLANTS, ids=[p.stem for p in PLANTS])
def test_each_plant_applied_alone_fails_its_named_tests(plant, tree, tmp_path):
    copy = shutil.copytree(tree, tmp_path / "repo", symlinks=True)
    for shared in (".venv", ".cache"):  # the models and the environment, not copied
        if (REPO / shared).exists():
            os.symlink(REPO / shared, copy / shared)
    applied = subprocess.run(["git", "apply", "--whitespace=nowarn", str(plant)], cwd=copy, capture_output=True,
                             text=True)
    assert applied.returncode == 0, f"{plant.name} no longer applies: {applied.stderr[-2000:]}"
    tests = header(plant)["Tests"].split()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", "-x", *tests],
                          cwd=copy, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    # 1: tests ran and one failed; 2-5 would be an error before any test ran (a plant that breaks
    # imports is caught by anything, and says nothing of the tests it names)
    assert done.returncode == 1, f"{plant.name}: its tests {tests} did not fail (exit {done.returncode}):\n" \
                                 f"{done.stdout[-3000:]}"
    assert " failed" in done.stdout.splitlines()[-1]
