"""The two official rule sets a run can be scored by (`--rules`).

kddcup2025: the KDD Cup 2025 starter kit's local evaluator, as the CRUISE paper was scored.
  Judge gpt-4o-mini with structured output {"accuracy": bool}, no sampling parameters; a turn
  is a miss when its lower-cased answer contains "i don't know"; the scores count every turn
  AFTER the multi-turn cut (two turns in a row that are not correct turn the rest of the conversation into
  misses).
crag-mm: the published benchmark's evaluator (facebookresearch/CRAG-MM, `evaluation/`).
  Judge gpt-4o, free-text verdict whose last line says "Result: CORRECT" or "Result: WRONG",
  temperature 0, at most 1,024 judge tokens; a turn is a miss when its answer, lower-cased and
  stripped of everything but letters, digits and whitespace, contains "i dont know" or
  "i do not know"; the counts and rates use the flags BEFORE the multi-turn cut, which only
  feeds the conversation score; one single-turn session gets a replacement image_url. Besides
  the CSVs it writes response.jsonl (the generated turns; its `--mode evaluate --input-file`
  scores such a file), and so do we under these rules. tests/test_crag_mm_rules.py checks each
  of these against the line of the published evaluator it comes from.

Both skip the same two sessions (evaluator.harness.batching.SKIPPED_SESSIONS) and give a
truthfulness of 0.0 to a table of at most one turn.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

DEFAULT_RULES = "kddcup2025"


@dataclass(frozen=True)
class RuleSet:
    name: str
    judge_model: str
    judge_protocol: str  # "structured" ({"accuracy": bool}) or "result-line" (free text)
    counts_after_cut: bool  # True: totals and rates over the flags after the multi-turn cut
    # dataset type -> {session_id: image_url}: rows whose broken image_url is replaced
    image_url_updates: dict[str, dict[str, str]] = field(default_factory=dict)
    # The file of generated turns this harness writes besides its CSVs (its 13 turn columns, one
    # JSON object a line, which its evaluate-only mode reads back), or None
    turn_data_file: str | None = None

    def is_miss(self, answer: str) -> bool:
        if self.name == "crag-mm":
            letters = re.sub(r"[^a-z0-9\s]", "", answer.lower())
            return "i dont know" in letters or "i do not know" in letters
        return "i don't know" in answer.lower()


RULE_SETS = {
    "kddcup2025": RuleSet("kddcup2025", "gpt-4o-mini", "structured", counts_after_cut=True),
    "crag-mm": RuleSet(
        "crag-mm", "gpt-4o", "result-line", counts_after_cut=False, turn_data_file="response.jsonl",
        image_url_updates={"single-turn": {
            "0df99a9a-6a5d-4ff4-b8e4-e3ee90209dfe":
                "https://web.archive.org/web/20250521025904/https://upload.wikimedia.org/wikipedia/"
                "commons/1/13/BMW_5_SERIES_LWB_SEDAN_(G30)_China_(82).jpg",
        }},
    ),
}


def rule_set(name: str | None) -> RuleSet:
    try:
        return RULE_SETS[name or DEFAULT_RULES]
    except KeyError:
        raise ValueError(f"unknown rule set {name!r}; choose one of {sorted(RULE_SETS)}") from None
