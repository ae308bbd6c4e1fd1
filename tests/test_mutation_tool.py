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


def test_the_copys_mutmut_section_names_the_files_tests_and_isolation_of_this_run_in_place_of_any_earlier():
    pyproject = ('[project]\nname = "x"\n\n[tool.mutmut]\nonly_mutate = ["old.py"]\nsource_paths = ["agents"]\n'
                 'pytest_add_cli_args_test_selection = ["tests/old.py"]\nprocess_isolation = "fork"\n\n'
                 '[tool.ruff]\nline-length = 120\n')
    assert mutation.mutmut_section(pyproject, ["a/b.py", "c.py"], ["tests/test_b.py", "--deselect=tests/x.py::t"],
                                   "forkserver", 12.5) == (
        '[project]\nname = "x"\n\n[tool.mutmut]\nonly_mutate = ["a/b.py", "c.py"]\n'
        'pytest_add_cli_args_test_selection = ["tests/test_b.py", "--deselect=tests/x.py::t"]\n'
        'process_isolation = "forkserver"\ntimeout_constant = 12.5\n'
        'source_paths = ["agents"]\n\n[tool.ruff]\nline-length = 120\n')


def test_the_copys_mutmut_section_is_one_mutmut_reads_with_the_isolation_asked_for(tmp_path, monkeypatch):
    """mutmut's own reader of pyproject.toml takes the section as written (mutmut/configuration.py)."""
    from mutmut import configuration

    pyproject = (mutation.REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        mutation.mutmut_section(pyproject, ["tools/x.py"], ["tests/test_x.py"], "forkserver", 7.0), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    read = configuration._load_config()
    assert read.process_isolation == configuration.ProcessIsolation.FORKSERVER and read.timeout_constant == 7.0
    assert read.only_mutate == ["tools/x.py"]
    assert read.pytest_add_cli_args_test_selection == ["tests/test_x.py"]



def test_the_copy_holds_the_files_git_lists_links_the_shared_folders_and_reads_as_this_runs_section(
        tmp_path, monkeypatch):
    """prepare_copy: the files git lists (tracked and untracked, not ignored) copied, .venv linked,
    and the copy's pyproject.toml read by mutmut with this run's files, tests, isolation and
    timeout constant."""
    from mutmut import configuration

    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "tools" / "x.py").write_text("def f(x):\n    return x\n")
    (repo / "pyproject.toml").write_text((mutation.REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (repo / "ignored.log").write_text("git lists it not")
    (repo / ".venv").mkdir()
    monkeypatch.setattr(mutation, "REPO_ROOT", repo)
    monkeypatch.setattr(mutation, "git", fake_git({("ls-files", "-co", "--exclude-standard", "-z"):
                                                   "tools/x.py\0pyproject.toml\0"}))
    work = mutation.prepare_copy(tmp_path / "work", ["tools/x.py"], ["tests/test_x.py"], "fork", 3.0)
    assert sorted(p.name for p in work.iterdir()) == [".venv", "pyproject.toml", "tools"]
    assert (work / "tools" / "x.py").read_text() == "def f(x):\n    return x\n"
    assert (work / ".venv").is_symlink() and (work / ".venv").resolve() == (repo / ".venv").resolve()
    monkeypatch.chdir(work)
    read = configuration._load_config()
    assert read.process_isolation == configuration.ProcessIsolation.FORK and read.timeout_constant == 3.0
    assert read.only_mutate == ["tools/x.py"] and read.pytest_add_cli_args_test_selection == ["tests/test_x.py"]

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


def results_of(exit_codes: list[int | None]) -> list[tuple[str, str]]:
    """One file's mutants with these exit codes, named by mutmut's own table (mutmut/stats.py), as
    `mutmut results` prints them."""
    from mutmut.stats import status_by_exit_code

    printed = "".join(f"    tools.x.x_f__mutmut_{i}: {status_by_exit_code[code]}\n" for i, code in enumerate(exit_codes))
    return sorted(mutation.read_results(printed).items())


def test_every_status_mutmut_can_give_is_a_kill_a_timeout_no_verdict_or_a_survivor_and_only_one():
    from mutmut.stats import status_by_exit_code

    survivors = {"survived", "no tests", "suspicious"}
    classes = [mutation.KILLED, mutation.TIMED_OUT, mutation.UNCHECKED, survivors]
    # an exit code mutmut does not know gets its table's default
    for status in {*status_by_exit_code.values(), status_by_exit_code.default_factory()}:
        assert sum(status in c for c in classes) == 1, status
        assert mutation.survived(status) == (status in survivors)


def test_a_timed_out_mutant_is_neither_killed_nor_survived_and_the_score_is_over_those_with_a_verdict():
    # exit codes as mutmut's workers give them: 1 a failing test, 0 all passed, 33 no test chose
    # it, -24 SIGXCPU (the wall or CPU limit), -9 SIGKILL past the CPU limit, None never run
    scored = mutation.score(results_of([1, 1, 1, 1, 1, 1, 1, 37, 0, 33, -24, None]))
    assert (scored.killed, scored.survived, scored.timeouts, scored.unchecked) == (8, 2, 1, 1)
    assert (scored.checked, scored.measured) == (11, 10)
    assert scored.share == 0.8 and not scored.unmeasured
    assert scored.line("tools/x.py", 2) == "tools/x.py: 8 / 10 = 80% (1 of 11 checked timed out, 1 not checked; 2 marked equivalent)"
    assert not scored.reaches(0.85) and scored.reaches(0.8)


@pytest.mark.parametrize("timeouts, unmeasured", [(1, False), (2, True), (3, True)])
def test_a_file_where_a_fifth_or_more_of_its_checked_mutants_timed_out_is_unmeasured_whatever_the_rest_score(
        timeouts, unmeasured):
    # ten checked: one, two, three of them timed out (SIGXCPU, or SIGKILL one second after it);
    # the others are all killed, and a mutant never run counts in no share
    codes = [-24] * (timeouts - 1) + [-9] + [1] * (10 - timeouts) + [None, None, None]
    scored = mutation.score(results_of(codes))
    assert (scored.checked, scored.timeouts, scored.unchecked, scored.share) == (10, timeouts, 3, 1.0)
    assert scored.unmeasured is unmeasured
    assert scored.reaches(0.85) is not unmeasured
    if unmeasured:
        assert scored.line("tools/x.py", 0) == (
            f"tools/x.py: unmeasured: {timeouts} of 10 checked timed out (20% or more); "
            f"{10 - timeouts} / {10 - timeouts} of the others killed, 3 not checked (0 marked equivalent)")


def test_each_file_scores_its_kills_over_its_mutants_with_a_verdict_no_tests_and_suspicious_ones_survivors():
    found = mutation.read_results(RESULTS)
    files = ["evaluator/harness/fingerprint.py", "evaluator/harness/resolved.py", "tools/quiet.py"]
    grouped = mutation.by_file(found, files)
    assert [name for name, _ in grouped["evaluator/harness/fingerprint.py"]] == [
        "evaluator.harness.fingerprint.x__plain__mutmut_1", "evaluator.harness.fingerprint.x__plain__mutmut_2",
        "evaluator.harness.fingerprint.x_differences__mutmut_7", "evaluator.harness.fingerprint.xǁRunǁkey__mutmut_1"]
    fingerprint = mutation.score(grouped["evaluator/harness/fingerprint.py"])
    assert (fingerprint.killed, fingerprint.measured, fingerprint.timeouts) == (1, 3, 1)
    assert fingerprint.unmeasured  # 1 of 4 timed out
    resolved = mutation.score(grouped["evaluator/harness/resolved.py"])
    assert (resolved.killed, resolved.measured, resolved.share) == (2, 3, 2 / 3)
    quiet = mutation.score(grouped.get("tools/quiet.py", []))  # every line marked equivalent: no mutant
    assert (quiet.checked, quiet.share, quiet.unmeasured) == (0, 1.0, False)
    assert quiet.line("tools/quiet.py", 4) == "tools/quiet.py: 0 / 0 = 100% (0 of 0 checked timed out; 4 marked equivalent)"


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


def test_the_run_prints_each_files_score_and_its_timeouts_apart_and_fails_on_an_unmeasured_file(
        tmp_path, monkeypatch, capsys):
    """main over two files, with mutmut (a subprocess) standing in: what `results --all true` and
    `show` print. One file scores 9 / 10 with no timeout; the other has 3 of 10 timed out."""
    for name in ("a.py", "b.py"):
        (tmp_path / "tools" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "tools" / name).write_text("def f(x):\n    return x + 1\n")
    printed = "".join(
        [f"    tools.a.x_f__mutmut_{i}: killed\n" for i in range(1, 10)] + ["    tools.a.x_f__mutmut_10: survived\n"]
        + [f"    tools.b.x_f__mutmut_{i}: killed\n" for i in range(1, 8)]
        + [f"    tools.b.x_f__mutmut_{i}: timeout\n" for i in range(8, 11)]
        + ["    tools.other.x_g__mutmut_1: survived\n"])  # a file not asked for
    calls = []

    def fake_mutmut(work, *args, capture=True):
        calls.append(args)
        if args == ("results", "--all", "true"):
            return printed
        if args[0] == "show":
            return mutmut_show(args[1], "def f(x):\n    return x + 1", "def f(x):\n    return x - 1", "tools/a.py")
        return ""

    monkeypatch.setattr(mutation, "REPO_ROOT", tmp_path)
    copies = []
    monkeypatch.setattr(mutation, "prepare_copy", lambda work, files, tests, isolation, timeout:
                        copies.append((files, tests, isolation, timeout)) or tmp_path)
    monkeypatch.setattr(mutation, "mutmut", fake_mutmut)
    code = mutation.main(["--files", "tools/a.py", "tools/b.py", "--tests", "tests/test_a.py", "--target", "0.9"])
    out = capsys.readouterr().out
    assert calls[0] == ("run", "--max-children", "1", "tools.a.*", "tools.b.*")
    assert out.splitlines()[1:] == [
        "",
        "file: killed / measured (measured: checked less timed out)",
        "tools/a.py: 9 / 10 = 90% (0 of 10 checked timed out; 0 marked equivalent)",
        "tools/b.py: unmeasured: 3 of 10 checked timed out (20% or more); 7 / 7 of the others killed (0 marked equivalent)",
        "  survived: tools/a.py:2: return x + 1  ->  return x - 1  [tools.a.x_f__mutmut_10]",
        "  timeout: [tools.b.x_f__mutmut_10]", "  timeout: [tools.b.x_f__mutmut_8]", "  timeout: [tools.b.x_f__mutmut_9]"]
    assert code == 1  # b is unmeasured, though none of its measured mutants survived
    assert mutation.main(["--files", "tools/a.py", "--tests", "tests/test_a.py", "--target", "0.9",
                          "--isolation", "fork", "--timeout-constant", "3"]) == 0
    assert copies == [(["tools/a.py", "tools/b.py"], ["tests/test_a.py"], "forkserver", 10.0),
                      (["tools/a.py"], ["tests/test_a.py"], "fork", 3.0)]
