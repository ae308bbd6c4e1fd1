"""Loading CRAG-MM conversations (a Hugging Face id or a local folder) and their images.

Rows hold `session_id`, `image` (PIL or None), `image_url` (None marks an egocentric image),
`image_quality`, `turns` and `answers`. An `answers` entry may carry, beside the official
`interaction_id` and `ans_full`, the mini benchmark's `ans_accepted` and `abstain_expected` (for the
offline lexical judge, evaluator/scoring/lexical_judge.py); the official splits have neither. Depending on how a dataset was built, `turns` and
`answers` come as a list of dicts or as a dict of lists; `normalise_records` turns both into a
list of dicts. Images are decoded lazily, one conversation at a time, because decoding every
image of the validation split up front would take minutes and gigabytes.

Labels: `domain`, `query_category`, `dynamism` and `image_quality` come as strings (the mini
benchmark) or as integer class labels whose names the dataset's features carry (the public
v0.1.2 data, read by facebookresearch/CRAG-MM through `features["turns"][name].feature.names`),
and `image_quality` sits on the row or inside `turns`. The raw values are kept for the official
CSVs (each harness writes them as the dataset holds them); `DatasetTurn.labels` holds the names
that breakdowns and reports show.

Stage labels (CRAG-MM-Diagnostics, McGill-NLP/crag-mm-diagnostics): its published rows are flat,
one single-turn question each (`id`, `question`, `answer`, `image` or `image_url`, `metadata`),
and `metadata` holds a human label per stage of a multi-modal RAG chain (STAGE_LABEL_FIELDS: the
target's box in the image's pixels and the image's size, its name and Wikipedia page, how the
question refers to it, and the question with the entity written in). Such a row is read as a
one-turn conversation; a CRAG-MM-layout turn may carry the same fields (under `metadata` or on
the turn itself). `DatasetTurn.stage_labels` holds them (None where a turn has no target), for the
stage-wise diagnostics (evaluator/scoring/diagnostics.py) and the oracle runs (`--oracle`).
"""
from __future__ import annotations

import hashlib
import io
import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from agents.profiles import cache_dir

# The official batch iterator (facebookresearch/CRAG-MM utils/crag_batch_iterator.py, and the
# 2025 starter kit's) resizes egocentric frames only -- rows whose image_url is None or empty --
# to 960 x 1280 (width x height); third-person images (rows with an image_url) reach the agent
# at their original size.
EGO_IMAGE_SIZE = (960, 1280)
IMAGE_TIMEOUT_S = 20.0
IMAGE_MAX_BYTES = 25 * 1024 * 1024


LABEL_FIELDS = ("domain", "query_category", "dynamism", "image_quality")
STAGE_LABEL_FIELDS = ("target_roi_bbox", "image_size", "target_object_name", "wikipedia_url",
                      "referring_expression_category", "disambiguated_question", "textual_only_question")


@dataclass
class DatasetTurn:
    interaction_id: str
    query: str
    ground_truth: str
    domain: object = None
    query_category: object = None
    dynamism: object = None
    labels: dict = field(default_factory=dict)  # LABEL_FIELDS -> the value's name (str) or None
    # the mini benchmark's extra answer keys (None where the data has none, as the official splits)
    ans_accepted: list[str] | None = None
    abstain_expected: bool | None = None
    stage_labels: dict | None = None  # STAGE_LABEL_FIELDS -> value, where the turn has a labelled target


@dataclass
class Conversation:
    index: int  # position in the split: batching order and sharding use it
    session_id: str
    image_url: str | None
    image_quality: object
    turns: list[DatasetTurn] = field(default_factory=list)

    @property
    def is_ego(self) -> bool:
        return self.image_url is None


