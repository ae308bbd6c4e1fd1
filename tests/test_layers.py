"""The floors of the house: no module imports from a floor above its own.

agents (the submission) <- minibench (the benchmark it is measured on) <- evaluator (the harness
that runs both) <- tools (what a user runs), integrations (lmms-eval's side), testkit (what tests
and benchmarks share) and the entry points <- benchmarks (measurements and experiments). Inside evaluator, scoring (rules,
judge, metrics) sits below the harness and the report, which both read scores. Nothing outside
tests/ imports tests (the image ships without it), and no test module imports another: what they
share lives in testkit or conftest.py. Every import counts, including those inside functions (a
lazy import still ties the floors together).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
ENTRY_POINTS = {"local_evaluation", "crag_mm_harness"}
# integrations/ (lmms-eval's side: tasks and the cruise_agent model) sits beside tools/: it may
# read every floor below; nothing but a test imports it
TOP = {"tools", "benchmarks", "tests", "integrations", *ENTRY_POINTS}

# package (dotted prefix) -> the top-level names it may not import
FORBIDDEN = {
    "agents": {"minibench", "evaluator", "testkit", *TOP},
    "minibench": {"evaluator", "testkit", *TOP},
    # the evaluator scores any agent on any benchmark: it knows neither the mini benchmark nor
    # CruiseAgent (see AGENT_MODULES_THE_EVALUATOR_READS)
    "evaluator": {"minibench", "testkit", *TOP},
    "evaluator.scoring": {"evaluator.harness", "evaluator.search", "evaluator.report", "evaluator.commands",
                          "evaluator.workers"},
    "evaluator.search": {"evaluator.harness", "evaluator.report", "evaluator.commands", "evaluator.workers"},
    "evaluator.harness": {"evaluator.report", "evaluator.commands", "evaluator.workers"},
    "evaluator.report": {"evaluator.commands", "evaluator.workers"},
    "testkit": TOP,
    "tools": {"benchmarks", "testkit", "tests", "integrations"},
    "integrations": {"benchmarks", "testkit", "tests"},
    "benchmarks": {"tests", "integrations"},
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
        "evaluator/runner.py:2: evaluator.runner (evaluator) imports minibench.content",
        "evaluator/scoring/judge.py:1: evaluator.scoring.judge (evaluator.scoring) imports evaluator.report.html",
        "minibench/content.py:1: minibench.content (minibench) imports tools.preflight",
        "tools/preflight.py:2: tools.preflight (tools) imports benchmarks.search",
    ]


# What of the agents package the evaluator may read: the contract (agents/base_agent.py), the
# machines it runs on (agents/profiles.py: search, dataset, GPUs; agents/hardware.py: which one
# this is) and the HTTP waits the judge shares with the served engines (agents/transient_waits.py). Everything else an agent says
# about itself reaches the evaluator through the agent class (agents/base_agent.py's questions).
AGENT_MODULES_THE_EVALUATOR_READS = ("agents.base_agent", "agents.profiles", "agents.hardware",
                                     "agents.transient_waits", "agents.registry")


def evaluator_reads_of_agents(root: Path) -> list[str]:
    out = []
    for path in sorted((root / "evaluator").rglob("*.py")):
        module = module_name(root, path)
        for line, name in imported_names(path, module):
            if below(name, "agents") and not any(below(name, allowed) for allowed in AGENT_MODULES_THE_EVALUATOR_READS):
                out.append(f"{path.relative_to(root)}:{line}: {module} imports {name}")
    return out


def test_the_evaluator_reads_only_the_contract_and_the_profiles_of_the_agents_package(tmp_path):
    assert evaluator_reads_of_agents(REPO_ROOT) == []
    (tmp_path / "evaluator" / "harness").mkdir(parents=True)
    (tmp_path / "evaluator" / "harness" / "models.py").write_text(
        "from agents.profiles import PROFILES\nfrom agents.base_agent import IDK_ANSWER\n"
        "def f():\n    from agents.cruise_agent import CruiseAgent\n")
    assert evaluator_reads_of_agents(tmp_path) == [
        "evaluator/harness/models.py:4: evaluator.harness.models imports agents.cruise_agent.CruiseAgent"]


def python_files(root: Path) -> list[Path]:
    """Every .py file of the project: at the top and in its folders (not the hidden ones, such as
    .venv and .cache, nor outputs/)."""
    found = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or entry.name == "outputs" or entry.is_symlink():
            continue
        if entry.is_dir():
            found += sorted(entry.rglob("*.py"))
        elif entry.suffix == ".py":
            found.append(entry)
    return found


def imports_of_tests(root: Path) -> list[str]:
    """Imports of the tests package from outside tests/, and of one test module by another."""
    out = []
    for path in python_files(root):
        module = module_name(root, path)
        in_tests = below(module, "tests")
        for line, name in imported_names(path, module):
            a_test_module = any(part.startswith("test_") for part in name.split("."))  # tests/ or tests/full/
            if below(name, "tests") and (not in_tests or a_test_module):
                out.append(f"{path.relative_to(root)}:{line}: {module} imports {name}")
    return out


def test_nothing_imports_tests_but_a_test_and_no_test_imports_another():
    assert imports_of_tests(REPO_ROOT) == []


def test_the_tests_check_sees_a_tool_and_a_test_module_importing_tests(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "gpu_bench.py").write_text("def build():\n    from tests.tiny_models import build\n")
    (tmp_path / "tests" / "conftest.py").write_text("PAPER = 1\n")
    (tmp_path / "tests" / "test_a.py").write_text(
        "from tests.test_b import make_agent\nfrom tests.conftest import PAPER\nfrom testkit import fakes\n")
    (tmp_path / "tests" / "test_b.py").write_text("from tests import test_a\nfrom tests.full.test_c import world\n")
    (tmp_path / "tests" / "full").mkdir()
    (tmp_path / "tests" / "full" / "test_c.py").write_text("from tests.test_a import make_agent\nimport tests.full\n")
    (tmp_path / "local_evaluation.py").write_text("import tests\n")
    assert imports_of_tests(tmp_path) == [
        "benchmarks/gpu_bench.py:2: benchmarks.gpu_bench imports tests.tiny_models.build",
        "local_evaluation.py:1: local_evaluation imports tests",
        "tests/full/test_c.py:1: tests.full.test_c imports tests.test_a.make_agent",
        "tests/test_a.py:1: tests.test_a imports tests.test_b.make_agent",
        "tests/test_b.py:1: tests.test_b imports tests.test_a",
        "tests/test_b.py:2: tests.test_b imports tests.full.test_c.world",
    ]


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the project's modules it imports (a `from m import name` counts as importing m
    when `m.name` is no module of its own)."""
    paths = {module_name(root, p): p for package in ("agents", "minibench", "evaluator", "testkit", "tools", "benchmarks")
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


# agents/'s parts: each folder (cruise/, peers/, stages/, runtime/, engines/) and each top-level
# module (config.py, profiles.py, factory.py, ...). No two of them import each other, directly or
# through others: each part's imports run one way, down to the parts below it.
def agents_part(module: str) -> str:
    """The part of agents/ a module belongs to: agents.<folder>, or the top-level module itself."""
    return ".".join(module.split(".")[:2])


def agents_part_graph(root: Path) -> dict[str, set[str]]:
    """Part -> the other parts its modules import (every import counts, those inside functions too)."""
    graph = import_graph(root)
    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if below(module, "agents"):
            part = agents_part(module)
            parts.setdefault(part, set()).update(
                agents_part(t) for t in targets if below(t, "agents") and agents_part(t) != part)
    return parts


def test_no_two_parts_of_agents_import_each_other():
    graph = agents_part_graph(REPO_ROOT)
    assert {"agents.cruise", "agents.peers", "agents.stages", "agents.runtime", "agents.engines",
            "agents.config"} <= set(graph)
    assert import_cycles(graph) == []


def copy_of_agents(root: Path) -> Path:
    """The project's agents/ package (its Python files), copied under `root`."""
    for path in (REPO_ROOT / "agents").rglob("*.py"):
        target = root / path.relative_to(REPO_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    return root


@pytest.mark.parametrize("module, planted, cycle", [
    # the runtime reading the configuration's groups, lazily: runtime -> config -> runtime
    ("runtime/cost_priors.py", "def groups():\n    from agents.config import GROUPS\n",
     ["agents.config", "agents.runtime"]),
    # an engine reading the run's configuration: engines -> config -> engines (and all that
    # lies between them)
    ("engines/served.py", "from agents.config import CruiseConfig\n", ["agents.config", "agents.engines"]),
    # through a third part: the profiles reading a provider's URL (profiles -> engines ->
    # profiles), and the registry of engines reading the assembly (engines -> factory -> config -> engines)
    ("profiles.py", "from agents.engines.hosted_providers import OPENAI\n", ["agents.engines", "agents.profiles"]),
    ("engines/registry.py", "def f():\n    import agents.factory\n", ["agents.config", "agents.engines", "agents.factory"]),
])
def test_the_part_check_fails_on_an_import_planted_back_up(tmp_path, module, planted, cycle):
    root = copy_of_agents(tmp_path)
    assert import_cycles(agents_part_graph(root)) == []
    path = root / "agents" / module
    path.write_text(path.read_text(encoding="utf-8") + planted, encoding="utf-8")
    cycles = import_cycles(agents_part_graph(root))
    assert len(cycles) == 1 and set(cycle) <= set(cycles[0]), cycles


# Each system's own package; what they share lives in agents/runtime and agents/stages.
SYSTEM_PACKAGES = ("agents.cruise", "agents.peers.qa_dragon", "agents.peers.sam_rag", "agents.agentic")
SHARED_PACKAGES = ("agents.runtime", "agents.stages")


def imports_between_systems(root: Path) -> list[str]:
    """Imports from one system's package into another's, and from the shared runtime and stages
    into any system's."""
    out = []
    for package in (*SYSTEM_PACKAGES, *SHARED_PACKAGES):
        folder = root / package.replace(".", "/")
        for path in sorted(folder.rglob("*.py")) if folder.is_dir() else []:
            module = module_name(root, path)
            for line, name in imported_names(path, module):
                for other in SYSTEM_PACKAGES:
                    if other != package and below(name, other):
                        out.append(f"{path.relative_to(root)}:{line}: {module} imports {name}")
    return out


def test_the_systems_packages_import_only_the_shared_runtime_and_stages(tmp_path):
    assert imports_between_systems(REPO_ROOT) == []
    for package in ("agents/cruise", "agents/peers/qa_dragon", "agents/stages"):
        (tmp_path / package).mkdir(parents=True)
    (tmp_path / "agents" / "peers" / "qa_dragon" / "chain.py").write_text(
        "from agents.cruise.chain import start_batch\nfrom agents.stages.s2b_crop import crop_batch\n")
    (tmp_path / "agents" / "stages" / "s3_retrieve.py").write_text("def f():\n    from agents.peers.qa_dragon import rerank\n")
    (tmp_path / "agents" / "cruise" / "trace_view.py").write_text("from agents.peers.qa_dragon import trace\n")
    assert imports_between_systems(tmp_path) == [
        "agents/cruise/trace_view.py:1: agents.cruise.trace_view imports agents.peers.qa_dragon.trace",
        "agents/peers/qa_dragon/chain.py:1: agents.peers.qa_dragon.chain imports agents.cruise.chain.start_batch",
        "agents/stages/s3_retrieve.py:2: agents.stages.s3_retrieve imports agents.peers.qa_dragon.rerank",
    ]


# Which system runs is asked of the registry (agents/runtime/system.py) only: a comparison of a
# system's name anywhere else, in code or in a template, is a branch the System record should hold.
REGISTRY = "agents/runtime/system.py"
SYSTEM_COMPARISON = re.compile(r"""\bsystem\b["')\]]*\s*[!=]=|[!=]=\s*[\w.]*\bsystem\b""")


def system_comparisons(root: Path) -> list[str]:
    out = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or entry.name in ("outputs", "tests") or entry.is_symlink():
            continue
        paths = [entry] if entry.is_file() else sorted(p for p in entry.rglob("*") if p.is_file())
        for path in paths:
            relative = path.relative_to(root)
            # a package's own tests (examples/*/tests/) may name the system they test
            if path.suffix not in (".py", ".j2", ".html") or relative.as_posix() == REGISTRY or "tests" in relative.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if SYSTEM_COMPARISON.search(line):
                    out.append(f"{path.relative_to(root)}:{number}")
    return out


def test_no_system_name_is_compared_outside_the_registry(tmp_path):
    assert system_comparisons(REPO_ROOT) == []
    (tmp_path / "agents" / "cruise").mkdir(parents=True)
    (tmp_path / "agents" / "config.py").write_text("if cfg.system != 'cruise':\n    pass\nsystem_prompt = 1\n")
    (tmp_path / "agents" / "cruise" / "turn.html.j2").write_text('{% if tr.get("system") == "qa_dragon" %}x{% endif %}\n')
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "compare.py").write_text("keep = 'sam_rag' == run.system\n")
    (tmp_path / "examples" / "mine" / "tests").mkdir(parents=True)
    (tmp_path / "examples" / "mine" / "tests" / "test_mine.py").write_text("assert trace['system'] == 'mine'\n")
    assert system_comparisons(tmp_path) == ["agents/config.py:1", "agents/cruise/turn.html.j2:1", "tools/compare.py:1"]
