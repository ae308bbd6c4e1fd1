"""Mutation testing of what a change touched (mutmut, pinned in requirements-cpu.txt).

    python -m tools.mutation BASE                    # the functions changed since commit BASE
    python -m tools.mutation BASE --whole-files      # every function of the files changed since BASE
    python -m tools.mutation --files tools/preflight.py benchmarks/machine.py

The files are the .py files of the project's code changed since BASE (`git diff BASE`, the work
tree included; tests/ and testkit/ are what checks, not what is checked). The functions are those
whose lines a hunk of that diff touches (a method as Class.method). mutmut plants its mutants in
a copy of the tree (`--work`, default .mutation/, ignored by git) under that copy's mutants/, so
the working tree is never edited; the copy's pyproject.toml takes the repository's [tool.mutmut]
with `only_mutate` set to the files chosen. mutmut first runs the chosen tests once, recording
which test calls which function; then each mutant runs only the tests that called its function.

The tests are the default tier's files that name the module (its dotted path or its file stem),
or `--tests` as given. A mutant no chosen test reaches is listed as "no tests": it counts as a
survivor, since no test could catch it.

It prints, per file: killed / measured, where measured = the mutants checked less those that
timed out (mutmut's "timeout", and "segfault": the SIGKILL its runner sends one CPU second past
the limit). A timed-out mutant is neither a kill nor a survivor: a test that hangs may be a bug
caught or a worker stuck after its fork, and mutmut cannot tell which. A file where 20% or more
of the checked mutants timed out is "unmeasured", not scored. Lines marked equivalent (`# pragma:
no mutate`, with the reason beside it) make no mutant, so they are in no count; the line says how
many. Then every survivor with its line and its change. Exit status 0 when every file is measured
and reaches `--target` (default 0.85), else 1.

`--isolation` sets mutmut's `process_isolation`: "forkserver" (the default) forks each mutant
from a server process that has only collected the tests; "fork" (mutmut's own default) from
mutmut's process, which has run them all, torch's thread pools running, so that a fork can hang
on their locks: evaluator/harness/runner.py's mutants timed out 42 times in 113 that way, and
none of 622 from the server (docs/benchmarks.md). `--timeout-constant S` (default 10 s, mutmut's
own 1 s) is added to a mutant's measured test seconds before mutmut multiplies them by 15 into
its wall limit: mutmut measures a test's call alone, and each forked worker pays the test's
fixtures and the lazy imports again, which on a loaded machine outlasted mutmut's limit.
"""
from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CHECKED_ELSEWHERE = ("tests/", "testkit/", "scripts/")  # the checks themselves, not code under test
# mutmut 3.8's statuses (mutmut/stats.py `status_by_exit_code`), each in one class:
KILLED = {"killed", "caught by type check"}
# a test run stopped from outside: SIGXCPU at the CPU or wall limit ("timeout"), SIGKILL one CPU
# second after the CPU limit, or by the system ("segfault" is mutmut's name for -9 and -11)
TIMED_OUT = {"timeout", "segfault"}
# no verdict: the run never reached it, was interrupted, or mutmut skipped it
UNCHECKED = {"not checked", "check was interrupted by user", "skipped"}
# every other status is a survivor: "survived", "no tests" (no test could catch it), "suspicious"
UNMEASURED_TIMEOUT_SHARE = 0.20


def changed_files(base: str) -> list[str]:
    out = git("diff", "--name-only", base, "--", "*.py")
    return [f for f in out.split() if f.endswith(".py") and not f.startswith(CHECKED_ELSEWHERE)
            and (REPO_ROOT / f).exists()]


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO_ROOT, check=True, capture_output=True, text=True).stdout