def normalise_records(value) -> list[dict]:
    """A list of dicts from either a list of dicts or a dict of equal-length lists."""
    if value is None:
        return []
    if isinstance(value, dict):
        keys = list(value)
        lengths = {len(value[k]) for k in keys}
        if len(lengths) > 1:
            raise ValueError(f"dict-of-lists field has lists of different lengths: {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        return [{k: value[k][i] for k in keys} for i in range(n)]
    return [dict(item) for item in value]


def _class_names(feature) -> list[str] | None:
    """The names of a ClassLabel, also inside a List / Sequence of them; None for anything else."""
    for candidate in (feature, getattr(feature, "feature", None)):
        names = getattr(candidate, "names", None)
        if isinstance(names, list) and candidate.__class__.__name__ == "ClassLabel":
            return names
    return None


def label_vocabularies(features) -> dict[str, list[str]]:
    """field -> class names, for the LABEL_FIELDS that the dataset's features hold as class labels.
    `turns` may be a dict of per-field lists (Sequence of a dict: the published data and
    evaluator) or a List of dicts; `image_quality` may also be a column of the row."""
    if features is None:
        return {}
    turns = features.get("turns") if hasattr(features, "get") else None
    inner = turns if isinstance(turns, dict) else getattr(turns, "feature", None)
    vocabularies = {}
    for name in LABEL_FIELDS:
        names = _class_names(inner.get(name)) if isinstance(inner, dict) else None
        if names is None and name == "image_quality" and hasattr(features, "get"):
            names = _class_names(features.get(name))
        if names is not None:
            vocabularies[name] = names
    return vocabularies


def label_name(value, names: list[str] | None) -> str | None:
    """A label's name: a class index through its vocabulary, a string as it is, None when absent."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if names is not None and isinstance(value, int) and not isinstance(value, bool):
        return names[value] if 0 <= value < len(names) else None  # -1: the label is missing
    return str(value)


def _numbers(value, n: int) -> list[float] | None:
    try:
        numbers = [float(v) for v in value]
    except (TypeError, ValueError):
        return None
    return numbers if len(numbers) == n else None


def stage_labels(metadata) -> dict | None:
    """A turn's stage labels from its metadata (a dict, or JSON text of one); None when it names no
    target. A box that is not four numbers with x2 > x1 and y2 > y1 is dropped (None), not guessed."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return None
    if not isinstance(metadata, dict):
        return None
    labels = {name: metadata.get(name) for name in STAGE_LABEL_FIELDS}
    box = _numbers(labels["target_roi_bbox"], 4)  # None (absent) is not numbers: no box
    labels["target_roi_bbox"] = box if box and box[2] > box[0] and box[3] > box[1] else None
    size = _numbers(labels["image_size"], 2)
    labels["image_size"] = [int(v) for v in size] if size and min(size) > 0 else None
    for name in STAGE_LABEL_FIELDS[2:]:
        value = labels[name]
        labels[name] = " ".join(str(value).split()) or None if value is not None else None
    if not labels["target_object_name"] and labels["target_roi_bbox"] is None:
        return None
    return labels


def is_diagnostics_row(row: dict) -> bool:
    """A row in CRAG-MM-Diagnostics' flat layout (one question, no `turns`)."""
    return "turns" not in row and "question" in row and "id" in row


def diagnostics_conversation(index: int, row: dict) -> Conversation:
    """A flat CRAG-MM-Diagnostics row as a one-turn conversation: its `id` names the session and
    the turn, as that repository's data_loader.py uses it. The mini benchmark's answer keys
    (`ans_accepted`, `abstain_expected`) are read where the row has them."""
    if not row.get("answer"):
        raise ValueError(f"row {row.get('id')}: no answer")
    iid = str(row["id"])
    accepted, abstain = row.get("ans_accepted"), row.get("abstain_expected")
    turn = DatasetTurn(iid, row.get("question") or "", str(row["answer"]), labels=dict.fromkeys(LABEL_FIELDS),
                       ans_accepted=[str(f) for f in accepted] if accepted is not None else None,
                       abstain_expected=bool(abstain) if abstain is not None else None,
                       stage_labels=stage_labels(row.get("metadata")))
    return Conversation(index, iid, row.get("image_url") or None, None, [turn])


def conversation_from_row(index: int, row: dict, vocabularies: dict[str, list[str]] | None = None) -> Conversation:
    if is_diagnostics_row(row):
        return diagnostics_conversation(index, row)
    vocabularies = vocabularies or {}
    answer_records = {a["interaction_id"]: a for a in normalise_records(row.get("answers"))}
    answers = {iid: a.get("ans_full") for iid, a in answer_records.items()}
    turns = []
    for t in normalise_records(row.get("turns")):
        iid = t["interaction_id"]
        truth = answers.get(iid)
        if not truth:
            raise ValueError(f"session {row.get('session_id')}: no ground-truth answer for interaction {iid}")
        raw = {name: t.get(name) for name in LABEL_FIELDS}
        if row.get("image_quality") is not None:  # the row's own label, where it has one
            raw["image_quality"] = row.get("image_quality")
        labels = {name: label_name(raw[name], vocabularies.get(name)) for name in LABEL_FIELDS}
        accepted = answer_records[iid].get("ans_accepted")
        abstain = answer_records[iid].get("abstain_expected")
        turns.append(DatasetTurn(iid, t.get("query") or "", str(truth), t.get("domain"),
                          t.get("query_category"), t.get("dynamism"), labels,
                          [str(f) for f in accepted] if accepted is not None else None,
                          bool(abstain) if abstain is not None else None,
                          stage_labels(t["metadata"] if "metadata" in t else t)))
    if not turns:
        raise ValueError(f"session {row.get('session_id')} has no turns")
    return Conversation(index, str(row["session_id"]), row.get("image_url"), row.get("image_quality"), turns)


def load_split(dataset: str, revision: str | None, split: str):
    """(datasets.Dataset, split actually used, notice or None) from a local folder or a hub id."""
    import datasets

    path = Path(dataset).expanduser()
    if path.exists():
        if (path / "dataset_dict.json").exists() or (path / "state.json").exists():
            loaded = datasets.load_from_disk(str(path))
        else:
            loaded = datasets.load_dataset(str(path))
    else:
        loaded = datasets.load_dataset(dataset, revision=revision)
    if isinstance(loaded, datasets.Dataset):  # a folder saved from a single split
        return loaded, split, None
    available = list(loaded.keys())
    if not available:
        raise ValueError(f"{dataset} holds no split")
    if split in available:
        return loaded[split], split, None
    notice = f"split {split!r} not in {available}; using {available[0]!r}"
    return loaded[available[0]], available[0], notice


def read_conversations(ds, limit: int | None = None) -> list[Conversation]:
    """Every conversation's text fields in dataset order, without decoding any image."""
    meta = ds.remove_columns([c for c in ("image",) if c in ds.column_names])
    vocabularies = label_vocabularies(getattr(meta, "features", None))
    n = len(meta) if limit is None or limit < 0 else min(limit, len(meta))
    conversations, problems = [], []
    for i in range(n):
        try:
            conversations.append(conversation_from_row(i, meta[i], vocabularies))
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"row {i}: {type(exc).__name__}: {exc}")
    if problems:  # the official evaluator stops on these too; we name every bad row at once
        raise ValueError(f"{len(problems)} malformed conversation(s):\n" + "\n".join(problems[:20]))
    return conversations


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects only to http(s): a dataset URL must never lead to file:// or ftp://."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if not newurl.lower().startswith(("http://", "https://")):
            raise urllib.error.URLError(f"refusing redirect to a non-http URL: {newurl!r}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch_image_bytes(url: str, *, timeout: float = IMAGE_TIMEOUT_S, max_bytes: int = IMAGE_MAX_BYTES) -> bytes:
    """The bytes behind an http(s) URL, cached on disk by the URL's hash."""
    if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
        raise ValueError(f"image_url must be http(s), got {url!r}")
    folder = cache_dir() / "images"
    cached = folder / hashlib.sha256(url.encode()).hexdigest()
    if cached.exists():
        return cached.read_bytes()
    opener = urllib.request.build_opener(_HttpOnlyRedirects())
    request = urllib.request.Request(url, headers={"User-Agent": "cruise-local-evaluation"})
    with opener.open(request, timeout=timeout) as response:
        data = response.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"image at {url} is larger than {max_bytes} bytes")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(cached)
    return data


def is_egocentric(image_url: str | None) -> bool:
    """The official test: a row without an image_url holds an egocentric frame."""
    return not image_url


def image_for_agent(image, image_url: str | None) -> Image.Image:
    """The conversation's image as the agent sees it: loaded from the URL if absent; resized
    to 960 x 1280 only when egocentric."""
    if image is None:
        if not image_url:
            raise ValueError("row has neither an image nor an image_url")
        image = Image.open(io.BytesIO(fetch_image_bytes(image_url)))
        image.load()
    return image.resize(EGO_IMAGE_SIZE) if is_egocentric(image_url) else image


def apply_image_url_updates(conversations: list[Conversation], updates: dict[str, str]) -> list[str]:
    """Replace the image_url of the listed sessions (a rule set's fixes for broken links);
    returns the session ids changed."""
    changed = []
    for conv in conversations:
        if conv.session_id in updates:
            conv.image_url = updates[conv.session_id]
            changed.append(conv.session_id)
    return changed
