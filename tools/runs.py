"""What the tools that evaluate many settings share (tools/ablation.py, tools/compare_systems.py,
tools/oracle_headroom.py): the flags that say which agent runs where, a system as a user names it
(a preset, or a system by name with the preset beside it: `Entry`), and one evaluation run into a
folder of its own.

A run is `evaluator.evaluate` in this process. Where the run's profile, as the run resolves it
(evaluator/harness/resolved.py; "auto" worked out on this machine), loads its engines onto this
process's GPU (agents/profiles.py `gpus_per_worker`), each run is a `local_evaluation.py`
process instead: vLLM gives its GPU memory back only when its process ends.
"""
from __future__ import annotations

import argparse
import dataclasses
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from agents.config.cruise_config import CruiseConfig
from agents.config.presets import PRESETS, preset_settings
from agents.profiles import PROFILES, REPO_ROOT
from agents.runtime.system import system_named
from evaluator import EvaluationRefused, EvaluationSettings, evaluate
from evaluator.settings import command_line


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags every run of the tool shares, as local_evaluation.py names them."""
    parser.add_argument("--num-conversations", type=int, default=None,
                        help="evaluate exactly the first N conversations of each dataset (a quick run)")
    parser.add_argument("--profile", default="cpu", choices=["auto", *sorted(PROFILES)])
    parser.add_argument("--agent", default="agents.user_config:UserAgent", help="MODULE:CLASS, as local_evaluation.py")
    parser.add_argument("--search", default="default", help="as local_evaluation.py: default | none | MODULE:FUNC")
    parser.add_argument("--dataset-root", type=Path, default=None,
                        help="a folder with single-turn/ and multi-turn/ datasets (default: the profile's)")


@dataclass(frozen=True)
class Entry:
    """One system of the comparison, as `--systems` names it."""
    key: str  # as given: its run folders and calibration file are named by it
    system: str  # the system that runs, by its name (MODULE:NAME as given)
    preset: str
    settings: tuple[str, ...] = ()  # --set strings: `system=NAME` for a system given by name

    @property
    def label(self) -> str:
        return f"{self.system} ({self.preset})"

    @property
    def by_preset(self) -> bool:
        return not self.settings


def entry(name: str) -> Entry:
    """A `--systems` item: a preset, or a system by name with an optional `@PRESET`; an unknown
    name is refused in one line with the closest presets and systems (registered and installed)."""
    system, at, preset = name.partition("@")
    if system in PRESETS and not at:
        return Entry(name, preset_settings(name).get("system", CruiseConfig.system), name)
    try:
        system_named(system)
    except ValueError as exc:
        raise SystemExit(f"--systems {name}: not a preset ({', '.join(sorted(PRESETS))}) and {exc}") from None
    preset = preset or "full"
    try:
        preset_settings(preset)
    except ValueError as exc:
        raise SystemExit(f"--systems {name}: {exc}") from None
    return Entry(name, system, preset, (f"system={system}",))


def folder_name(key: str) -> str:
    """A run folder's name for an entry (MODULE:NAME's colon made an underscore)."""
    return "".join(c if c.isalnum() or c in "-_@+." else "_" for c in key)


def run_settings(args, dataset_type: str, preset: str, output_dir: Path, **options) -> EvaluationSettings:
    """One run of the tool's agent (args: the flags of `add_run_flags`), quiet, into `output_dir`."""
    if args.dataset_root:
        options["dataset"] = str(Path(args.dataset_root) / dataset_type)
    if args.num_conversations is not None:
        options.update(num_conversations=args.num_conversations, exact_conversations=True)
    return EvaluationSettings(dataset_type=dataset_type, profile=args.profile, preset=preset, agent=args.agent,
                              search=args.search, output_dir=str(output_dir), display_conversations=0,
                              no_progress=True, **options)


def answering_every_turn(profile: str | None, preset: str) -> dict:
    """run_settings' options for a run whose traces calibration will read: every turn answered
    (`skip_decided_turns` off where the preset's system has it; tools.calibrate refuses traces
    without the decided turns' answers)."""
    from agents.config.loading import load_config

    has = load_config(profile or "cpu", preset).has("skip_decided_turns")
    return {"set": ("skip_decided_turns=false",)} if has else {}


def in_own_process(settings: EvaluationSettings) -> bool:
    """Whether the run loads its engines onto this process's GPU (read off the resolved run)."""
    from evaluator.harness.resolved import resolve_settings

    try:
        return bool(resolve_settings(settings).gpus_per_worker)
    except ValueError as exc:
        raise SystemExit(f"{settings.output_dir}: {exc}") from None


def run_once(settings: EvaluationSettings) -> Path:
    """The run, reused when its folder already holds its scores and resumed when it was cut short;
    the command printed first gives the same run by hand."""
    output_dir = Path(settings.output_dir)
    if (output_dir / "scores_dictionary.json").exists() and (output_dir / "run_summary.json").exists():
        print(f"reusing {output_dir}")
        return output_dir
    if (output_dir / "answers.jsonl").exists():
        settings = dataclasses.replace(settings, resume=True)
    command = [sys.executable, str(REPO_ROOT / "local_evaluation.py"), *command_line(settings)]
    print("$ " + shlex.join(command), flush=True)
    if in_own_process(settings):
        subprocess.run(command, cwd=REPO_ROOT, check=True)
        return output_dir
    try:
        result = evaluate(settings)
    except EvaluationRefused as exc:
        raise SystemExit(f"{output_dir}: {exc}") from None
    if result.exit_status:
        raise SystemExit(f"{output_dir}: the evaluation ended with exit status {result.exit_status} "
                         f"(notices: {'; '.join(result.notices)})")
    return output_dir


def calibrate_on(trace_dirs: list[Path], target: Path) -> Path:
    """`python -m tools.calibrate TRACE_DIR ... --output target`, in this process."""
    from tools.calibrate import main

    argv = [*map(str, trace_dirs), "--output", str(target)]
    print("$ python -m tools.calibrate " + shlex.join(argv), flush=True)
    if main(argv):
        raise SystemExit(f"calibration on {', '.join(argv[:-2])} failed")
    return target
