"""One evaluation over many workers on Ray: `local_evaluation.py ... --workers N [--ray ADDRESS]`.

The driver first resolves the run once (evaluator/harness/resolved.py): a flag the run cannot
take stops it before Ray starts, and every shard is told the profile it resolved to. The split is
cut into N shards (`--shard I/N`: conversation index % N == I). Each shard is one Ray
task that runs this same `local_evaluation.py` in a subprocess, with the judge off, into
`OUTPUT_DIR/shards/I-of-N`, generation only (`--generate-only`: a shard neither scores nor
reports). Ray places the tasks, one CPU each and `--gpus-per-worker` GPUs each (default: the run's
profile's, 1 for l40s, whose engines load in the shard, 0 for cpu and served), and sets each task's
CUDA_VISIBLE_DEVICES; it retries a task whose worker died or whose run failed
(`--worker-retries`). A retried shard runs with `--resume`, so the turns it had saved are kept and
only the rest are asked again; a shard's process dies with the Ray worker that started it, so a
retry never races an orphan. When every shard is done, the driver merges the shards into
OUTPUT_DIR and judges, scores and reports once, as `local_evaluation.py merge` does; the same
command run again after the driver stopped resumes the shards, and a merge already written is
judged and scored again rather than merged twice. One progress bar counts the turns saved by all
shards.

Without `--ray` a local Ray instance with N CPUs is started (one machine); `--ray auto` or
`--ray HOST:PORT` joins a running cluster, whose nodes must see this repository and the output
folder at the same paths (a shared filesystem). Ray is an optional dependency
(requirements-scale.txt); it is imported only here.
"""
from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.settings import EvaluationSettings, MergeSettings, command_line, scoring_of

if TYPE_CHECKING:
    from evaluator.commands import EvaluationResult
    from evaluator.harness.resolved import ResolvedRun

REPO_ROOT = Path(__file__).resolve().parents[1]
ENTRY = REPO_ROOT / "local_evaluation.py"
# Options of the run that the driver handles itself: a shard gets its own values of these.
DRIVER_OPTIONS = ("workers", "ray", "worker_retries", "gpus_per_worker", "output_dir", "shard", "resume", "force",
                  "rejudge", "generate_only")
# The options of the judge, the scores and the report (ScoringSettings) go to the merge; a shard
# runs without a judge, quietly, generation only.
SHARD_SCORING = {"eval_model": "None", "no_progress": True, "display_conversations": 0}
# Environment a shard on another node needs from the driver's (a local Ray gets it all): the Hugging
# Face caches and switches, and the keys and cache paths the project reads (CRUISE_ENGINE_API_KEY,
# CRUISE_CACHE); every setting of the run travels on the shard's command line.
FORWARDED_ENV_PREFIXES = ("CRUISE_", "HF_", "TRANSFORMERS_", "PYTHONPATH")
# Device lists Ray sets per task from the GPUs it granted: the driver's own must not override them,
# or every shard would load onto the driver's devices.
RAY_SET_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def shard_dirs(output_dir: Path, n: int) -> list[Path]:
    return [output_dir / "shards" / f"{i}-of-{n}" for i in range(n)]


def shard_settings(settings: EvaluationSettings, i: int, n: int, folder: Path) -> EvaluationSettings:
    """The shard's own run: the run's options without the driver's and the judge's, generation only."""
    blank = EvaluationSettings()
    reset = {name: getattr(blank, name) for name in (*DRIVER_OPTIONS, *scoring_of(blank))}
    return dataclasses.replace(settings, **{**reset, **SHARD_SCORING, "shard": f"{i}/{n}", "output_dir": str(folder),
                                            "generate_only": True})


def shard_command(settings: EvaluationSettings, i: int, n: int, folder: Path) -> list[str]:
    """The shard's local_evaluation.py command (a process of its own: it holds its GPU, and dies
    with the Ray worker that started it)."""
    return [sys.executable, str(ENTRY), *command_line(shard_settings(settings, i, n, folder))]


def die_with_parent() -> None:
    """In the shard's process, before it runs: the kernel sends it SIGKILL when the Ray worker that
    started it dies (Linux's PR_SET_PDEATHSIG), so a lost worker leaves no orphan holding its GPU
    or writing into the folder its retry resumes. Elsewhere a no-op."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (AttributeError, OSError):
        pass


def shard_env(driver_env: dict[str, str], remote: bool) -> dict[str, str]:
    """What a shard gets of the driver's environment: all of it on a local Ray, the project's own
    variables on a cluster; never the device lists Ray sets for the task."""
    keep = (lambda k: k.startswith(FORWARDED_ENV_PREFIXES)) if remote else (lambda k: True)
    env = {k: v for k, v in driver_env.items() if keep(k) and k not in RAY_SET_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def gpus_per_worker(requested: float | None, run: ResolvedRun) -> float:
    """--gpus-per-worker, else what the run's profile gives a shard (agents/profiles.py: 1 where
    its engines load in the shard's process, 0 for a client of model servers or the CPU)."""
    if requested is not None:
        if requested < 0:
            raise ValueError(f"--gpus-per-worker {requested}: give 0 or more")
        return requested
    return run.gpus_per_worker


