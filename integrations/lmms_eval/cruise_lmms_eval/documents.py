"""The split a CRAG-MM task reads, each document of it as our conversation, and its photo.

The split is the one `local_evaluation.py` would read (evaluator/harness/dataset.py's loaders:
the profile's dataset by default, a hub id or a folder, the validation or public-test split,
CRAG-MM-Diagnostics' layout); a split the data lacks falls back to its first, with a notice.
lmms-eval loads a task's documents itself from the task's `dataset_path`, `dataset_kwargs` and
`test_split`: `lmms_eval_fields` gives those fields for what was found here, so that its load is
this one. One document is one row: a conversation.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from agents.profiles import default_dataset
from evaluator.harness.dataset import (
    Conversation,
    conversation_from_row,
    image_for_agent,
    label_vocabularies,
    load_split,
)
from evaluator.scoring.rules import rule_set

from .settings import TaskSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedSplit:
    """What loading the split found out: what the documents are read with."""

    dataset: str  # the dataset read (the profile's default, resolved)
    revision: str | None
    split: str  # the split read (a missing one falls back to the first, with a notice)
    notice: str | None
    vocabularies: dict  # label field -> class names, where the data holds class labels
    image_urls: dict  # session_id -> image_url, the rule set's fixes of broken links


def load_documents(settings: TaskSettings):
    """(the split as a datasets.Dataset with its images, LoadedSplit)."""
    dataset = settings.dataset or default_dataset(settings.profile, settings.dataset_type)
    ds, split, notice = load_split(dataset, settings.revision, settings.split)
    if notice:
        log.warning("%s", notice)
    meta = ds.remove_columns([c for c in ("image",) if c in ds.column_names])
    rules = rule_set(settings.scoring.rules)
    loaded = LoadedSplit(dataset, settings.revision, split, notice, label_vocabularies(meta.features),
                         dict(rules.image_url_updates.get(settings.dataset_type, {})))
    return ds, loaded


def lmms_eval_fields(loaded: LoadedSplit) -> dict:
    """The task config's dataset fields under which lmms-eval loads the split `load_documents`
    read (lmms-eval 0.7.3's ConfigurableTask.download: `datasets.load_from_disk` where
    `dataset_kwargs.load_from_disk`, else `datasets.load_dataset(dataset_path, **dataset_kwargs)`):
    a folder saved by save_to_disk, a folder of data files, or a hub id at its revision."""
    path = Path(loaded.dataset).expanduser()
    if path.exists():
        saved = (path / "dataset_dict.json").exists() or (path / "state.json").exists()
        if (path / "state.json").exists():
            raise ValueError(f"{path} holds one split saved alone: lmms-eval reads a DatasetDict (save the split as "
                             "DatasetDict({split: ds}).save_to_disk)")
        kwargs = {"load_from_disk": True} if saved else {}
        return {"dataset_path": str(path), "dataset_kwargs": kwargs, "test_split": loaded.split}
    return {"dataset_path": loaded.dataset, "dataset_kwargs": {"revision": loaded.revision} if loaded.revision else {},
            "test_split": loaded.split}


def conversation(doc: dict, loaded: LoadedSplit) -> Conversation:
    conv = conversation_from_row(0, doc, loaded.vocabularies)
    conv.image_url = loaded.image_urls.get(conv.session_id, conv.image_url)
    return conv


def session_key(column_names) -> str | None:
    """The column that names a document's conversation (CRAG-MM-Diagnostics: `id`)."""
    return next((key for key in ("session_id", "id") if key in column_names), None)


def photo(conv: Conversation, raw) -> list:
    """The conversation's image as the official iterator hands it over (egocentric frames resized
    to 960 x 1280) from its stored image `raw` or its link; none where it cannot be loaded (said
    in the log)."""
    try:
        return [image_for_agent(raw, conv.image_url)]
    except Exception as exc:  # noqa: BLE001 - an unreachable URL or corrupt bytes cost the image only
        log.warning("session %s: image not loaded (%s: %s)", conv.session_id, type(exc).__name__, exc)
        return []
