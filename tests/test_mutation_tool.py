"""tools/mutation.py's own parts that need no mutmut run: which files and functions a change
touched, which tests name a module, the copy's [tool.mutmut] section, mutmut's results read into
a score per file, and a survivor's line.

git and mutmut lie outside the unit: each is a stand-in returning what the real one prints
(`git diff -U0`'s hunk headers, mutmut 3.8's `results --all true` lines and `show` diff, built
with difflib as mutmut builds it). tests/full/test_mutation_run.py runs mutmut for real.
"""
from __future__ import annotations

import difflib
import textwrap

import pytest

from tools import mutation

SOURCE = textwrap.dedent('''\
    """A module."""
    import os


    @staticmethod
    def decorated(x):
        return x + 1


    def outer(x):
        def inner(y):
            return y * 2
        return inner(x)


    class Box:
        size = 3

        def grow(self, by):
            return self.size + by

        async def fetch(self):
            return None
    ''')


def fake_git(outputs: dict[tuple[str, ...], str]):
    def git(*args):
        return outputs[args]
    return git


def test_the_files_changed_are_the_projects_python_files_not_its_checks_nor_deleted_ones(tmp_path, monkeypatch):
    for name in ("tools/preflight.py", "agents/x.py", "tests/test_x.py", "testkit/fakes.py", "scripts/run.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    monkeypatch.setattr(mutation, "REPO_ROOT", tmp_path)
    listed = "tools/preflight.py\nagents/x.py\nagents/gone.py\ntests/test_x.py\ntestkit/fakes.py\nscripts/run.py\n"
    monkeypatch.setattr(mutation, "git", fake_git({("diff", "--name-only", "BASE", "--", "*.py"): listed}))
    assert mutation.changed_files("BASE") == ["tools/preflight.py", "agents/x.py"]


def test_the_lines_changed_are_those_each_hunk_adds_and_a_deletion_counts_the_line_before_it(monkeypatch):
    diff = ("diff --git a/f.py b/f.py\nindex 9405325..67f28ec 100644\n--- a/f.py\n+++ b/f.py\n"
            "@@ -3 +3,2 @@ b\n-c\n+X\n+Y\n"      # line 3 replaced by two: 3 and 4
            "@@ -10,2 +11 @@ def f():\n-p\n-q\n+r\n"  # two lines made one: 11
            "@@ -20 +20,0 @@ e\n-gone\n")          # a line deleted after line 20
    monkeypatch.setattr(mutation, "git", fake_git({("diff", "-U0", "BASE", "--", "f.py"): diff}))
    assert mutation.changed_lines("BASE", "f.py") == {3, 4, 11, 20}


@pytest.mark.parametrize("lines, names", [
    ({7}, ["x_decorated"]),  # its body
    ({5}, ["x_decorated"]),  # its decorator's line belongs to it
    ({13}, ["x_outer"]),  # a nested function is mutated as part of the one around it
    ({20}, ["xǁBoxǁgrow"]), ({23}, ["xǁBoxǁfetch"]),
    ({2, 17}, []),  # an import, a class attribute: no function
    ({8, 14}, []),  # the blank line after a function's last
    ({10, 23}, ["x_outer", "xǁBoxǁfetch"]),  # the def line of one, the last line of another
])
def test_the_functions_changed_are_named_as_mutmut_names_them(lines, names):
    assert mutation.functions_at(SOURCE, lines) == names


def test_a_functions_def_line_is_found_by_mutmuts_name_of_it():
    assert mutation.def_lines(SOURCE) == {"x_decorated": 6, "x_outer": 10, "xǁBoxǁgrow": 19, "xǁBoxǁfetch": 22}


def test_the_tests_chosen_are_the_default_tiers_files_that_import_or_name_the_module(tmp_path, monkeypatch):
    tests = {"test_dotted.py": "import evaluator.harness.fingerprint\n",
             "test_from.py": "from evaluator.harness import resolved, fingerprint\n",
             "test_named.py": 'MODULE = "evaluator.harness.fingerprint"\n',
             "test_sibling.py": "from evaluator.harness import fingerprints_of_other_kinds\n",
             "test_longer.py": "import evaluator.harness.fingerprint_cache\n",
             "helpers.py": "import evaluator.harness.fingerprint\n"}
    (tmp_path / "tests" / "full").mkdir(parents=True)
    (tmp_path / "tests" / "full" / "test_slow.py").write_text("import evaluator.harness.fingerprint\n")
    for name, text in tests.items():
        (tmp_path / "tests" / name).write_text(text)
    monkeypatch.setattr(mutation, "REPO_ROOT", tmp_path)
    assert mutation.tests_naming(["evaluator/harness/fingerprint.py"]) == [
        "tests/test_dotted.py", "tests/test_from.py", "tests/test_named.py"]
    # a package's __init__ is named by the package's name; importing one of its modules imports it too
    (tmp_path / "tests" / "test_package.py").write_text("from evaluator import harness\n")
    (tmp_path / "tests" / "test_other.py").write_text("import evaluator.harnessed\n")
    assert mutation.tests_naming(["evaluator/harness/__init__.py"]) == [
        "tests/test_dotted.py", "tests/test_from.py", "tests/test_longer.py", "tests/test_named.py",
        "tests/test_package.py", "tests/test_sibling.py"]


def test_the_copys_mutmut_section_names_the_files_and_tests_of_this_run_in_place_of_any_earlier():
    pyproject = ('[project]\nname = "x"\n\n[tool.mutmut]\nonly_mutate = ["old.py"]\nsource_paths = ["agents"]\n'
                 'pytest_add_cli_args_test_selection = ["tests/old.py"]\n\n[tool.ruff]\nline-length = 120\n')
    assert mutation.mutmut_section(pyproject, ["a/b.py", "c.py"], ["tests/test_b.py", "--deselect=tests/x.py::t"]) == (
        '[project]\nname = "x"\n\n[tool.mutmut]\nonly_mutate = ["a/b.py", "c.py"]\n'
        'pytest_add_cli_args_test_selection = ["tests/test_b.py", "--deselect=tests/x.py::t"]\n'
        'source_paths = ["agents"]\n\n[tool.ruff]\nline-length = 120\n')


RESULTS = """\
    evaluator.harness.fingerprint.x__plain__mutmut_1: killed
    evaluator.harness.fingerprint.x__plain__mutmut_2: survived
    evaluator.harness.fingerprint.xǁRunǁkey__mutmut_1: no tests
    evaluator.harness.fingerprint.x_differences__mutmut_7: timeout
    evaluator.harness.resolved.x_options__mutmut_1: caught by type check
    evaluator.harness.resolved.x_options__mutmut_2: suspicious
    evaluator.harness.resolved.x_options__mutmut_3: killed
"""


def test_mutmuts_results_are_read_into_each_mutants_status(tmp_path, monkeypatch):
    printed = RESULTS + "warning: a line that names no mutant\n"
    monkeypatch.setattr(mutation, "mutmut",
                        lambda work, *args: printed if (work, args) == (tmp_path, ("results", "--all", "true")) else "")
    found = mutation.statuses(tmp_path)
    assert found["evaluator.harness.fingerprint.xǁRunǁkey__mutmut_1"] == "no tests"
    assert found["evaluator.harness.resolved.x_options__mutmut_1"] == "caught by type check"
    assert len(found) == 7


def test_each_file_scores_its_kills_over_its_mutants_with_no_tests_and_suspicious_ones_counted_as_survivors():
    found = {line.strip().rpartition(": ")[0]: line.rpartition(": ")[2] for line in RESULTS.splitlines()}
    files = ["evaluator/harness/fingerprint.py", "evaluator/harness/resolved.py", "tools/quiet.py"]
    grouped = mutation.by_file(found, files)
    assert [name for name, _ in grouped["evaluator/harness/fingerprint.py"]] == [
        "evaluator.harness.fingerprint.x__plain__mutmut_1", "evaluator.harness.fingerprint.x__plain__mutmut_2",
        "evaluator.harness.fingerprint.x_differences__mutmut_7", "evaluator.harness.fingerprint.xǁRunǁkey__mutmut_1"]
    assert mutation.score(grouped["evaluator/harness/fingerprint.py"]) == (2, 4, 0.5)  # killed and timeout
    assert mutation.score(grouped["evaluator/harness/resolved.py"]) == (2, 3, 2 / 3)
    assert mutation.score(grouped.get("tools/quiet.py", [])) == (0, 0, 1.0)  # every line marked equivalent


def test_a_run_whose_mutants_were_all_left_unchecked_is_told_apart_from_one_that_checked_some():
    assert mutation.nothing_checked({"a.x_f__mutmut_1": "not checked", "a.x_f__mutmut_2": "not checked"})
    assert not mutation.nothing_checked({"a.x_f__mutmut_1": "not checked", "a.x_f__mutmut_2": "survived"})
    assert not mutation.nothing_checked({})  # no mutant at all: nothing failed


LONG = textwrap.dedent('''\
    def long(a, b):
        first = a + 1
        second = first * 2
        third = call(second,
                     b)
        fourth = third - 1
        fifth = fourth + a
        return fifth
    ''')


def mutmut_show(name: str, original: str, mutant: str, path: str) -> str:
    """What `mutmut show NAME` prints: its status, then difflib's diff of the function as mutmut
    3.8 builds it (mutation/diff_apply.py `get_diff_for_mutant`)."""
    return "\n".join([f"# {name}: survived", *difflib.unified_diff(
        original.strip().split("\n"), mutant.strip().split("\n"), fromfile=path, tofile=path, lineterm="")])


@pytest.mark.parametrize("name, original, mutant, shown", [
    ("pkg.box.xǁBoxǁgrow__mutmut_1", "def grow(self, by):\n    return self.size + by",
     "def grow(self, by):\n    return self.size - by", "pkg/box.py:20: return self.size + by  ->  return self.size - by"),
    # a change with context after it, over two lines
    ("pkg.box.x_long__mutmut_4", LONG, LONG.replace("call(second,\n                 b)", "None"),
     "pkg/box.py:29: third = call(second, / b)  ->  third = None"),
    # a function the file no longer holds: the file alone
    ("pkg.box.x_gone__mutmut_1", "def gone():\n    return 1", "def gone():\n    return 2",
     "pkg/box.py: return 1  ->  return 2"),
])
def test_a_survivor_is_shown_at_its_line_in_the_file_with_its_old_and_new_code(
        tmp_path, monkeypatch, name, original, mutant, shown):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "box.py").write_text(SOURCE + "\n\n" + LONG)  # long() from line 26
    show = mutmut_show(name, original, mutant, "pkg/box.py")
    monkeypatch.setattr(mutation, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(mutation, "mutmut", lambda work, *args: show if args == ("show", name) else "")
    assert mutation.survivor_line(tmp_path, name, "pkg/box.py") == shown


def test_a_mutants_file_is_the_listed_file_of_its_module():
    files = ["evaluator/harness/__init__.py", "evaluator/harness/fingerprint.py"]
    assert mutation.file_of("evaluator.harness.fingerprint.x_differences__mutmut_3", files) == files[1]
    assert mutation.file_of("evaluator.harness.xǁRunǁkey__mutmut_1", files) == files[0]
    assert mutation.file_of("tools.other.x_f__mutmut_1", files) == "tools.other"  # not listed: its module


def test_the_lines_marked_equivalent_are_counted_per_file(tmp_path):
    marked = tmp_path / "marked.py"
    marked.write_text("a = 1  # pragma: no mutate: a cache's size\nb = 2\nd = 5\nc = (3,  # pragma: no mutate: why\n     4)\n",
                      encoding="utf-8")
    assert mutation.pragma_count(marked) == 2
