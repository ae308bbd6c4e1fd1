"""The profiles and their settings, on the command line: a thin shell over agents/config/.

    python -m agents.config_cli list            # the profiles and the model stacks
    python -m agents.config_cli show cpu        # a profile's resolved settings, by group
    python -m agents.config_cli diff cpu l40s   # only the fields where two profiles differ
    python -m agents.config_cli priors          # the table of CRUISE's stage cost priors in docs/engines.md
"""
from __future__ import annotations

import dataclasses
import json
import sys

from agents.config.cruise_config import own_field_names
from agents.config.fields import FIELD_GROUPS
from agents.config.loading import default_config, load_config
from agents.profiles import DEFAULT_INDICES, PROFILES, PUBLISHED_INDICES, get_profile
from agents.runtime.cost_priors import priors_table
from agents.runtime.system import system_named
from agents.stacks import STACKS


def profile_record(profile: str, stack: str | None = None) -> dict:
    """Everything a profile sets, flattened: the agent's resolved settings, then the search
    pipeline (its indices resolved: the published pair a run without `--indices` searches where
    the profile names none of its own), the default dataset and the GPUs per worker."""
    machine = get_profile(profile)
    record = load_config(profile, stack=stack).flat()
    search = dataclasses.asdict(machine.search)
    if search["image_index"] is None:
        search["image_index"], search["web_index"] = PUBLISHED_INDICES[DEFAULT_INDICES]
    record.update({f"search.{k}": v for k, v in search.items()})
    record["dataset"] = machine.dataset
    record["gpus_per_worker"] = machine.gpus_per_worker
    return record


def search_notes(profile: str) -> dict[str, str]:
    """What `show` says beside the search fields whose value depends on a flag or means "none"."""
    spec = get_profile(profile).search
    notes = {"search.web_contents": "read only with --web-contents (bare: this id); without it, snippets only"}
    if spec.image_index is None:
        for position, kind in enumerate(("image_index", "web_index")):
            others = "; ".join(f"--indices {name}: {pair[position]}" for name, pair in PUBLISHED_INDICES.items()
                               if name != DEFAULT_INDICES)
            notes[f"search.{kind}"] = f"--indices {DEFAULT_INDICES} (the default); {others}"
    else:
        notes["search.image_index"] = notes["search.web_index"] = "the profile's own; --indices does not change it"
    if spec.provider is None:
        notes["search.provider"] = "none: every model and index is a Hugging Face id (python -m tools.fetch)"
    return notes


def _shown(value) -> str:
    return json.dumps(value) if isinstance(value, (dict, list, tuple)) else str(value)


def show(profile: str) -> str:
    machine = get_profile(profile)
    lines = [f"# {machine.name}: {machine.description}",
             f"# model stack {machine.stack}: {STACKS[machine.stack].description}"]
    notes = search_notes(profile)
    record = profile_record(profile)
    # the running system's own settings under its name (the configuration's own fields are fixed)
    own = {name: record["system"] for name in own_field_names(system_named(record["system"]).settings)}
    group = None
    for key, value in record.items():
        heading = FIELD_GROUPS.get(key) or own.get(key) or ("the machine" if group else None)  # the records come first
        if heading != group:
            group = heading
            lines.append(f"# {group}")
        lines.append(f"{key} = {_shown(value)}" + (f"  # {notes[key]}" if key in notes else ""))
    return "\n".join(lines)


def diff(a: str, b: str) -> str:
    left, right = profile_record(a), profile_record(b)
    keys = [k for k in left if left[k] != right.get(k)] + [k for k in right if k not in left]
    width = max([len(k) for k in keys] + [5])
    lines = [f"{'field':<{width}}  {a}  ->  {b}"]
    lines += [f"{k:<{width}}  {_shown(left.get(k))}  ->  {_shown(right.get(k))}" for k in keys]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m agents.config_cli", description="Profiles and their settings.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the profiles and model stacks")
    show_parser = sub.add_parser("show", help="a profile's resolved settings")
    show_parser.add_argument("profile", choices=sorted(PROFILES))
    diff_parser = sub.add_parser("diff", help="the fields where two profiles differ")
    diff_parser.add_argument("a", choices=sorted(PROFILES))
    diff_parser.add_argument("b", choices=sorted(PROFILES))
    priors_parser = sub.add_parser("priors", help="the l40s stage cost priors of a system's stages (docs/engines.md)")
    priors_parser.add_argument("system", nargs="?", default="cruise")
    args = parser.parse_args(argv)
    if args.command == "show":
        print(show(args.profile))
    elif args.command == "diff":
        print(diff(args.a, args.b))
    elif args.command == "priors":
        print(priors_table(system_named(args.system), default_config(system=args.system)))
    else:
        for machine in PROFILES.values():
            print(f"profile {machine.name}: {machine.description} (stack {machine.stack})")
        for stack in STACKS.values():
            print(f"stack {stack.name}: {stack.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
