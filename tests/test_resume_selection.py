"""Which turns a resumed run covers (evaluator/harness/fingerprint.py `selection_refusal`): a run
folder written before a selection key existed (its run record read from that JSON) resumes where its absence meant what the flag now
says, and is refused, naming the flag with both values, where it meant something else."""
from __future__ import annotations

from pathlib import Path

from evaluator.harness.fingerprint import RESUME_KEYS, selection_refusal
from evaluator.harness.run_record import RunRecord

NOW = {"dataset": "crag-mm-2025/crag-mm-multi-turn-public", "dataset_type": "multi-turn", "split": "validation",
       "revision": "abc123", "num_conversations": -1, "exact_conversations": False, "shard": None,
       "rules": "kddcup2025"}
OUT = Path("/runs/earlier")


def test_a_run_written_before_rules_and_exact_conversations_were_recorded_resumes_under_their_defaults():
    earlier = {k: v for k, v in NOW.items() if k not in ("rules", "exact_conversations")}
    assert set(RESUME_KEYS) == set(NOW)
    assert selection_refusal(OUT, RunRecord.from_json(earlier), RunRecord(**NOW)) is None


def test_a_run_without_a_rules_key_is_refused_under_other_rules_naming_the_default_it_had():
    earlier = {k: v for k, v in NOW.items() if k != "rules"}
    refusal = selection_refusal(OUT, RunRecord.from_json(earlier),
                                RunRecord(**{**NOW, "rules": "crag-mm", "exact_conversations": True}))
    assert refusal.splitlines()[:3] == [
        f"cannot resume {OUT}: the earlier run covered another selection of turns:",
        "  --exact-conversations: False then, True now",
        "  --rules: kddcup2025 then, crag-mm now"]
