"""Build data/crag-mm-mini/ (single-turn and multi-turn parquet files, provenance.json).

    python -m minibench.build_benchmark [--out data/crag-mm-mini]

Rows follow the CRAG-MM schema exactly (session_id, image, image_url, image_quality, turns,
answers); where each answer lives (image / kg / web / none) goes to provenance.json so the
rows stay schema-identical; KG and web turns also carry their answer keys (content.ANSWER_KEYS),
and every follow-up turn of a conversation its referent (content.REFERENTS).
Each `answers` entry adds two keys after the official `interaction_id`, `ans_full`: `ans_accepted`
(content.accepted_forms, for the offline lexical judge) and `abstain_expected` (the answer source
is "none": "I don't know" is the right reply). Ids are uuid5 values of fixed names and the images
are deterministic JPEGs, so two builds write the same bytes.
"""
from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path

from agents.profiles import REPO_ROOT
from minibench import content
from minibench.images import image_bytes

DEFAULT_OUT = REPO_ROOT / "data" / "crag-mm-mini"
NAMESPACE = uuid.UUID("5b0f3c8e-6d2a-4e57-9a51-2c4d7e0b9f13")  # fixed: ids never change between builds
SPLIT_FILE = "data/validation-00000-of-00001.parquet"  # the name tells `datasets` the split


def picture_bytes(key: str) -> bytes:
    spec = content.PICTURES[key]
    return image_bytes(spec["source"], spec.get("transform"))


def _session(kind: str, number: int, picture: str, turns: list[tuple]) -> tuple[dict, dict]:
    session_id = str(uuid.uuid5(NAMESPACE, f"{kind}/{number}/{picture}"))
    spec = content.PICTURES[picture]
    row_turns, row_answers, where = [], [], []
    for t, (domain, category, dynamism, query, answer, source) in enumerate(turns):
        interaction_id = str(uuid.uuid5(NAMESPACE, f"{session_id}/{t}"))
        row_turns.append(dict(interaction_id=interaction_id, domain=domain, query_category=category,
                              dynamism=dynamism, query=query))
        # official fields first, in the official order; then the offline judge's extra keys
        row_answers.append(dict(interaction_id=interaction_id, ans_full=answer,
                                ans_accepted=content.accepted_forms(query, source),
                                abstain_expected=source == "none"))
        note = dict(interaction_id=interaction_id, answer_source=source)
        if source in ("kg", "web"):  # every KG / web question must say how to spot its answer
            note["answer_keys"] = content.ANSWER_KEYS[query]
        if kind == "multi-turn" and t > 0:  # what the follow-up refers to, and where that is named
            note["referent"] = content.referent_note(query)
        where.append(note)
    row = dict(session_id=session_id,
               image={"bytes": picture_bytes(picture), "path": f"{picture}.jpg"},
               image_url=spec["url"], image_quality=spec["quality"],
               turns=row_turns, answers=row_answers)
    note = dict(session_id=session_id, picture=picture, source_image=spec["source"],
                transform=spec.get("transform"), turns=where)
    return row, note


def build_rows() -> dict[str, tuple[list[dict], list[dict]]]:
    single = [_session("single-turn", i, pic, [turn]) for i, (pic, turn) in enumerate(content.SINGLE_TURN)]
    multi = [_session("multi-turn", i, pic, turns) for i, (pic, turns) in enumerate(content.MULTI_TURN)]
    return {"single-turn": tuple(map(list, zip(*single))), "multi-turn": tuple(map(list, zip(*multi)))}


def features():
    from datasets import Features, Image, Value

    turn = {k: Value("string") for k in ("interaction_id", "domain", "query_category", "dynamism", "query")}
    answer = {k: Value("string") for k in ("interaction_id", "ans_full")}
    answer.update(ans_accepted=[Value("string")], abstain_expected=Value("bool"))
    return Features(session_id=Value("string"), image=Image(), image_url=Value("string"),
                    image_quality=Value("string"), turns=[turn], answers=[answer])


def write_split(rows: list[dict], path: Path) -> None:
    import pyarrow.parquet as pq
    from datasets import Dataset

    table = Dataset.from_list(rows, features=features()).data.table
    path.parent.mkdir(parents=True, exist_ok=True)
    # Fixed writer options: the file's bytes depend only on the rows.
    pq.write_table(table, path, compression="zstd", compression_level=9, use_dictionary=True,
                   write_statistics=True, row_group_size=len(rows))


def build(out: Path = DEFAULT_OUT) -> dict[str, int]:
    out = Path(out)
    provenance, counts = {}, {}
    for kind, (rows, notes) in build_rows().items():
        write_split(rows, out / kind / SPLIT_FILE)
        provenance[kind] = notes
        counts[kind] = len(rows)
    (out / "provenance.json").write_text(json.dumps(provenance, indent=1, sort_keys=True) + "\n")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    counts = build(args.out)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {counts} sessions to {args.out} ({size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
