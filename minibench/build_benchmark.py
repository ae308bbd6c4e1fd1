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

Stage labels (CRAG-MM-Diagnostics, docs/diagnostics.md): the single-turn questions about a photo of
one image-KG entity (content.TARGETS) carry that repository's `metadata` in their turn (the
object's box is the whole picture); `diagnostics/` holds the same questions in its published
layout (flat rows, split `test`), one knowledge question per photo, plus the composed photos of
two objects (content.COMPOSED), each row with the mini benchmark's `ans_accepted` and `abstain_expected` beside `answer`.
"""
from __future__ import annotations

import argparse
import io
import json
import uuid
from pathlib import Path

from agents.profiles import REPO_ROOT
from minibench import content
from minibench.images import composed, image_bytes

DEFAULT_OUT = REPO_ROOT / "data" / "crag-mm-mini"
NAMESPACE = uuid.UUID("5b0f3c8e-6d2a-4e57-9a51-2c4d7e0b9f13")  # fixed: ids never change between builds
SPLIT_FILE = "data/validation-00000-of-00001.parquet"  # the name tells `datasets` the split
DIAGNOSTICS_FILE = "data/test-00000-of-00001.parquet"  # CRAG-MM-Diagnostics' split


def picture_size(key: str) -> tuple[int, int]:
    return picture_bytes_size(picture_bytes(key))


def picture_bytes(key: str) -> bytes:
    spec = content.PICTURES[key]
    return image_bytes(spec["source"], spec.get("transform"))


def _session(kind: str, number: int, picture: str, turns: list[tuple]) -> tuple[dict, dict]:
    session_id = str(uuid.uuid5(NAMESPACE, f"{kind}/{number}/{picture}"))
    spec = content.PICTURES[picture]
    row_turns, row_answers, where = [], [], []
    for t, (domain, category, dynamism, query, answer, source) in enumerate(turns):
        interaction_id = str(uuid.uuid5(NAMESPACE, f"{session_id}/{t}"))
        labelled = kind == "single-turn" and picture in content.TARGETS
        size = picture_size(picture) if labelled else None
        row_turns.append(dict(interaction_id=interaction_id, domain=domain, query_category=category,
                              dynamism=dynamism, query=query,
                              **({"metadata": content.stage_metadata(picture, query, [0, 0, *size], size) if labelled
                                  else None} if kind == "single-turn" else {})))
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


def diagnostics_row(row_id: str, image: bytes, name: str, image_url: str | None, query: str, metadata: dict) -> dict:
    """A row in CRAG-MM-Diagnostics' flat layout, with the mini benchmark's answer forms."""
    answer, source = next((t[4], t[5]) for _, t in content.SINGLE_TURN if t[3] == query)
    return dict(id=row_id, question=query, answer=answer, image={"bytes": image, "path": name}, image_url=image_url,
                metadata=metadata, ans_accepted=content.accepted_forms(query, source), abstain_expected=source == "none")


def build_diagnostics_rows(single: tuple[list[dict], list[dict]]) -> tuple[list[dict], list[dict]]:
    """One knowledge question per labelled photo (its first question that is not simple recognition
    and whose answer a search source holds; the session's provenance note too), then one question
    per composed photo (a note of the same shape, with the composition)."""
    rows, notes, photos = [], [], set()
    for row, note, (picture, (_, category, _, _, _, source)) in zip(*single, content.SINGLE_TURN):
        turn = row["turns"][0]
        if turn["metadata"] and picture not in photos and category != content.SR and source in ("kg", "web"):
            photos.add(picture)
            rows.append(diagnostics_row(turn["interaction_id"], row["image"]["bytes"], row["image"]["path"],
                                        row["image_url"], turn["query"], turn["metadata"]))
            notes.append(dict(note, session_id=turn["interaction_id"], single_turn_session=row["session_id"]))
    for number, ((left, right), target, query, category, disambiguated) in enumerate(content.COMPOSED):
        image, boxes = composed(picture_bytes(left), picture_bytes(right))
        box = boxes[(left, right).index(target)]
        size = picture_bytes_size(image)
        row_id = str(uuid.uuid5(NAMESPACE, f"diagnostics/composed/{number}/{left}+{right}"))
        name = f"{left}+{right}.jpg"
        rows.append(diagnostics_row(row_id, image, name, content.URL + name, query,
                                    content.stage_metadata(target, query, box, size, category, disambiguated)))
        source = next(t[5] for _, t in content.SINGLE_TURN if t[3] == query)
        notes.append(dict(session_id=row_id, composed=[left, right], target=target, box=box, image_size=list(size),
                          turns=[dict(interaction_id=row_id, answer_source=source,
                                      **({"answer_keys": content.ANSWER_KEYS[query]} if source in ("kg", "web") else {}))]))
    return rows, notes


def picture_bytes_size(data: bytes) -> tuple[int, int]:
    from PIL import Image

    return Image.open(io.BytesIO(data)).size


def diagnostics_features():
    from datasets import Features, Image, Value

    metadata = dict(target_roi_bbox=[Value("float64")], image_size=[Value("int64")],
                    **{k: Value("string") for k in ("target_object_name", "wikipedia_url", "referring_expression_category",
                                                    "disambiguated_question", "textual_only_question")})
    return Features(id=Value("string"), question=Value("string"), answer=Value("string"), image=Image(),
                    image_url=Value("string"), metadata=metadata, ans_accepted=[Value("string")],
                    abstain_expected=Value("bool"))


def features(labelled: bool = False):
    """The CRAG-MM rows' features; `labelled`: the turns carry the stage labels' `metadata`."""
    from datasets import Features, Image, Value

    turn = {k: Value("string") for k in ("interaction_id", "domain", "query_category", "dynamism", "query")}
    if labelled:
        turn["metadata"] = diagnostics_features()["metadata"]
    answer = {k: Value("string") for k in ("interaction_id", "ans_full")}
    answer.update(ans_accepted=[Value("string")], abstain_expected=Value("bool"))
    return Features(session_id=Value("string"), image=Image(), image_url=Value("string"),
                    image_quality=Value("string"), turns=[turn], answers=[answer])


def write_split(rows: list[dict], path: Path, row_features=None) -> None:
    import pyarrow.parquet as pq
    from datasets import Dataset

    table = Dataset.from_list(rows, features=row_features or features()).data.table
    path.parent.mkdir(parents=True, exist_ok=True)
    # Fixed writer options: the file's bytes depend only on the rows.
    pq.write_table(table, path, compression="zstd", compression_level=9, use_dictionary=True,
                   write_statistics=True, row_group_size=len(rows))


def build(out: Path = DEFAULT_OUT) -> dict[str, int]:
    out = Path(out)
    provenance, counts = {}, {}
    built = build_rows()
    for kind, (rows, notes) in built.items():
        write_split(rows, out / kind / SPLIT_FILE, features(labelled=kind == "single-turn"))
        provenance[kind] = notes
        counts[kind] = len(rows)
    rows, notes = build_diagnostics_rows(built["single-turn"])
    write_split(rows, out / "diagnostics" / DIAGNOSTICS_FILE, diagnostics_features())
    provenance["diagnostics"], counts["diagnostics"] = notes, len(rows)
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
