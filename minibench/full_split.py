"""A synthetic validation split at the official counts, grown from the mini benchmark.

    python -m minibench.full_split [--out .cache/full-split] [--single 1900] [--multi 586] [--form list|dict]

The public validation split has about 1.9k single-turn sessions and about 586 conversations of
2-6 turns. The mini benchmark has 55 and 11. This writes copies of the mini rows, cycled until
those counts are reached, with new session and interaction ids (uuid5 of fixed names, so two
builds write the same ids), the mini rows' images, labels, questions and answers. Multi-turn
conversations are stretched or cut to 2, 3, 4, 5, 6 turns in turn (mean 4), by cycling their own
turns, so the two splits hold about 4.2k turns together.

`--form list` writes turns/answers as lists of dicts in parquet (what `load_dataset` of the mini
folder gives); `--form dict` writes them as dicts of lists with `save_to_disk` (the published
data's `Sequence` features). Both are the official row schema. Nothing here is committed: the
default folder is under the ignored .cache.
"""
from __future__ import annotations

import argparse
import uuid
from pathlib import Path

from agents.profiles import REPO_ROOT, cache_dir

MINI = REPO_ROOT / "data" / "crag-mm-mini"
SPLIT_FILE = "data/validation-00000-of-00001.parquet"
NAMESPACE = uuid.UUID("0d3c55a1-7f0e-4b7e-8f43-51c1f1a2b6de")  # fixed: the ids never change between builds
# The published validation split's sizes (SPEC.md): ~1.9k single-turn sessions, ~586 multi-turn
# conversations of 2-6 turns.
SINGLE_TURN_SESSIONS = 1900
MULTI_TURN_CONVERSATIONS = 586
TURN_COUNTS = (2, 3, 4, 5, 6)
FORMS = ("list", "dict")


def default_out() -> Path:
    return cache_dir() / "full-split"


def read_mini(dataset_type: str):
    import datasets

    return datasets.load_dataset(str(MINI / dataset_type), split="validation")


def copy_rows(source_rows: list[dict], dataset_type: str, count: int, turn_counts: tuple[int, ...] | None) -> list[dict]:
    """`count` rows cycled from `source_rows` with new ids; with `turn_counts`, copy k has
    turn_counts[k % len] turns, taken from its source conversation's turns in a cycle."""
    rows = []
    for k in range(count):
        source = source_rows[k % len(source_rows)]
        session_id = str(uuid.uuid5(NAMESPACE, f"{dataset_type}/{k}"))
        pairs = list(zip(source["turns"], source["answers"]))
        if turn_counts:
            wanted = turn_counts[k % len(turn_counts)]
            pairs = [pairs[t % len(pairs)] for t in range(wanted)]
        turns, answers = [], []
        for t, (turn, answer) in enumerate(pairs):
            interaction_id = str(uuid.uuid5(NAMESPACE, f"{session_id}/{t}"))
            turns.append({**turn, "interaction_id": interaction_id})
            answers.append({**answer, "interaction_id": interaction_id})
        rows.append({**source, "session_id": session_id, "turns": turns, "answers": answers})
    return rows


def dict_of_lists(records: list[dict]) -> dict[str, list]:
    keys = list(records[0]) if records else []
    return {key: [r[key] for r in records] for key in keys}


def write_split(rows: list[dict], features, folder: Path, form: str) -> Path:
    import datasets

    folder.mkdir(parents=True, exist_ok=True)
    if form == "list":
        ds = datasets.Dataset.from_list(rows, features=features)
        (folder / "data").mkdir(exist_ok=True)
        ds.to_parquet(str(folder / SPLIT_FILE))
        return folder
    # dict of lists: the `turns`/`answers` features become Sequence(dict), as in the published data
    sequenced = datasets.Features({name: (datasets.Sequence(dict(feature.feature))
                                          if name in ("turns", "answers") else feature)
                                   for name, feature in features.items()})
    flat = [{**r, "turns": dict_of_lists(r["turns"]), "answers": dict_of_lists(r["answers"])} for r in rows]
    ds = datasets.Dataset.from_list(flat, features=sequenced)
    datasets.DatasetDict({"validation": ds}).save_to_disk(str(folder))
    return folder


def build_full_split(out: Path, *, single: int = SINGLE_TURN_SESSIONS, multi: int = MULTI_TURN_CONVERSATIONS,
                     form: str = "list") -> dict[str, Path]:
    """Write `out`/single-turn and `out`/multi-turn; returns dataset_type -> folder."""
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {FORMS}")
    written = {}
    for dataset_type, count, turn_counts in (("single-turn", single, None), ("multi-turn", multi, TURN_COUNTS)):
        mini = read_mini(dataset_type)
        rows = copy_rows(mini.to_list(), dataset_type, count, turn_counts)
        written[dataset_type] = write_split(rows, mini.features, Path(out) / dataset_type, form)
    return written


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="folder to write (default: .cache/full-split)")
    parser.add_argument("--single", type=int, default=SINGLE_TURN_SESSIONS, help="single-turn sessions")
    parser.add_argument("--multi", type=int, default=MULTI_TURN_CONVERSATIONS, help="multi-turn conversations")
    parser.add_argument("--form", choices=FORMS, default="list", help="turns/answers as lists of dicts or dicts of lists")
    args = parser.parse_args(argv)
    for dataset_type, folder in build_full_split(args.out or default_out(), single=args.single, multi=args.multi,
                                                 form=args.form).items():
        print(f"{dataset_type}: {folder}")


if __name__ == "__main__":
    main()
