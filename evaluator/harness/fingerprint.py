"""What decides an agent's answers, recorded so that `--resume` continues the same system.

`system_fingerprint(...)` is computed from the command line and the files on disk, before any
model loads: the agent spec, profile, preset, the search pipeline the evaluator builds (spec,
web on/off, its models), the search indices it opens (ids, and the snapshot commit the Hugging
Face cache holds where one is there: `indices`), the prompt files' hashes, the calibration file's hash and,
for a CruiseAgent, every `CruiseConfig` field after preset and overrides (`load_config` reads the
same CRUISE_* environment the agent will read). Another agent's config is unknown to us, so its
fingerprint holds the CRUISE_<FIELD> settings it is given instead.

`differences(earlier, now)` names what changed, one line per field, e.g. `preset: full ->
vision_only`, `config.tau_ret: 0.5 -> 0.4`, `prompt verify.txt changed`; other indices are one
line, `search indices: A, B -> C, D` (a snapshot revision counts only when both runs know it: a
run fingerprinted before its indices were downloaded is not another system for that).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

from agents.config import field_names, load_config
from agents.cruise.prompts import prompts_dir
from evaluator.harness.models import agent_loads_profile_models

# Config fields that say where a served model runs and how it is reached, not which model it is:
# shards pointed at different replicas of one model stay one system (`merge`), and a resumed run
# may reach its servers at new addresses.
WHERE_NOT_WHAT = ("vlm_base_url", "router_base_url", "reranker_base_url", "served_max_in_flight", "served_timeout_s")

# Fingerprint keys in the order differences are listed.
KEYS = ("agent", "profile", "preset", "search", "web_search", "search_models", "indices", "config", "settings",
        "prompts", "calibration")
INDEX_KINDS = ("image", "web", "contents")  # contents: the full-page database (--web-contents)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def prompt_hashes(folder: Path | None = None) -> dict[str, str]:
    """prompts/*.txt file name -> sha256 of its bytes (the folder the agent reads). The judge's
    prompts (judge_*.txt) decide verdicts, not answers: --rejudge is for those."""
    folder = Path(folder or prompts_dir())
    # rglob: the domain notes (prompts/domains/*.txt) change answers too
    return {p.relative_to(folder).as_posix(): file_sha256(p) for p in sorted(folder.rglob("*.txt"))
            if not p.name.startswith("judge_")}


def config_settings() -> dict[str, str]:
    """The CRUISE_<FIELD> values in the environment (what `--set` wrote, or the shell exported)."""
    fields = field_names() - {"profile", "preset"}
    return {name: os.environ[f"CRUISE_{name.upper()}"] for name in sorted(fields)
            if f"CRUISE_{name.upper()}" in os.environ}


def _plain(value):
    """JSON-shaped (tuples -> lists), so a fingerprint compares equal to itself read back."""
    return json.loads(json.dumps(value, default=str))


def system_fingerprint(agent_spec: str, profile: str, preset: str | None, *, search: str, web: bool,
                       calibration: str | None = None, web_contents: str | None = None) -> dict:
    """Call after the CRUISE_* environment is set (profile, preset, --set)."""
    fingerprint = {"agent": agent_spec, "profile": profile, "preset": preset or "full", "search": search,
                   "web_search": web, "prompts": prompt_hashes(),
                   "calibration": {"file": str(calibration), "sha256": file_sha256(calibration)} if calibration else None}
    if search != "none":  # a MODULE:FUNC factory is handed the same config, indices included
        fingerprint["indices"] = search_indices(profile, web, web_contents)
    if search == "default":
        from evaluator.harness.search import search_config

        sc = search_config(profile, web_contents=web_contents if web else None)
        fingerprint["search_models"] = {"image_model": sc.image_model, "text_model": sc.text_model,
                                        "web_contents": sc.web_contents}
    if agent_loads_profile_models(agent_spec):  # a CruiseAgent: its config is ours to compute
        config = dataclasses.asdict(load_config(profile, preset))
        fingerprint["config"] = {k: v for k, v in config.items() if k not in ("profile", "preset", *WHERE_NOT_WHAT)}
    else:
        fingerprint["settings"] = config_settings()
    return _plain(fingerprint)


def search_indices(profile: str, web: bool, web_contents: str | None = None) -> dict:
    """{"image": {"id", "revision"}, "web": ... (Task 1: None), "contents": the full-page
    database (None without --web-contents)} that `profile` searches (search_config, so --indices /
    CRAG_MM_INDICES decide); revision None where not cached yet."""
    from evaluator.harness.search import index_revision, search_config

    sc = search_config(profile, web_contents=web_contents if web else None)
    ids = {"image": sc.image_index, "web": sc.web_index if web else None, "contents": sc.web_contents}
    return {kind: {"id": repo, "revision": index_revision(repo)} if repo else None for kind, repo in ids.items()}


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
        if key == "search_models":  # the indices are compared above, from either place
            old = {k: v for k, v in (old or {}).items() if not k.endswith("_index")} if old is not None else None
            new = {k: v for k, v in (new or {}).items() if not k.endswith("_index")} if new is not None else None
        if old == new:
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
            for name in sorted(set(old) | set(new)):
                if old.get(name) != new.get(name):
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