def shards_of(settings: EvaluationSettings) -> tuple[EvaluationSettings, float]:
    """The run resolved once, by the driver (evaluator/harness/resolved.py): a flag it cannot take
    is refused here, before any shard starts, and every shard is told the profile it resolved to
    (on a cluster each node would otherwise work out "auto" on its own card). Returns the shards'
    run and the GPUs each asks Ray for."""
    from evaluator.harness.resolved import resolve_settings

    run = resolve_settings(settings)
    return dataclasses.replace(settings, profile=run.profile), gpus_per_worker(settings.gpus_per_worker, run)


def run_shard(command: list[str], folder: str, env: dict[str, str]) -> str:
    """A Ray task's body: the shard's run in a subprocess (its output in the shard's log); resumed
    where an earlier attempt saved answers. A failed run raises, so that Ray retries it."""
    folder_path = Path(folder)
    folder_path.mkdir(parents=True, exist_ok=True)
    if (folder_path / "answers.jsonl").exists():
        command = [*command, "--resume"]
    with open(folder_path / "worker.log", "a") as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        proc = subprocess.run(command, cwd=REPO_ROOT, env={**os.environ, **env}, stdout=log,
                              stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    if proc.returncode != 0:
        raise RuntimeError(f"shard {folder} exited with {proc.returncode} (see {folder}/worker.log)")
    return folder


def saved_turns(folder: Path) -> int:
    """Distinct turns saved in a shard's answers (a resumed shard may have written one twice)."""
    ids = set()
    try:
        with open(folder / "answers.jsonl") as f:
            for line in f:
                try:
                    ids.add(json.loads(line)["interaction_id"])
                except (ValueError, KeyError, TypeError):
                    pass  # a line cut by a kill: resume rewrites that turn
    except OSError:
        pass
    return len(ids)


def expected_turns(folders: list[Path]) -> int | None:
    """The turns all shards will answer, once every shard has written its run_config.json."""
    from evaluator.harness.run_record import read_run_record

    total = 0
    for folder in folders:
        try:
            record = read_run_record(folder)
        except (OSError, ValueError):
            return None
        if record is None or record.expected_turns is None:  # not written yet
            return None
        total += int(record.expected_turns)
    return total


def import_ray():
    try:
        import ray
    except ImportError:
        from evaluator.commands import EvaluationRefused

        raise EvaluationRefused("--workers/--ray need Ray: pip install -r requirements-scale.txt") from None
    return ray


def run_on_ray(settings: EvaluationSettings, console) -> EvaluationResult:
    """Every shard as a Ray task, then one merge, judge, score and report into settings.output_dir."""
    from evaluator.commands import EvaluationRefused, default_output_dir, run_merge

    n = settings.workers
    if n < 1:
        raise EvaluationRefused(f"--workers {n}: give 1 or more")
    if settings.shard or settings.rejudge or settings.generate_only:
        raise EvaluationRefused("--workers runs every shard itself and scores once: drop --shard/--rejudge/--generate-only")
    try:
        settings, gpus = shards_of(settings)
    except ValueError as exc:
        raise EvaluationRefused(str(exc)) from None
    ray = import_ray()
    output_dir = Path(settings.output_dir) if settings.output_dir else default_output_dir()
    folders = shard_dirs(output_dir, n)
    if settings.ray:
        ray.init(address=settings.ray, include_dashboard=False, log_to_driver=False)
    else:  # Ray counts this machine's GPUs itself
        ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False)
    try:
        available = ray.cluster_resources().get("GPU", 0)
        if gpus > available:
            message = (f"each worker asks for {gpus:g} GPU (--gpus-per-worker; 1 by default on the l40s profile) "
                       f"but the Ray cluster has {available:g}: pass --gpus-per-worker 0 where the models are "
                       "served or run on CPU")
            if not settings.ray:  # a local Ray will never grow: the tasks would wait forever
                raise EvaluationRefused(message)
            print(f"warning: {message}; the tasks wait for GPU nodes to join", file=sys.stderr)
        task = ray.remote(run_shard).options(num_cpus=1, num_gpus=gpus, max_retries=settings.worker_retries,
                                             retry_exceptions=True)
        env = shard_env(dict(os.environ), remote=bool(settings.ray))
        pending = [task.remote(shard_command(settings, i, n, folder), str(folder), env)
                   for i, folder in enumerate(folders)]
        wait_with_progress(ray, pending, folders, quiet=settings.no_progress)
    finally:
        ray.shutdown()
    merged = MergeSettings(dirs=tuple(map(str, folders)), output_dir=str(output_dir), **scoring_of(settings))
    return run_merge(merged, console)


def wait_with_progress(ray, pending: list, folders: list[Path], *, quiet: bool) -> None:
    """Block until every task is done (a task that failed for good raises here), one bar for all."""
    from tqdm import tqdm

    bar = None if quiet else tqdm(desc="turns (all workers)", unit="turn")
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=len(pending), timeout=1.0)
            for ref in done:
                ray.get(ref)
            if bar is not None:
                bar.total = expected_turns(folders)
                bar.n = sum(saved_turns(f) for f in folders)
                bar.refresh()
            if pending:
                time.sleep(0.5)
    finally:
        if bar is not None:
            bar.close()
