"""The one download route, as the command a message names: `python -m tools.fetch` with the flags
that fetch a given model, dataset, search index or full-content database.

Every message that finds one of them missing (the evaluator's pre-load check, the index check, the
pre-flight) names this command, so there is one way in: tools.fetch skips the files nothing
loads (the 11B VLM's `original/` checkpoints alone are ~21 GB), checks the disk first and resumes.
Where a run is known, the command is the run's own (evaluator/harness/resolved.py
`ResolvedRun.fetch_command`: tools.fetch with the run's flags, resolved as the run resolves them);
`fetch_command` here is for an item found missing on its own (a dataset, an index), with no run
at hand.
"""
from __future__ import annotations

from agents.profiles import DEFAULT_INDICES, PROFILES, PUBLISHED_INDICES, default_dataset

TASKS = ("single-turn", "multi-turn")
FETCH_COMMAND = "python -m tools.fetch"


def hub_profiles() -> list[str]:
    """The profiles whose runs load from the hub (a profile with a search provider builds its own)."""
    return [name for name, profile in PROFILES.items() if profile.search.provider is None]


def fetch_command(profile: str | None, repo_id: str, kind: str | None = None) -> str | None:
    """The command that fetches `repo_id` into the cache. The flags follow the item: `--indices`
    for the index pair that is not the default, `--web-contents` for a full-content database
    (`kind` "contents", or a profile's own id), `--task` for one task's dataset. `profile` None or
    one that loads nothing from the hub: the first hub profile (l40s). None for a dataset
    tools.fetch does not fetch (one of one's own)."""
    hubs = hub_profiles()
    profile = profile if profile in hubs else hubs[0]
    words = [FETCH_COMMAND, "--profile", profile]
    pairs = [name for name, pair in PUBLISHED_INDICES.items() if repo_id in pair]
    tasks = [task for task in TASKS if default_dataset(profile, task) == repo_id]
    contents = {PROFILES[name].search.web_contents for name in hubs}
    if pairs:
        if pairs[0] != DEFAULT_INDICES:  # public-test is fetched unless told otherwise
            words += ["--indices", pairs[0]]
    elif kind == "contents" or repo_id in contents:
        words += ["--web-contents"] + ([] if repo_id == PROFILES[profile].search.web_contents else [repo_id])
    elif tasks:
        words += ["--task", tasks[0]]
    else:
        return None
    return " ".join(words)