def changed_lines(base: str, path: str) -> set[int]:
    """The lines of `path` (as it is now) that a hunk of `git diff BASE` adds or changes; a hunk
    that only deletes counts the line before it (git's `+N,0`), so that lines cut from the end of
    a function count for that function."""
    lines: set[int] = set()
    for header in re.finditer(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", git("diff", "-U0", base, "--", path), re.M):
        start, count = int(header.group(1)), int(header.group(2) or 1)
        lines.update(range(start, start + max(count, 1)))
    return lines


def functions_at(source: str, lines: set[int]) -> list[str]:
    """mutmut's names (x_func, xǁClassǁmethod) of the functions whose body holds any of `lines`;
    a nested function belongs to the function around it, as mutmut mutates it."""
    found = []

    def visit(node, class_name=None):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and class_name is None:
                visit(child, child.name)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                if lines & set(range(first, child.end_lineno + 1)):
                    found.append(f"xǁ{class_name}ǁ{child.name}" if class_name else f"x_{child.name}")

    visit(ast.parse(source))
    return found


def module_of(path: str) -> str:
    return path[:-3].replace("/", ".").removesuffix(".__init__")


def tests_naming(paths: list[str]) -> list[str]:
    """The default tier's test files that import one of the modules (`import a.b`, `from a.b
    import ...`, `from a import b`) or name it by its dotted path."""
    patterns = []
    for path in paths:
        module = module_of(path)
        package, _, stem = module.rpartition(".")
        patterns.append(rf"\b{re.escape(module)}\b")
        if package:
            patterns.append(rf"from {re.escape(package)} import [^\n]*\b{re.escape(stem)}\b")
    chosen = []
    for test in sorted((REPO_ROOT / "tests").glob("test_*.py")):
        text = test.read_text(encoding="utf-8")
        if any(re.search(p, text) for p in patterns):
            chosen.append(f"tests/{test.name}")
    return chosen


def mutmut_section(text: str, only_mutate: list[str], tests: list[str], isolation: str = "forkserver",
                   timeout_constant: float = 10.0) -> str:
    """pyproject.toml with [tool.mutmut]'s only_mutate, test selection, process isolation and
    timeout constant set for this run."""
    text = re.sub(r"^(only_mutate|pytest_add_cli_args_test_selection|process_isolation|timeout_constant) = .*\n",
                  "", text, flags=re.M)
    listed = ", ".join(f'"{p}"' for p in only_mutate)
    chosen = ", ".join(f'"{t}"' for t in tests)
    return text.replace("[tool.mutmut]\n", f"[tool.mutmut]\nonly_mutate = [{listed}]\n"
                                           f"pytest_add_cli_args_test_selection = [{chosen}]\n"
                                           f'process_isolation = "{isolation}"\n'
                                           f"timeout_constant = {timeout_constant}\n", 1)


def prepare_copy(work: Path, only_mutate: list[str], tests: list[str], isolation: str = "forkserver",
                 timeout_constant: float = 10.0) -> Path:
    """A fresh copy of the tree (tracked and untracked files git does not ignore) in `work`."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for name in git("ls-files", "-co", "--exclude-standard", "-z").split("\0"):
        source = REPO_ROOT / name
        if name and source.is_file() and not source.is_symlink():
            target = work / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for shared in (".venv", ".cache"):  # models and packages, read as the tree reads them
        if (REPO_ROOT / shared).exists():
            (work / shared).symlink_to((REPO_ROOT / shared).resolve())
    pyproject = work / "pyproject.toml"
    pyproject.write_text(mutmut_section(pyproject.read_text(), only_mutate, tests, isolation, timeout_constant))
    return work


def mutmut(work: Path, *args: str, capture: bool = True) -> str:
    done = subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=work, text=True,
                          capture_output=capture)
    if capture:
        return done.stdout
    return ""


def statuses(work: Path) -> dict[str, str]:
    """mutant name -> its status, from `mutmut results --all true`."""
    return read_results(mutmut(work, "results", "--all", "true"))


def read_results(printed: str) -> dict[str, str]:
    """mutant name -> its status, from the lines `mutmut results` prints (`    NAME: STATUS`)."""
    found = {}
    for line in printed.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            found[name] = status
    return found


def file_of(name: str, files: list[str]) -> str:
    module = name.split(".x_")[0].split(".xǁ")[0]
    return next((f for f in files if module_of(f) == module), module)


def by_file(found: dict[str, str], files: list[str]) -> dict[str, list[tuple[str, str]]]:
    """path -> [(mutant name, status)], sorted by name."""
    grouped: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for name, status in sorted(found.items()):
        grouped[file_of(name, files)].append((name, status))
    return grouped


@dataclass(frozen=True)
class FileScore:
    """One file's mutants by their verdict: killed, survived (any status but a kill, a timeout or
    none: "survived", "no tests", "suspicious"), timed out, and left unchecked."""
    killed: int
    survived: int
    timeouts: int
    unchecked: int

    @property
    def checked(self) -> int:
        return self.killed + self.survived + self.timeouts

    @property
    def measured(self) -> int:
        """The checked mutants with a verdict: the score's denominator."""
        return self.killed + self.survived

    @property
    def share(self) -> float:
        """killed / measured; a file with no measured mutant (every line marked equivalent) scores 1."""
        return self.killed / self.measured if self.measured else 1.0

    @property
    def unmeasured(self) -> bool:
        """Whether so many checked mutants timed out that the others say little about the file."""
        return self.checked > 0 and self.timeouts / self.checked >= UNMEASURED_TIMEOUT_SHARE

    def line(self, path: str, marked: int) -> str:
        times = f"{self.timeouts} of {self.checked} checked timed out"
        unchecked = f", {self.unchecked} not checked" if self.unchecked else ""
        if self.unmeasured:
            return (f"{path}: unmeasured: {times} (20% or more); {self.killed} / {self.measured} of the others "
                    f"killed{unchecked} ({marked} marked equivalent)")
        return (f"{path}: {self.killed} / {self.measured} = {self.share:.0%} ({times}{unchecked}; "
                f"{marked} marked equivalent)")

    def reaches(self, target: float) -> bool:
        return not self.unmeasured and self.share >= target


