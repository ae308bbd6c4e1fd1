"""The one download route, as the command a message names: `python -m tools.fetch` with the flags
that fetch a given model, dataset, search index or full-content database.

Every message that finds one of them missing (the evaluator's pre-load check, the index check, the
pre-flight) names this command, so there is one way in: tools.fetch skips the files nothing
loads (the 11B VLM's `original/` checkpoints alone are ~21 GB), checks the disk first and resumes.
"""
from __future__ import annotations

import os

# the profiles whose runs load from the hub (cpu builds everything locally)
HUB_PROFILES = ("l40s", "served")
# the evaluator's default dataset of each task on a hub profile (evaluator.harness.commands.default_dataset)
HUB_DATASETS = {task: f"crag-mm-2025/crag-mm-{task}-public" for task in ("single-turn", "multi-turn")}


def fetch_command(profile: str | None = None, repo_id: str | None = None, kind: str | None = None) -> str | None:
    """The command that fetches `repo_id` into the cache (None: whatever the profile's run loads,
    its models included). The flags follow the item: `--indices` for the other index pair,
    `--web-contents` for a full-content database (`kind` "contents", or a profile's own id),
    `--task` for one task's dataset. `profile` None: the run's (CRUISE_PROFILE) where it loads from
    the hub, else l40s. None for a dataset tools.fetch does not fetch (one of one's own)."""
    from evaluator.harness.search import DEFAULT_INDICES, INDEX_SETS, INDICES_ENV, WEB_CONTENTS

    profile = profile or os.environ.get("CRUISE_PROFILE")
    if profile not in HUB_PROFILES:
        profile = HUB_PROFILES[0]
    words = ["python -m tools.fetch", "--profile", profile]
    if repo_id is None:
        return " ".join(words)
    pairs = [name for name, pair in INDEX_SETS.items() if repo_id in pair]
    tasks = [task for task, dataset in HUB_DATASETS.items() if dataset == repo_id]
    if pairs:
        # public-test is fetched unless told otherwise; say it when the environment tells otherwise
        if pairs[0] != DEFAULT_INDICES or os.environ.get(INDICES_ENV, DEFAULT_INDICES) != DEFAULT_INDICES:
            words += ["--indices", pairs[0]]
    elif kind == "contents" or repo_id in WEB_CONTENTS.values():
        words += ["--web-contents"] + ([] if repo_id == WEB_CONTENTS.get(profile) else [repo_id])
    elif tasks:
        words += ["--task", tasks[0]]
    else:
        return None
    return " ".join(words)
