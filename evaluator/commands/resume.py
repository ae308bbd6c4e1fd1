"""Whether a resumed run is the same system as the run it continues: the fingerprint this command
would run (harness/fingerprint.py), what differs from the one recorded, and a refusal unless
--force, which the record then keeps (`forced_resumes`).
"""
from __future__ import annotations

import datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from evaluator.commands.result import EvaluationRefused
from evaluator.harness.fingerprint import differences, system_fingerprint
from evaluator.harness.resolved import ResolvedRun
from evaluator.harness.run_record import RunRecord
from evaluator.harness.runner import ANSWERS
from evaluator.settings import EvaluationSettings


def current_fingerprint(settings: EvaluationSettings, run: ResolvedRun) -> dict:
    """The system this command would run."""
    calibration = settings.calibration
    try:
        fingerprint = system_fingerprint(run, settings.preset,
                                         calibration=str(Path(calibration).resolve()) if calibration else None)
    except OSError as exc:
        raise EvaluationRefused(f"cannot read {exc.filename}: {exc.strerror}") from None
    if settings.suppress_image_search_api:  # only then: earlier runs' fingerprints lack the key
        fingerprint["image_search"] = False
    if settings.oracle:  # an oracle run is another system (only then, as above)
        fingerprint["oracle"] = settings.oracle
    return fingerprint


def resume_differences(output_dir: Path, earlier: RunRecord | None, fingerprint: dict) -> list[str]:
    """What differs between the system of the run in `output_dir` and this one."""
    if not (output_dir / ANSWERS).exists():
        return []  # nothing answered yet: nothing to mix
    if earlier is None or earlier.fingerprint is None:
        return ["the earlier run recorded no system fingerprint (it predates them)"]
    return differences(earlier.fingerprint, fingerprint)


def refuse_mixed_resume(output_dir: Path, changed: list[str]) -> None:
    lines = "\n".join(f"  {line}" for line in changed)
    raise EvaluationRefused(
        f"cannot resume {output_dir}: the earlier run used another system:\n{lines}\n"
        "Its saved answers and this system's would be scored as one run. Use a new --output-dir, "
        "or pass --force to resume anyway (run_summary.json then records it).")


def resume_or_refuse(settings: EvaluationSettings, output_dir: Path, earlier: RunRecord | None, fingerprint: dict,
                     console: Console) -> list[dict]:
    """The run's forced resumes: the earlier ones, and this one where it resumes another system
    with --force (without it, such a resume is refused)."""
    changed = resume_differences(output_dir, earlier, fingerprint) if settings.resume else []
    if changed and not settings.force:
        refuse_mixed_resume(output_dir, changed)
    forced_resumes = list(earlier.forced_resumes if earlier else [])
    if changed:
        forced_resumes.append({"at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                               "differences": changed})
        console.print("[bold yellow]resuming with --force from another system:[/bold yellow] " + escape("; ".join(changed)))
    return forced_resumes
