"""How much the judge matters: two judges, or a judge and people, over one run's answers.

A side is a set of verdicts ("is this answer correct?") on the turns a judge decides: those that
are neither a miss nor an exact match under the run's rule set (the other turns are decided by
the rules alone, and counting them would make any two judges look alike). A side comes from an
LLM judge (`judge_side`: any model, endpoint and prompt, its verdicts from the run's own
judgments.jsonl where it judged them, else the judge's cache, else asked) or from a file of
human labels (`label_side`).

Human labels are a CSV with a column `interaction_id` or `question` (matched to the run's query,
stripped and lower-cased) and a column `label`. The CRAG-MM judge gives one bit, so the labels
map onto it:
- correct -> correct;
- incorrect -> not correct;
- missing (the answer gives no answer) -> not correct: the judge's first rule calls a refusal
  wrong, and a turn reaching the judge is not a miss under the rules;
- partial -> `partial` decides: not correct (default: the official accuracy counts only fully
  correct answers), correct, or left out of the comparison ("skip").
Also accepted: true/false, yes/no, 1/0, perfect/acceptable (acceptable counts as partial).

`compare(records, rules, a, b)` gives, over the turns both sides decided: the agreement rate and
Cohen's kappa, each with a 95% percentile-bootstrap interval over conversations
(evaluator.scoring.intervals: the same draws, seed and count as every interval of a run), the 2x2
table, the turns where they disagree, and each score (accuracy, hallucination rate, truthfulness,
...) as the rule set computes it with each side's verdicts, with the paired difference B - A.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from evaluator.scoring.intervals import paired_differences, percentile_interval, resample_indices
from evaluator.scoring.judge import Judge, JudgeItem
from evaluator.scoring.official_judge import origin_text
from evaluator.scoring.rules import RuleSet
from evaluator.scoring.scores import needs_judge, score_rows, verdict_fields

PARTIAL_CHOICES = ("incorrect", "correct", "skip")
LABELS = {"correct": True, "perfect": True, "true": True, "yes": True, "1": True,
          "incorrect": False, "wrong": False, "missing": False, "false": False, "no": False, "0": False,
          "partial": "partial", "acceptable": "partial"}


class AgreementError(ValueError):
    """One line: a label file or a run that cannot be compared."""


@dataclass
class Side:
    name: str  # what decided: the judge with its prompt's origin, or the label file
    verdicts: dict[str, bool | None]  # interaction_id -> correct?, None: not decided
    asked: int = 0  # requests this side cost (0 for labels and for verdicts found saved)


@dataclass
class Agreement:
    a: str
    b: str
    turns: int  # turns both sides decided
    agreement: float
    agreement_interval: list[float] | None
    kappa: float | None  # None when both sides give one verdict only (kappa is undefined)
    kappa_interval: list[float] | None
    table: dict[tuple[bool, bool], int]  # (A says correct, B says correct) -> turns
    disagreements: list[dict]
    undecided: tuple[int, int]  # judged turns A, B left without a verdict (failed, or no label)
    scores: dict  # "all" -> paired_differences(rows under A, rows under B)
    notes: list[str] = field(default_factory=list)


def judged_turns(records: list[dict], rules: RuleSet) -> list[dict]:
    return [r for r in records if needs_judge(r["agent_response"], r["ground_truth"], rules)]


def judge_side(judge: Judge, records: list[dict], rules: RuleSet, saved: dict[str, tuple] | None = None) -> Side:
    """The judge's verdicts on the turns it decides: a verdict the run saved for exactly this
    request (`saved`: outputs.saved_verdicts) or the judge's own cache costs no request."""
    items = [JudgeItem(r["interaction_id"], r["query"], r["ground_truth"],
                       r["agent_response"]) for r in judged_turns(records, rules)]
    verdicts, to_ask = {}, []
    for item in items:
        found = (saved or {}).get(judge.cache_key(item))
        if found is not None:
            verdicts[item.key] = found[0]
        else:
            to_ask.append(item)
    outcomes = judge.judge_all(to_ask)
    verdicts.update({key: outcome.verdict for key, outcome in outcomes.items()})
    asked = sum(1 for outcome in outcomes.values() if not outcome.cached and outcome.attempts)
    return Side(f"{judge.label}, prompt {origin_text(judge.prompt_origin)}", verdicts, asked)


def read_labels(path: Path, partial: str = "incorrect") -> list[tuple[str, str, bool | None]]:
    """(column, key, verdict) per row of a label CSV: column is interaction_id or question."""
    if partial not in PARTIAL_CHOICES:
        raise AgreementError(f"partial labels: choose one of {PARTIAL_CHOICES}, not {partial!r}")
    try:
        with Path(path).open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise AgreementError(f"cannot read the label file {path}: {exc.strerror}") from None
    columns = set(rows[0]) if rows else set()
    key_column = next((c for c in ("interaction_id", "question") if c in columns), None)
    if key_column is None or "label" not in columns:
        raise AgreementError(f"{path}: needs a column 'label' and a column 'interaction_id' or 'question' "
                             f"(found {sorted(columns)})")
    out = []
    for number, row in enumerate(rows, start=2):
        text = (row.get("label") or "").strip().lower()
        if text not in LABELS:
            raise AgreementError(f"{path}, line {number}: unknown label {row.get('label')!r} "
                                 f"(known: {', '.join(sorted(LABELS))})")
        verdict = LABELS[text]
        if verdict == "partial":
            verdict = {"incorrect": False, "correct": True, "skip": None}[partial]
        out.append((key_column, (row.get(key_column) or "").strip(), verdict))
    return out


