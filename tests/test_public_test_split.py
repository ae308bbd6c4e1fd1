"""`--split public_test` (the relaunched repo's scripts run it) picks that split when the dataset holds it."""
from __future__ import annotations

from evaluation.harness.dataset import load_split


def test_public_test_is_chosen_over_validation_when_both_are_there(tmp_path):
    import datasets

    both = datasets.DatasetDict({
        "validation": datasets.Dataset.from_dict({"session_id": ["v1", "v2"]}),
        "public_test": datasets.Dataset.from_dict({"session_id": ["p1"]}),
    })
    both.save_to_disk(str(tmp_path / "ds"))
    rows, used, notice = load_split(str(tmp_path / "ds"), None, "public_test")
    assert (used, notice, rows["session_id"]) == ("public_test", None, ["p1"])
    rows, used, notice = load_split(str(tmp_path / "ds"), None, "validation")
    assert (used, rows["session_id"]) == ("validation", ["v1", "v2"])
