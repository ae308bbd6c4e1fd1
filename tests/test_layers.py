"""The floors of the house: no module imports from a floor above its own.

agents (the submission) <- minibench (the benchmark it is measured on) <- evaluator (the harness
that runs both) <- tools, benchmarks and the entry points. Inside evaluator, scoring (rules,
judge, metrics) sits below the harness and the report, which both read scores. tools (what a user
runs) never import benchmarks (measurements and experiments), and neither imports tests. Every
import counts, including those inside functions (a lazy import still ties the floors together).
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ENTRY_POINTS = {"local_evaluation", "crag_mm_harness"}
TOP = {"tools", "benchmarks", "tests", *ENTRY_POINTS}

# package (dotted prefix) -> the top-level names it may not import
FORBIDDEN = {
    "agents": {"minibench", "evaluator", *TOP},
    "minibench": {"evaluator", *TOP},
    "evaluator": TOP,
    "evaluator.scoring": {"evaluator.harness", "evaluator.report", "evaluator.calibrate"},
    "tools": {"benchmarks", "tests"},
}


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, dotted name) for every import statement in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from evaluator import harness` names the submodule, not just the package
            found += [(node.lineno, f"{base}.{alias.name}" if alias.name != "*" else base) for alias in node.names]
    return found


def below(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def layer_violations(root: Path) -> list[str]:
    out = []
    packages = sorted({package.partition(".")[0] for package in FORBIDDEN})
    for path in sorted(p for package in packages for p in (root / package).rglob("*.py")):
        module = module_name(root, path)
        rules = [(package, banned) for package, banned in FORBIDDEN.items() if below(module, package)]
        for line, name in imported_names(path, module):
            for package, banned in rules:
                for higher in banned:
                    if below(name, higher):
                        out.append(f"{path.relative_to(root)}:{line}: {module} ({package}) imports {name}")
    return out


def test_no_module_imports_from_a_higher_layer():
    assert layer_violations(REPO_ROOT) == []


def test_the_check_sees_an_import_that_runs_back_up(tmp_path):
    (tmp_path / "agents" / "cruise").mkdir(parents=True)
    (tmp_path / "minibench").mkdir()
    (tmp_path / "evaluator" / "scoring").mkdir(parents=True)
    (tmp_path / "agents" / "cruise" / "chain.py").write_text("def run():\n    from evaluator.harness import runner\n")
    (tmp_path / "minibench" / "content.py").write_text("import tools.preflight\n")
    (tmp_path / "evaluator" / "scoring" / "judge.py").write_text("from ..report import html\n")
    (tmp_path / "evaluator" / "runner.py").write_text("from agents.cruise import chain\nfrom minibench import content\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "preflight.py").write_text("from evaluator import runner\nfrom benchmarks import search\n")
    got = layer_violations(tmp_path)
    assert got == [
        "agents/cruise/chain.py:2: agents.cruise.chain (agents) imports evaluator.harness.runner",
        "evaluator/scoring/judge.py:1: evaluator.scoring.judge (evaluator.scoring) imports evaluator.report.html",
        "minibench/content.py:1: minibench.content (minibench) imports tools.preflight",
        "tools/preflight.py:2: tools.preflight (tools) imports benchmarks.search",
    ]


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the project's modules it imports (a `from m import name` counts as importing m
    when `m.name` is no module of its own)."""
    paths = {module_name(root, p): p for package in ("agents", "minibench", "evaluator", "tools", "benchmarks")
             for p in (root / package).rglob("*.py")}
    paths.update({name: root / f"{name}.py" for name in ENTRY_POINTS if (root / f"{name}.py").exists()})
    graph = {}
    for module, path in paths.items():
        targets = set()
        for _, name in imported_names(path, module):
            while name and name not in paths:
                name = name.rpartition(".")[0]
            # a package's __init__ is not a dependency of its own submodules' imports of siblings
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycles():
    assert import_cycles(import_graph(REPO_ROOT)) == []


def test_the_cycle_check_sees_a_lazy_import_back(tmp_path):
    (tmp_path / "agents" / "cruise").mkdir(parents=True)
    (tmp_path / "agents" / "config.py").write_text("from agents.cruise.priors import table\n")
    (tmp_path / "agents" / "cruise" / "priors.py").write_text(
        "def table(cfg=None):\n    from agents.config import Config\n")
    (tmp_path / "agents" / "cruise" / "chain.py").write_text("from agents import config\n")
    assert import_cycles(import_graph(tmp_path)) == [["agents.config", "agents.cruise.priors"]]