def score(results: list[tuple[str, str]]) -> FileScore:
    """One file's mutants [(name, status)] counted by verdict."""
    statuses = [status for _, status in results]
    killed = sum(status in KILLED for status in statuses)
    timeouts = sum(status in TIMED_OUT for status in statuses)
    unchecked = sum(status in UNCHECKED for status in statuses)
    return FileScore(killed, len(statuses) - killed - timeouts - unchecked, timeouts, unchecked)


def survived(status: str) -> bool:
    return status not in KILLED | TIMED_OUT | UNCHECKED


def nothing_checked(found: dict[str, str]) -> bool:
    """Whether mutmut made mutants but checked none: its runs of the unmutated tests failed."""
    return bool(found) and all(status == "not checked" for status in found.values())


def pragma_count(path: Path) -> int:
    return sum("pragma: no mutate" in line for line in path.read_text(encoding="utf-8").splitlines())


def def_lines(source: str) -> dict[str, int]:
    """mutmut's function names (x_func, xǁClassǁmethod) -> the line their `def` is on."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[f"x_{node.name}"] = node.lineno
        elif isinstance(node, ast.ClassDef):
            found.update({f"xǁ{node.name}ǁ{f.name}": f.lineno for f in node.body
                          if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))})
    return found


def survivor_line(work: Path, name: str, path: str) -> str:
    """`path:line: old -> new` of a mutant, from `mutmut show` (its diff counts lines from the
    function's `def`)."""
    diff = mutmut(work, "show", name).splitlines()
    function = name.rpartition(".")[2].split("__mutmut_")[0]
    start = def_lines((REPO_ROOT / path).read_text(encoding="utf-8")).get(function)
    line = None
    for text in diff:
        header = re.match(r"^@@ -(\d+)", text)
        if header:
            line = int(header.group(1))
        elif line is not None and text.startswith("-") and not text.startswith("---"):
            break
        elif line is not None and text.startswith(" "):
            line += 1
    removed = " / ".join(t[1:].strip() for t in diff if t.startswith("-") and not t.startswith("---"))
    added = " / ".join(t[1:].strip() for t in diff if t.startswith("+") and not t.startswith("+++"))
    where = f"{path}:{start + line - 1}" if start and line else path
    return f"{where}: {removed[:160]}  ->  {added[:160]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", help="the commit the change started from (git diff BASE)")
    parser.add_argument("--files", nargs="+", help="mutate these files, every function of them (with BASE: the "
                                                   "functions changed since BASE)")
    parser.add_argument("--whole-files", action="store_true", help="every function of the changed files")
    parser.add_argument("--tests", nargs="+", help="the test files to run (default: those naming the module)")
    parser.add_argument("--deselect", action="append", default=[], metavar="NODEID",
                        help="a test left out (pytest --deselect): one that cannot pass beside the others in one process")
    parser.add_argument("--max-children", type=int, default=1, help="mutants checked at once (default 1)")
    parser.add_argument("--isolation", choices=("fork", "forkserver"), default="forkserver",
                        help="mutmut's process_isolation: fork each mutant from a server that only collected the "
                             "tests (forkserver, default) or from mutmut's own process, which ran them all (fork)")
    parser.add_argument("--timeout-constant", type=float, default=10.0, metavar="S",
                        help="mutmut's timeout_constant: a mutant's wall limit is (its tests' measured seconds + S) "
                             "x 15 (mutmut's default S is 1; the measured seconds leave out fixtures and imports, "
                             "which each forked worker pays again)")
    parser.add_argument("--work", default=".mutation", help="the copy of the tree mutmut works in")
    parser.add_argument("--target", type=float, default=0.85, help="the share of mutants each file must kill")
    args = parser.parse_args(argv)
    if not args.base and not args.files:
        parser.error("name a BASE commit or --files")
    files = args.files or changed_files(args.base)
    if not files:
        print("mutation: no project .py file changed")
        return 0
    patterns = []
    for path in files:
        if args.whole_files or not args.base:
            patterns.append(f"{module_of(path)}.*")
        else:
            names = functions_at((REPO_ROOT / path).read_text(encoding="utf-8"), changed_lines(args.base, path))
            patterns += [f"{module_of(path)}.{name}__mutmut_*" for name in names]
    if not patterns:
        print("mutation: the changes touch no function")
        return 0
    tests = (args.tests or tests_naming(files) or ["tests"]) + [f"--deselect={d}" for d in args.deselect]
    work = prepare_copy((REPO_ROOT / args.work).resolve(), files, tests, args.isolation, args.timeout_constant)
    print(f"mutation: {', '.join(files)} against {len(tests)} test files; mutmut works in {work}", flush=True)
    mutmut(work, "run", "--max-children", str(args.max_children), *patterns, capture=False)
    import fnmatch

    found = {n: s for n, s in statuses(work).items() if any(fnmatch.fnmatch(n, p) for p in patterns)}
    if nothing_checked(found):
        print("mutation: no mutant was checked: mutmut's first run of the chosen tests (unmutated, one process) "
              "failed; its output is above. Choose tests that pass together in one process (--tests).")
        return 2
    grouped = by_file(found, files)
    ok = True
    print("\nfile: killed / measured (measured: checked less timed out)")
    for path in files:
        scored = score(grouped.get(path, []))
        ok &= scored.reaches(args.target)
        print(scored.line(path, pragma_count(REPO_ROOT / path)))
    for path in files:
        for name, status in grouped.get(path, []):
            if survived(status):
                print(f"  {status}: {survivor_line(work, name, path)}  [{name}]")
            elif status in TIMED_OUT:
                print(f"  {status}: [{name}]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
