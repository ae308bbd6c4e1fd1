"""What decides an agent's answers, recorded so that `--resume` continues the same system.

`system_fingerprint(run, preset, ...)` is computed from the run as resolved (harness/resolved.py) and the files on
disk, before any model loads: the agent spec, profile, preset, the search pipeline the evaluator
builds (spec, web on/off, its models), the search indices it opens (ids, and the snapshot commit
the Hugging Face cache holds where one is there: `indices`), the calibration file's hash, and
what the agent says decides its answers (`AgentSetup.description`, agents/base_agent.py
`describe`: CruiseAgent gives every config field after profile, preset and --set as "config",
and its prompt files' hashes as "prompts"). A description section named "where" (where a served
model runs and how it is reached, not which model it is) is recorded but not compared: shards
pointed at different replicas of one model stay one system (`merge`), and a resumed run may
reach its servers at new addresses. The command adds the image search switched off
(`image_search`) and the oracle run (`oracle`), each only where set (evaluator/commands/resume.py
`current_fingerprint`): a plain run's folder does not resume as an oracle run, nor the other way.

The judge prompt does not decide answers, but it decides the verdicts a resumed run adds to the
earlier ones: "judge_prompt" holds its identity (official_judge.origin_identity: "this package's
wording", or "official sha256 ..." for `--judge-prompt-from`), so a resume with another prompt is
refused like a resume of another system, and `--force` records it. Where it is absent (a run
from before it) it reads as this package's wording.

`differences(earlier, now)` names what changed, one line per field, e.g. `preset: full ->
vision_only`, `config.tau_ret: 0.5 -> 0.4`, `prompt verify.txt changed`; other indices are one
line, `search indices: A, B -> C, D` (a snapshot revision counts only when both runs know it: a
run fingerprinted before its indices were downloaded is not another system for that).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from evaluator.harness.resolved import ResolvedRun
from evaluator.harness.run_record import RunRecord
from evaluator.scoring.official_judge import OURS

# Fingerprint keys in the order differences are listed ("settings": what runs fingerprinted
# before agents described themselves recorded for an agent that was not CruiseAgent).
KEYS = ("agent", "profile", "preset", "search", "web_search", "image_search", "search_models", "indices", "config",
        "settings", "prompts", "calibration", "oracle", "judge_prompt")
# the run record's fields that say which turns a run covers and how they are scored: a resumed
# run must share them with the run it continues, whatever --force says (selection_refusal); a
# record written before one of them existed reads with what its absence meant (run_record.py)
RESUME_KEYS = ("dataset", "dataset_type", "split", "revision", "num_conversations", "exact_conversations",
               "shard", "rules")
INDEX_KINDS = ("image", "web", "contents")  # contents: the full-page database (--web-contents)
NOT_COMPARED = ("where",)  # description sections recorded for the report only


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _plain(value):
    """JSON-shaped (tuples -> lists), so a fingerprint compares equal to itself read back."""
    return json.loads(json.dumps(value, default=str))


def system_fingerprint(run: ResolvedRun, preset: str | None, *, calibration: str | None = None) -> dict:
    fingerprint = {"agent": run.agent.spec, "profile": run.profile, "preset": preset or "full",
                   "search": run.search_spec, "web_search": run.web,
                   "calibration": {"file": str(calibration), "sha256": file_sha256(calibration)} if calibration else None}
    if run.search is not None:  # a MODULE:FUNC factory is handed the same config, indices included
        fingerprint["indices"] = search_indices(run)
    if run.builds_default_search:
        fingerprint["search_models"] = {"image_model": run.search.image_model, "text_model": run.search.text_model,
                                        "web_contents": run.web_contents}
    fingerprint.update({k: v for k, v in run.agent.description.items() if k not in NOT_COMPARED})
    return _plain(fingerprint)


def search_indices(run: ResolvedRun) -> dict:
    """{"image": {"id", "revision"}, "web": ... (Task 1: None), "contents": the full-page
    database (None without --web-contents)} that the run searches (so --indices decides);
    revision None where not cached yet."""
    from evaluator.search.pipeline import index_revision

    sc = run.search
    ids = {"image": sc.image_index, "web": sc.web_index if run.web else None, "contents": run.web_contents}
    return {kind: {"id": repo, "revision": index_revision(repo, sc.provider)} if repo else None
            for kind, repo in ids.items()}


def _indices(fingerprint: dict) -> dict | None:
    """The indices record; a fingerprint from before it existed kept the ids in search_models."""
    if "indices" in fingerprint:
        return fingerprint["indices"]
    models = fingerprint.get("search_models") or {}
    if "image_index" not in models:
        return None
    return {kind: {"id": models[f"{kind}_index"], "revision": None} if models.get(f"{kind}_index") else None
            for kind in INDEX_KINDS}


def _same_index(old: dict | None, new: dict | None) -> bool:
    if not old or not new:
        return old == new
    if old["id"] != new["id"]:
        return False
    return None in (old.get("revision"), new.get("revision")) or old["revision"] == new["revision"]


def _show_indices(record: dict | None) -> str:
    if record is None:
        return "(not recorded)"
    shown = [f"{r['id']}@{r['revision'][:12]}" if r.get("revision") else r["id"]
             for r in (record.get(kind) for kind in INDEX_KINDS) if r]
    return ", ".join(shown) or "(none)"


def differences(earlier: dict, now: dict) -> list[str]:
    """One line per field that differs between two fingerprints ([] when they are the same)."""
    lines = []
    for key in KEYS:
        old, new = earlier.get(key), now.get(key)
        if key == "indices":
            old, new = _indices(earlier), _indices(now)
            if old is None and new is None:
                continue
            if old is None or new is None or not all(_same_index(old.get(k), new.get(k)) for k in INDEX_KINDS):
                lines.append(f"search indices: {_show_indices(old)} -> {_show_indices(new)}")
            continue
        if key == "judge_prompt":  # a run fingerprinted before this entry was judged in our wording
            old, new = old or OURS, new or OURS
        if key == "search_models":  # the indices are compared above, from either place
            old = {k: v for k, v in (old or {}).items() if not k.endswith("_index")} if old is not None else None
            new = {k: v for k, v in (new or {}).items() if not k.endswith("_index")} if new is not None else None
        if old == new or (key == "settings" and not old and not new):
            continue
        if key == "calibration":
            if (old or {}).get("sha256") != (new or {}).get("sha256"):  # a moved file is the same file
                lines.append(f"calibration: {_calibration(old)} -> {_calibration(new)}")
        elif key == "prompts":
            for name in sorted(set(old or {}) | set(new or {})):
                if name not in (old or {}):
                    lines.append(f"prompt {name} added")
                elif name not in (new or {}):
                    lines.append(f"prompt {name} removed")
                elif old[name] != new[name]:
                    lines.append(f"prompt {name} changed")
        elif isinstance(old, dict) and isinstance(new, dict):
            prefix = "--set " if key == "settings" else f"{key}."
            # A config field only the earlier run recorded is one the agent no longer holds (a run
            # of QA-Dragon recorded CRUISE's switches, off, before each system kept its own
            # settings): it steers nothing now, so it is no difference.
            names = set(new) if key == "config" else set(old) | set(new)
            for name in sorted(names):
                if old.get(name) != new.get(name) and name not in KEYS:  # a key listed above is said once
                    lines.append(f"{prefix}{name}: {_show(old.get(name))} -> {_show(new.get(name))}")
        elif isinstance(old, dict) or isinstance(new, dict):  # recorded on one side only
            lines.append(f"{key}: {_count(old)} -> {_count(new)}")
        else:
            lines.append(f"{key}: {_show(old)} -> {_show(new)}")
    return lines


def _show(value) -> str:
    return "(not set)" if value is None else str(value)


def _count(fields: dict | None) -> str:
    return "(not recorded)" if fields is None else f"{len(fields)} fields"


def _calibration(record: dict | None) -> str:
    return "(none)" if not record else f"{record['file']} (sha256 {record['sha256'][:12]})"


def selection_refusal(output_dir: Path, earlier: RunRecord, now: RunRecord) -> str | None:
    """Why a resume that would cover other turns than the run it continues is refused (None when
    it covers the same ones), naming each flag with its earlier and its new value. --force cannot
    take it: --force keeps the turns and lets another system answer the rest, whereas another
    selection changes the turns themselves: the saved answers would stand for the earlier
    selection's turns, and the run's expected turns, batches and stopping point for the new one."""
    changed = [f"  --{key.replace('_', '-')}: {_show(getattr(earlier, key))} then, {_show(getattr(now, key))} now"
               for key in RESUME_KEYS if getattr(earlier, key) != getattr(now, key)]
    if not changed:
        return None
    return (f"cannot resume {output_dir}: the earlier run covered another selection of turns:\n" + "\n".join(changed)
            + "\n--force does not apply: it lets another system go on over the same turns, while this changes "
            "the turns themselves. Resume with the earlier values, or use a new --output-dir.")
