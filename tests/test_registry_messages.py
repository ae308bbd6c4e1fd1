"""A system named where it is not found says why in one line, through the run's own door
(local_evaluation.py, in this process; exit 1, as for any other bad setting) and through
evaluate() (EvaluationRefused):

- a module named by `system=MODULE:NAME`, or by an installed package's entry point, that imports
  but registers no such system: the module, and what it registered instead if anything;
- an entry point naming a module that is not there, or a name its module lacks: the
  distribution, the entry point and the module, and no traceback.

The packages are written to the test's folder on sys.path; an installed one has its .dist-info
beside it, as pip writes it (importlib.metadata reads entry points from there).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import local_evaluation
from evaluator import EvaluationRefused, evaluate
from testkit.in_process import offline_env, run_main

GROUP = "cruise_agent.systems"

REGISTERS_ANOTHER = '''
from agents.plugin import Decision, Stage, System, View, always, register


def pick(batch):
    return [{"rag_answer": "yes"} for _ in batch.turns]


register(System(name="vote_probes", stages=(Stage("ev_pick", batch_fn=pick, writes=("rag_answer",),
                                                  calls_no_model=always),),
                decide=lambda trace, cfg: Decision(trace["rag_answer"], "picked"),
                view=View(funnel=lambda trace, cfg: {}, branches=("picked",))))
'''


@pytest.fixture(autouse=True)
def folder_on_path(tmp_path, monkeypatch, registered_systems):
    """The test's folder on sys.path; every module imported from it, and every system it
    registered, gone afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name, module in list(sys.modules.items()):
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
        if origin and Path(origin).is_relative_to(tmp_path):
            del sys.modules[name]


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def installed(root: Path, entry_points: str) -> None:
    """A distribution `vote-probe` 0.1 installed in `root`, offering these entry point lines."""
    write(root, {"vote_probe-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: vote-probe\nVersion: 0.1\n",
                 "vote_probe-0.1.dist-info/entry_points.txt": f"[{GROUP}]\n{entry_points}\n"})


def refused_run(root: Path, system: str) -> str:
    """The one line a run with `--set system=SYSTEM` is refused with (exit 1, nothing on stdout,
    no traceback), checked to be what evaluate() raises too."""
    done = run_main(local_evaluation.main, ["--profile", "cpu", "--set", f"system={system}", "--search", "none",
                                            "--eval-model", "None", "--output-dir", str(root / "out")],
                    env=offline_env(root))
    assert (done.returncode, done.stdout) == (1, "")
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    with pytest.raises(EvaluationRefused) as raised:
        evaluate(profile="cpu", set=[f"system={system}"], search="none", eval_model="None",
                 output_dir=str(root / "out2"))
    assert str(raised.value).endswith(lines[0])
    return lines[0]


def test_a_module_named_by_module_and_name_that_registers_nothing_is_told_so(folder_on_path):
    write(folder_on_path, {"ev_nothing.py": "WEIGHT = 2\n"})
    assert refused_run(folder_on_path, "ev_nothing:vote_probe") == (
        "system 'ev_nothing:vote_probe': module 'ev_nothing' registered no system; it must register one named "
        "'vote_probe' when it is imported")


def test_a_module_that_registers_another_name_is_told_what_it_registered(folder_on_path):
    write(folder_on_path, {"ev_other.py": REGISTERS_ANOTHER})
    assert refused_run(folder_on_path, "ev_other:vote_probe") == (
        "system 'ev_other:vote_probe': module 'ev_other' registered no system named 'vote_probe', only "
        "['vote_probes']; did you mean 'vote_probes'?")


def test_an_entry_points_module_that_registers_nothing_is_told_so_naming_the_distribution(folder_on_path):
    write(folder_on_path, {"ev_pkg/__init__.py": "", "ev_pkg/system.py": "WEIGHT = 2\n"})
    installed(folder_on_path, "vote_probe = ev_pkg.system")
    assert refused_run(folder_on_path, "vote_probe") == (
        "system 'vote_probe': entry point 'vote_probe = ev_pkg.system' of distribution vote-probe 0.1 "
        f"({GROUP}): module 'ev_pkg.system' registered no system; it must register one named 'vote_probe' when it "
        "is imported")


def test_a_package_whose_init_imports_the_module_that_registers_counts_that_module_as_its_own(folder_on_path):
    write(folder_on_path, {"ev_pkg2/__init__.py": "from ev_pkg2 import system\n", "ev_pkg2/system.py": REGISTERS_ANOTHER})
    installed(folder_on_path, "vote_probe = ev_pkg2")
    assert refused_run(folder_on_path, "vote_probe") == (
        "system 'vote_probe': entry point 'vote_probe = ev_pkg2' of distribution vote-probe 0.1 "
        f"({GROUP}): module 'ev_pkg2' registered no system named 'vote_probe', only ['vote_probes']; "
        "did you mean 'vote_probes'?")


@pytest.mark.parametrize("line, why", [
    ("vote_probe = ev_gone.system", "no module 'ev_gone' to import it from"),
    ("vote_probe = ev_half.gone", "no module 'ev_half.gone' to import it from"),
    ("vote_probe = ev_half.system:SYSTEM", "module 'ev_half.system' has no 'SYSTEM'"),
    ("vote_probe = ev_needs.system", "module 'ev_needs.system' needs 'ev_not_installed', which is not installed"),
])
def test_an_entry_point_naming_what_is_not_there_is_one_line_naming_the_distribution_entry_point_and_module(
        folder_on_path, line, why):
    write(folder_on_path, {"ev_half/__init__.py": "", "ev_half/system.py": "WEIGHT = 2\n",
                           "ev_needs/__init__.py": "", "ev_needs/system.py": "import ev_not_installed\n"})
    installed(folder_on_path, line)
    assert refused_run(folder_on_path, "vote_probe") == (
        f"system 'vote_probe': entry point '{line}' of distribution vote-probe 0.1 ({GROUP}): {why}")


def test_a_name_neither_registered_nor_installed_still_gets_the_closest_names(folder_on_path):
    message = refused_run(folder_on_path, "qa_dragn")
    assert message.startswith("unknown system 'qa_dragn'; choose one of ['agentic', 'cruise', 'qa_dragon', 'sam_rag']")
    assert message.endswith("; did you mean 'qa_dragon' or 'sam_rag'?")