def label_side(path: Path, records: list[dict], rules: RuleSet, partial: str = "incorrect") -> Side:
    """The labels on the run's turns that a judge decides; a question matching several turns, or
    a label matching none, stops with one line."""
    by_question: dict[str, list[str]] = {}
    for record in records:
        by_question.setdefault(str(record["query"]).strip().lower(), []).append(record["interaction_id"])
    ids = {r["interaction_id"] for r in records}
    judged = {r["interaction_id"] for r in judged_turns(records, rules)}
    verdicts = {}
    for column, key, verdict in read_labels(path, partial):
        if column == "interaction_id":
            if key not in ids:
                raise AgreementError(f"{path}: interaction_id {key!r} is not a turn of this run")
            iid = key
        else:
            matches = by_question.get(key.lower(), [])
            if len(matches) != 1:
                raise AgreementError(f"{path}: question {key!r} matches {len(matches)} turns of this run "
                                     "(label by interaction_id instead)")
            iid = matches[0]
        if iid in judged:
            verdicts[iid] = verdict
    return Side(f"labels {path}" + (f" (partial -> {partial})" if partial != "incorrect" else ""), verdicts)


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float | None:
    """Cohen's kappa of two boolean arrays: (p_o - p_e) / (1 - p_e); None where p_e is 1."""
    n = len(a)
    if not n:
        return None
    observed = float(np.mean(a == b))
    a_yes, b_yes = float(np.mean(a)), float(np.mean(b))
    expected = a_yes * b_yes + (1 - a_yes) * (1 - b_yes)
    return None if expected >= 1.0 else (observed - expected) / (1 - expected)


def _bootstrap(a: np.ndarray, b: np.ndarray, sessions: list[str]) -> tuple[list[float] | None, list[float] | None]:
    """Percentile intervals of the agreement rate and kappa over resampled conversations."""
    if len(a) < 2:
        return None, None
    names = sorted(set(sessions))
    cluster = np.array([names.index(s) for s in sessions])
    members = [np.flatnonzero(cluster == i) for i in range(len(names))]
    rates, kappas = [], []
    for draw in resample_indices(len(names)):
        picked = np.concatenate([members[i] for i in draw])
        rates.append(float(np.mean(a[picked] == b[picked])))
        kappa = cohen_kappa(a[picked], b[picked])
        if kappa is not None:
            kappas.append(kappa)
    return percentile_interval(np.array(rates)), (percentile_interval(np.array(kappas)) if kappas else None)


def scored_rows(records: list[dict], verdicts: dict, rules: RuleSet) -> list[dict]:
    """The counted rows the rule set scores with these verdicts (a turn without one: not correct,
    as the official evaluator counts a failed judgement)."""
    rows = []
    for record in sorted(records, key=lambda r: (r["session_id"], r["turn_idx"])):
        row = {k: record.get(k) for k in ("session_id", "interaction_id", "turn_idx", "is_ego")}
        row.update(verdict_fields(record["agent_response"], record["ground_truth"],
                                  verdicts.get(record["interaction_id"]), rules))
        rows.append(row)
    return score_rows(rows, rules)[0]


def compare(records: list[dict], rules: RuleSet, a: Side, b: Side) -> Agreement:
    order = {r["interaction_id"]: (r["session_id"], r["turn_idx"]) for r in records}
    both = sorted((iid for iid in order if a.verdicts.get(iid) is not None and b.verdicts.get(iid) is not None),
                  key=order.get)
    va = np.array([a.verdicts[i] for i in both], dtype=bool)
    vb = np.array([b.verdicts[i] for i in both], dtype=bool)
    table = {(x, y): int(np.sum((va == x) & (vb == y))) for x in (True, False) for y in (True, False)}
    rate_interval, kappa_interval = _bootstrap(va, vb, [order[i][0] for i in both])
    by_id = {r["interaction_id"]: r for r in records}
    disagreements = [{"interaction_id": i, "session_id": order[i][0], "turn_idx": order[i][1],
                      "query": by_id[i]["query"], "ground_truth": by_id[i]["ground_truth"],
                      "answer": by_id[i]["agent_response"], "a": a.verdicts[i], "b": b.verdicts[i]}
                     for i in both if a.verdicts[i] != b.verdicts[i]]
    judged = {r["interaction_id"] for r in judged_turns(records, rules)}
    notes = []
    # the scores need a verdict for every judged turn: a label file may cover only some turns
    scope = records
    if any(i not in b.verdicts for i in judged) or any(i not in a.verdicts for i in judged):
        covered = {i for i in judged if i in a.verdicts and i in b.verdicts}
        scope = [r for r in records if r["interaction_id"] not in judged or r["interaction_id"] in covered]
        notes.append(f"scores over the {len(scope)} turns both sides cover (of {len(records)}): "
                     f"{len(judged) - len(covered)} judged turns have no verdict on one side")
    scores = {"all": paired_differences(scored_rows(scope, a.verdicts, rules), scored_rows(scope, b.verdicts, rules))}
    return Agreement(
        a.name, b.name, len(both), float(np.mean(va == vb)) if len(both) else float("nan"), rate_interval,
        cohen_kappa(va, vb), kappa_interval, table, disagreements,
        (sum(1 for i in judged if a.verdicts.get(i) is None), sum(1 for i in judged if b.verdicts.get(i) is None)),
        scores, notes)
