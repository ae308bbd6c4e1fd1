"""From saved answers to the output files: judge, score, write.

The official files carry exactly what the official evaluator writes: turn_evaluation_results_all.csv
and turn_evaluation_results_ego.csv (its 18 columns, the flags before the multi-turn cut, rows
sorted by session and turn) and scores_dictionary.json (keys "all" and "ego", its 11 scores;
NaN rates for an empty subset; beside them our own key "intervals_95", the 95% bootstrap
intervals of evaluator.scoring.intervals). Everything else goes to files of our own:
turn_evaluation_results_all_extended.csv / _ego_extended.csv (the official columns holding the
flags the scores count, then is_hallucination, multi_turn_conversation_score, after_two_wrong,
raw_answer, judge_reply, error) and run_summary.json (rule set, tokenizer, judge, timings,
breakdowns, notices), plus traces.jsonl. With no LLM judge, turns whose data carries accepted
answer forms are decided by the offline lexical judge (evaluator/scoring/lexical_judge.py): its
label then stands in run_summary.json's "judge" and under scores_dictionary.json's own "judge"
key (beside the official "all" and "ego"), with the abstention counts. Turns left without a
verdict count as not correct (official) and are reported under run_summary.json's "unjudged",
with the scores without them and the rejudge command (evaluator/harness/unjudged.py). Under `--rules crag-mm` also response.jsonl, the
generated turns as that harness writes them (the official CSVs' first 13 columns).
On a dataset with stage labels also diagnostics.json (evaluator/scoring/diagnostics.py).

Works only from the output folder (answers.jsonl, judgments.jsonl, batches.jsonl, traces.jsonl,
run_config.json), so the same code finishes a normal run, a resumed one, `--rejudge` (no agent,
no dataset) and `merge` of shard folders.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from evaluator.harness.deadline_cuts import deadline_cut_report
from evaluator.harness.faults import systemic_fault
from evaluator.harness.run_record import (
    RunRecord,
    merged_record,
    read_run_record,
    record_run_judge,
    write_run_record,
)
from evaluator.harness.runner import (
    ANSWERS,
    BATCHES,
    DIAGNOSTICS,
    JUDGMENTS,
    TRACES,
    append_jsonl,
    latest_per_batch,
    latest_per_turn,
    progress_bar,
    read_jsonl,
    saved_answers,
)
from evaluator.harness.trace_view import agent_summary
from evaluator.harness.unjudged import unjudged_report
from evaluator.scoring.coverage import evidence_coverage
from evaluator.scoring.diagnostics import diagnose
from evaluator.scoring.intervals import method, score_intervals
from evaluator.scoring.judge import (
    Judge,
    JudgeItem,
    judges_of_label,
    judging_key,
    prompt_origin_of,
    protocol_for,
)
from evaluator.scoring.lexical_judge import (
    OFFLINE_JUDGE_LABEL,
    abstention_counts,
    has_answer_forms,
    lexical_verdict,
)
from evaluator.scoring.multi_turn import multi_turn_figures
from evaluator.scoring.official_judge import OfficialJudge, origin_text
from evaluator.scoring.rules import RuleSet, rule_set
from evaluator.scoring.scores import (
    BASE_COLUMNS,
    EXTENDED_TURN_COLUMNS,
    LABEL_COLUMNS,
    LABEL_NAME_COLUMNS,
    OFFICIAL_TURN_COLUMNS,
    breakdown,
    needs_judge,
    score_rows,
    verdict_fields,
)

BREAKDOWN_COLUMNS = LABEL_COLUMNS
# scores_dictionary.json's key of our own beside the official "all" and "ego": the 95% intervals
INTERVALS_KEY = "intervals_95"
OFFICIAL_FILES = ("turn_evaluation_results_all.csv", "turn_evaluation_results_ego.csv", "scores_dictionary.json")
EXTENDED_FILES = ("turn_evaluation_results_all_extended.csv", "turn_evaluation_results_ego_extended.csv")


@dataclass
class Results:
    rows_all: list[dict]
    rows_ego: list[dict]
    scores: dict
    summary: dict


def saved_verdicts(output_dir: Path) -> dict[str, tuple[bool, str | None]]:
    """judge cache key -> verdict saved in this folder earlier (failures are not verdicts). The
    key hashes judge protocol, model, endpoint, question, ground truth and prediction, so a
    verdict is only reused for exactly the same judging question. Values: (verdict, reply)."""
    verdicts = {}
    for record in read_jsonl(output_dir / JUDGMENTS):
        if isinstance(record.get("verdict"), bool) and record.get("key"):
            verdicts[record["key"]] = (record["verdict"], record.get("reply"))
    return verdicts


def kept_verdicts(needing: list[dict], output_dir: Path, rules: RuleSet,
                  official: OfficialJudge | None) -> dict[str, dict]:
    """interaction_id -> {"verdict", "reply", "judge"}: the last verdict an
    LLM judge saved in this folder for the turn's answer as it stands, for a scoring without a
    judge. A record counts only when its key is the key its judge (named by its label) gives this
    turn's question, ground truth and answer under this rule set and judge prompt: a verdict on
    another answer, prompt or protocol is not this turn's."""
    by_turn = {r["interaction_id"]: r for r in needing}
    protocol = protocol_for(rules, official)
    kept: dict[str, dict] = {}
    for record in read_jsonl(output_dir / JUDGMENTS):
        turn = by_turn.get(record.get("interaction_id"))
        named = judges_of_label(record.get("judge"))
        if turn is None or not isinstance(record.get("verdict"), bool) or not named or named[2] != rules.name:
            continue
        model, base_urls, _ = named
        item = JudgeItem(turn["interaction_id"], turn["query"], turn["ground_truth"], turn["agent_response"])
        for base_url in base_urls:
            if record.get("key") == judging_key(protocol, model, base_url, item):
                kept[item.key] = {"verdict": record["verdict"], "reply": record.get("reply"), "judge": record["judge"]}
                break
    return kept


def judge_turns(records: list[dict], output_dir: Path, judge: Judge | None, progress: bool,
                rules: RuleSet, official: OfficialJudge | None = None) -> tuple[dict, dict, dict]:
    """(interaction_id -> verdict or None, interaction_id -> judge reply, counts) for every turn
    the judge must decide. Without a judge (`official`: the judge prompt the saved verdicts are
    checked against) the verdicts saved here earlier are kept (`kept_verdicts`)."""
    needing = [r for r in records if needs_judge(r["agent_response"], r["ground_truth"], rules)]
    counts = {"needing_judge": len(needing), "judge_failures": 0, "judge_not_asked": 0, "unjudged_turns": 0,
              "judge_gave_up": None, "judge_cache_hits": 0, "judge_asked": 0, "judge_rate_limit_waits": 0,
              "judge_waited_s_max_turn": 0.0}
    if judge is None:
        # no LLM judge: the verdicts a judge saved here earlier stand; of the other turns, those
        # whose data carries accepted forms go to the offline lexical judge
        kept = kept_verdicts(needing, output_dir, rules, official)
        verdicts, replies, offline = {}, {}, 0
        for r in needing:
            iid = r["interaction_id"]
            if iid in kept:
                verdicts[iid], replies[iid] = kept[iid]["verdict"], kept[iid]["reply"]
            elif has_answer_forms(r):
                verdicts[iid], replies[iid] = lexical_verdict(
                    r["agent_response"], r.get("ans_accepted"), bool(r.get("abstain_expected")))
                offline += 1
            else:
                verdicts[iid] = None
        judges: dict[str, int] = {}
        for verdict in kept.values():
            judges[verdict["judge"]] = judges.get(verdict["judge"], 0) + 1
        counts["kept_verdict_turns"] = len(kept)
        counts["kept_verdict_judges"] = judges  # judge label -> turns whose saved verdict it gave
        counts["offline_judged_turns"] = offline
        counts["unjudged_turns"] = len(needing) - len(kept) - offline
        return verdicts, replies, counts
    saved = saved_verdicts(output_dir)
    verdicts: dict[str, bool | None] = {}
    replies: dict[str, str | None] = {}
    keys, items = {}, []
    for r in needing:
        item = JudgeItem(r["interaction_id"], r["query"], r["ground_truth"], r["agent_response"])
        keys[item.key] = judge.cache_key(item)
        if keys[item.key] in saved:
            verdicts[item.key], replies[item.key] = saved[keys[item.key]]
        else:
            items.append(item)
    counts["judge_asked"] = len(items)
    bar = progress_bar(len(items), "Judging answers", progress)

    def on_done(outcome):
        verdicts[outcome.key] = outcome.verdict
        replies[outcome.key] = outcome.reply
        counts["judge_cache_hits"] += int(outcome.cached)
        counts["judge_not_asked"] += int(outcome.verdict is None and outcome.attempts == 0 and not outcome.cached)
        counts["judge_rate_limit_waits"] += outcome.waits
        counts["judge_waited_s_max_turn"] = max(counts["judge_waited_s_max_turn"], round(outcome.waited_s, 3))
        append_jsonl(output_dir / JUDGMENTS, [{
            "interaction_id": outcome.key, "key": keys[outcome.key], "judge": judge.label,
            "verdict": outcome.verdict, "attempts": outcome.attempts, "cached": outcome.cached,
            "error": outcome.error, "reply": outcome.reply, "waits": outcome.waits,
            "waited_s": round(outcome.waited_s, 3)}])
        bar.update(1)

    judge.judge_all(items, on_done)
    bar.close()
    # every turn without a verdict is unjudged: it failed every attempt, or the judge had given up
    counts["unjudged_turns"] = sum(1 for r in needing if verdicts.get(r["interaction_id"]) is None)
    counts["judge_failures"] = counts["unjudged_turns"] - counts["judge_not_asked"]
    counts["judge_gave_up"] = judge.gave_up
    return verdicts, replies, counts


def kept_verdict_notices(counts: dict) -> list[str]:
    """What a scoring without a judge took from the verdicts saved earlier (none where it kept none)."""
    judges = counts.get("kept_verdict_judges") or {}
    if not judges:
        return []
    by_whom = " and ".join(f"{label} ({turns})" for label, turns in judges.items())
    rest = counts["offline_judged_turns"] + counts["unjudged_turns"]
    if not rest:
        tail = "every turn that needed the judge has one"
    else:
        tail = (f"the {rest} turns without one are scored by exact match ({counts['offline_judged_turns']} of them "
                f"decided by the {OFFLINE_JUDGE_LABEL}, {counts['unjudged_turns']} left without a verdict)")
    notices = [f"no LLM judge: {counts['kept_verdict_turns']} turns keep the verdicts {by_whom} saved in "
               f"{JUDGMENTS}; {tail}"]
    if len(judges) > 1:
        notices.append(f"the saved verdicts kept come from {len(judges)} judges, mixed in these scores: {by_whom}")
    return notices


def build_rows(records: list[dict], verdicts: dict, replies: dict, rules: RuleSet) -> list[dict]:
    """One row per turn, sorted by (session_id, turn_idx) as the official files are: the 18
    official columns with the flags before the multi-turn cut, plus raw_answer, judge_reply,
    error and the label names for the extended files."""
    rows = []
    for record in sorted(records, key=lambda r: (r["session_id"], r["turn_idx"])):
        iid = record["interaction_id"]
        row = {c: record.get(c) for c in BASE_COLUMNS}
        row.update(verdict_fields(record["agent_response"], record["ground_truth"], verdicts.get(iid),
                                  rules, replies.get(iid)))
        row.update(raw_answer=record.get("raw_answer"), judge_reply=replies.get(iid), error=record.get("error"))
        row.update({c: record.get(c) for c in LABEL_NAME_COLUMNS})  # absent in runs from before them
        row["abstain_expected"] = record.get("abstain_expected")  # for the offline judge's abstention counts
        rows.append(row)
    return rows


def write_csv(rows: list[dict], path: Path, columns: list[str]) -> None:
    import pandas as pd

    pd.DataFrame(rows, columns=columns).to_csv(path, index=False)


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def batch_summary(batches: list[dict]) -> dict:
    walls = [float(b["wall_ms"]) for b in batches]
    over = [b for b in batches if float(b["wall_ms"]) > float(b["budget_ms"])]
    return {
        "batches": len(batches),
        "budget_rule": "10 s x agent batch size per batch_generate_response call",
        "wall_ms_max": max(walls) if walls else 0.0,
        "wall_ms_p50": _percentile(walls, 50),
        "wall_ms_p95": _percentile(walls, 95),
        "over_budget_count": len(over),
        "per_batch": [{"batch": b["batch"], "shard": b.get("shard"), "turns": b["turns"],
                       "wall_ms": b["wall_ms"], "budget_ms": b["budget_ms"],
                       "run_budget_ms": b.get("run_budget_ms")} for b in batches],
        "engine_calls_per_batch": [b.get("engine_calls") for b in batches if b.get("engine_calls") is not None],
        "stage_ms_per_batch": [b.get("stage_ms") for b in batches if b.get("stage_ms") is not None],
    }


TOKEN_KINDS = ("prompt", "completion", "reasoning")


def token_summary(batches: list[dict]) -> dict:
    """What the run's model calls read and wrote, from each batch's `stage_tokens`: per stage the
    requests, tokens (prompt; completion = the answer text; reasoning = hidden reasoning, billed as
    output), replies with no text and refused requests, and the same per turn; None where no
    batch reported engine calls."""
    reported = [b for b in batches if isinstance(b.get("stage_tokens"), dict)]
    if not reported:
        return {"per_stage": None, "per_turn": None, "turns": 0}
    per_stage: dict[str, dict[str, int]] = {}
    for batch in reported:
        for stage, counts in batch["stage_tokens"].items():
            totals = per_stage.setdefault(stage, dict.fromkeys(("requests", *TOKEN_KINDS, "empty", "refused"), 0))
            for name in totals:
                totals[name] += int((counts or {}).get(name) or 0)
    turns = sum(int(b.get("turns") or 0) for b in reported)
    totals = {name: sum(c[name] for c in per_stage.values()) for name in ("requests", *TOKEN_KINDS, "empty", "refused")}
    return {
        "per_stage": per_stage,
        "total": totals,
        "turns": turns,
        "per_turn": {name: round(totals[name] / turns, 1) if turns else 0.0 for name in ("requests", *TOKEN_KINDS)},
        "empty_replies": totals["empty"],
        "refused_requests": totals["refused"],
    }


def finalize(output_dir: Path, judge: Judge | None, *, rules: RuleSet | None = None, progress: bool = True,
             notices: list[str] | None = None, official: OfficialJudge | None = None) -> Results:
    """Judge, score and write the folder's outputs. `official`: the judge prompt read with
    --judge-prompt-from (or the run's own), against which a scoring without a judge checks the
    verdicts saved in the folder before it keeps them."""
    output_dir = Path(output_dir)
    found = read_run_record(output_dir)
    run = found or RunRecord()  # a folder without a record (made elsewhere) is scored under the defaults
    rules = rules or rule_set(run.rules)
    records = list(saved_answers(output_dir).values())
    if judge is not None:  # a rejudge's (or merge's) judge becomes the run's: a later --rejudge without flags asks it again
        found = record_run_judge(output_dir, found, judge.model, judge.base_url)
    verdicts, replies, judge_counts = judge_turns(records, output_dir, judge, progress, rules, official)
    kept_judges = judge_counts.get("kept_verdict_judges") or {}
    if len(kept_judges) == 1:  # no judge now: the scores rest on the saved verdicts, so their judge is the run's
        model, base_urls, _ = judges_of_label(next(iter(kept_judges)))
        found = record_run_judge(output_dir, found, model, base_urls[-1])
    scored = score_turns(build_rows(records, verdicts, replies, rules), rules)
    judged = judged_by(judge, judge_counts, records, scored.rows, rules, official)
    write_scores(output_dir, scored, judged, rules)
    unjudged = unjudged_report(scored.rows, {iid for iid, verdict in verdicts.items() if verdict is None}, rules,
                               output_dir, judge_counts, llm_judge=judge is not None,
                               judge_model=judge.model if judge else None, judge_base_url=judge.base_url if judge else None)
    traces = latest_per_turn(read_jsonl(output_dir / TRACES), {r["interaction_id"] for r in records})
    cut = deadline_cut_report(scored.rows, traces, rules)
    notices = run_notices(list(notices or []), scored, judged, judge_counts, unjudged, cut, run)
    fault = systemic_fault(records, traces)  # every turn (or every turn of one stage) faulted
    notices = ([fault["notice"]] if fault else []) + notices
    diagnostics = write_diagnostics(output_dir, records, scored.counted_all, traces, run.oracle)
    batches = latest_per_batch(read_jsonl(output_dir / BATCHES))
    summary = {
        **summary_of_run(run, rules, batches),
        **summary_of_judging(judged, judge_counts, unjudged),
        **summary_of_turns(run, records, traces, cut, batches),
        **summary_of_scores(scored, records, traces, run, diagnostics),
        "systemic_fault": fault,
        "notices": notices,
    }
    (output_dir / "run_summary.json").write_text(json.dumps(summary, indent=2, default=str))
    # traces.jsonl is one of the five outputs even when the agent reports nothing
    (output_dir / TRACES).touch()
    return Results(scored.counted_all, scored.counted_ego, scored.scores, summary)


@dataclass
class Scored:
    """The turns' rows (official columns and our extras), the rows the scores count (the flags
    after the multi-turn cut), the scores and their intervals, for all turns and the egocentric."""
    rows: list[dict]
    ego: list[dict]
    counted_all: list[dict]
    counted_ego: list[dict]
    scores: dict
    intervals: dict


def score_turns(rows: list[dict], rules: RuleSet) -> Scored:
    ego = [r for r in rows if r["is_ego"]]
    counted_all, scores_all = score_rows(rows, rules)
    counted_ego, scores_ego = score_rows(ego, rules)
    intervals = {**method(), "all": score_intervals(counted_all), "ego": score_intervals(counted_ego)}
    return Scored(rows, ego, counted_all, counted_ego, {"all": scores_all, "ego": scores_ego}, intervals)


@dataclass
class JudgedBy:
    """Who decided the verdicts the scores rest on: the label, the judge prompt's origin (None
    without an LLM judge's verdicts), and whether the offline judge decided turns (or might have:
    nothing was kept) with its abstention figures."""
    label: str
    prompt_origin: dict | None
    offline: bool
    offline_figures: dict


def judged_by(judge: Judge | None, judge_counts: dict, records: list[dict], rows: list[dict], rules: RuleSet,
              official: OfficialJudge | None) -> JudgedBy:
    kept_judges = judge_counts.get("kept_verdict_judges") or {}
    # the prompt of the verdicts the scores rest on: the judge's, or the one the kept verdicts' keys were checked with
    prompt_origin = judge.prompt_origin if judge else (
        prompt_origin_of(protocol_for(rules, official)) if kept_judges else None)
    offline = judge is None and (judge_counts["offline_judged_turns"] > 0 or (
        not kept_judges and any(has_answer_forms(r) for r in records)))
    label = judge.label if judge else " + ".join([*kept_judges, *[OFFLINE_JUDGE_LABEL] * offline]) or "disabled"
    return JudgedBy(label, prompt_origin, offline, abstention_counts(rows) if offline else {})


def write_scores(output_dir: Path, scored: Scored, judged: JudgedBy, rules: RuleSet) -> None:
    """The official files (CSVs, scores_dictionary.json), the extended CSVs and, where the rule
    set's harness writes one, its file of generated turns."""
    write_csv(scored.rows, output_dir / OFFICIAL_FILES[0], OFFICIAL_TURN_COLUMNS)
    write_csv(scored.ego, output_dir / OFFICIAL_FILES[1], OFFICIAL_TURN_COLUMNS)
    # the official keys as they are; intervals and an offline judge's label under keys of their own
    written = {**scored.scores, INTERVALS_KEY: scored.intervals}
    if judged.offline:
        written["judge"] = {"name": OFFLINE_JUDGE_LABEL, "official": False, **judged.offline_figures}
    (output_dir / OFFICIAL_FILES[2]).write_text(json.dumps(written, indent=2))
    write_csv(scored.counted_all, output_dir / EXTENDED_FILES[0], EXTENDED_TURN_COLUMNS)
    write_csv(scored.counted_ego, output_dir / EXTENDED_FILES[1], EXTENDED_TURN_COLUMNS)
    if rules.turn_data_file:
        path = output_dir / rules.turn_data_file
        path.unlink(missing_ok=True)
        append_jsonl(path, [{c: row[c] for c in BASE_COLUMNS} for row in scored.rows])


def run_notices(given: list[str], scored: Scored, judged: JudgedBy, judge_counts: dict, unjudged: dict | None,
                cut: dict | None, run: RunRecord) -> list[str]:
    """What a reader must know, most important first: the turns the deadline cut (every score is
    read through them), the turns left without a verdict, what the run said, then the judging's
    and the resumes' notes."""
    notices = ([cut["notice"]] if cut else []) + ([unjudged["notice"]] if unjudged else []) + given
    if not scored.ego:
        notices.append("no egocentric turns in this run: the 'ego' rates are NaN (as the official "
                       "evaluator writes them), not measurements")
    notices += kept_verdict_notices(judge_counts)
    if judged.offline:
        notices.append(f"no LLM judge: the {OFFLINE_JUDGE_LABEL} decided {judge_counts['offline_judged_turns']} "
                       "turns against the data's accepted answer forms; these scores are not comparable "
                       "with LLM-judged ones")
    if judge_counts["judge_rate_limit_waits"]:
        notices.append(f"the judge answered HTTP 429/5xx and was waited out {judge_counts['judge_rate_limit_waits']} "
                       f"times (at most {judge_counts['judge_waited_s_max_turn']:.1f} s for one turn)")
    return notices + [f"resumed with --force ({f['at']}) from another system: " + "; ".join(f["differences"])
                      for f in run.forced_resumes]


def write_diagnostics(output_dir: Path, records: list[dict], counted_all: list[dict], traces: list[dict],
                      oracle: str | None) -> dict | None:
    """diagnostics.json: each stage against the dataset's human stage labels, where it has them
    (none: no file)."""
    diagnostics = diagnose(records, counted_all, traces, oracle)
    if diagnostics:
        (output_dir / DIAGNOSTICS).write_text(json.dumps(diagnostics, indent=2))
    else:
        (output_dir / DIAGNOSTICS).unlink(missing_ok=True)
    return diagnostics


def summary_of_run(run: RunRecord, rules: RuleSet, batches: list[dict]) -> dict:
    """run_summary.json's opening: what ran, on what, under which rules and tokenizer."""
    tokenizers = sorted({b["tokenizer"] for b in batches if b.get("tokenizer")})
    return {
        "run_config": run.args,
        "dataset": run.dataset,
        "dataset_type": run.dataset_type,
        "revision": run.revision,
        "split": run.split,
        "agent": run.agent,
        "profile": run.profile,
        "preset": run.preset,
        "imported": run.imported,  # another harness's run: its name, model and task
        "shard": run.shard,
        "oracle": run.oracle,
        "merged_from": run.merged_from,
        "rules": rules.name,
        "resume_forced": bool(run.forced_resumes),
        "forced_resumes": run.forced_resumes,
        "tokenizer": " + ".join(tokenizers) or run.tokenizer or "unknown",
        "conversation_selection": run.conversation_selection,
        "image_url_updates": run.image_url_updates,
    }


def summary_of_judging(judged: JudgedBy, judge_counts: dict, unjudged: dict | None) -> dict:
    return {
        "judge": judged.label,
        # where the judge's prompt came from (evaluator/scoring/official_judge.py): the text to
        # show, and the record (official: folder, git commit, sha256); null without an LLM judge
        "judge_prompt": origin_text(judged.prompt_origin) if judged.prompt_origin is not None else None,
        "judge_prompt_origin": judged.prompt_origin,
        **judge_counts,
        # the turns without a verdict: the scores with them left out and the command that judges them
        "unjudged": unjudged,
        **judged.offline_figures,
    }


def summary_of_turns(run: RunRecord, records: list[dict], traces: list[dict], cut: dict | None,
                     batches: list[dict]) -> dict:
    """How the turns went: answered, failed, cut, refused, and the batches' time and tokens."""
    errors = [r for r in records if r.get("error")]
    expected = run.expected_turns
    return {
        "turns_expected": expected,
        "turns_answered": len(records),
        "complete": expected is None or len(records) == expected,
        "agent_error_turns": len(errors),
        "agent_errors": sorted({r["error"] for r in errors})[:20],
        "deadline_cut_turns": sum(1 for t in traces if t.get("deadline_cut") is True),
        # where the deadline cut them and the scores of the cut turns and the others apart
        "deadline_cut": cut,
        # turns a stage fault turned into "I don't know" (a model server gone, an engine error)
        "stage_fault_turns": sum(1 for t in traces if t.get("branch") == "error"),
        "stage_faults": sorted({e for t in traces if t.get("branch") == "error" for e in t.get("errors") or []})[:20],
        # turns a hosted provider refused a request of (content policy, an image it would not
        # take), answered "I don't know" and counted apart from the faults
        "refused_turns": sum(1 for t in traces if t.get("branch") == "refused"),
        "refusals": sorted({e for t in traces if t.get("branch") == "refused" for e in t.get("errors") or []})[:20],
        "image_load_failures": [e for b in batches for e in (b.get("image_errors") or [])],
        **batch_summary(batches),
        "tokens": token_summary(batches),
    }


def summary_of_scores(scored: Scored, records: list[dict], traces: list[dict], run: RunRecord,
                      diagnostics: dict | None) -> dict:
    """The scores and what they break down into: intervals, breakdowns, conversations, evidence,
    the agent's own figures, the stage diagnostics."""
    return {
        "scores": scored.scores,
        INTERVALS_KEY: scored.intervals,
        "breakdowns": {c: breakdown(scored.counted_all, c) for c in BREAKDOWN_COLUMNS},
        # both rule sets' figures, by turn index and the early stop's toll; None for single turns
        "multi_turn": multi_turn_figures(scored.rows),
        "evidence_coverage": evidence_coverage(traces, records, run.dataset),
        # the agent's own figures over its traces (harness/trace_view.py)
        "agent_summary": agent_summary(run, traces),
        # diagnostics.json's stage rates (null: no turn carries stage labels)
        "diagnostics": {stage: {k: v for k, v in figures.items() if k != "by_category"}
                        for stage, figures in diagnostics["stages"].items()} if diagnostics else None,
    }


def already_merged(sources: list[Path], output_dir: Path) -> bool:
    """Whether `output_dir` holds the finished merge of exactly these folders, with every turn they
    hold now (a merge is finished once its answers are written: they are written last)."""
    try:
        record = read_run_record(output_dir)
    except (OSError, ValueError):
        return False
    if record is None or record.merged_from != [str(s) for s in sources]:
        return False
    return set(saved_answers(output_dir)) == {iid for src in sources for iid in saved_answers(src)}


def merge_runs(sources: list[Path], output_dir: Path) -> list[str]:
    """Gather shard folders into `output_dir` (answers, judgments, batches, traces, config);
    returns notices. Scoring is left to `finalize`, over the merged turn rows. Merging the same
    folders into the same place again keeps the merge there (its saved verdicts too)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    if (output_dir / ANSWERS).exists():
        if already_merged(sources, output_dir):
            return [f"{output_dir} already holds the merge of these folders: judged and scored again"]
        raise ValueError(f"{output_dir} already holds answers; merge into an empty folder")
    for name in (JUDGMENTS, TRACES, BATCHES):  # left by a merge stopped before its answers
        (output_dir / name).unlink(missing_ok=True)
    configs = []
    for src in sources:
        if not (src / ANSWERS).exists():
            raise ValueError(f"{src} has no {ANSWERS}: not an evaluation output folder")
        configs.append(read_run_record(src) or RunRecord())
    notices = []
    for key in ("dataset", "dataset_type", "split", "revision", "num_conversations", "exact_conversations",
                "rules"):
        values = {json.dumps(getattr(c, key)) for c in configs}
        if len(values) > 1:
            raise ValueError(f"folders disagree on {key}: {sorted(values)}")
    shards = [c.shard for c in configs]
    if all(shards):
        counts = {s.split("/")[1] for s in shards}
        indices = sorted(int(s.split("/")[0]) for s in shards)
        if len(counts) != 1 or indices != list(range(int(counts.pop()))):
            notices.append(f"shards {shards} do not form a complete set: the merged run is partial")
    seen: dict[str, Path] = {}
    answers = []
    served = 0
    for src, config in zip(sources, configs):
        saved = saved_answers(src).values()
        # a run_config.json from before the count was recorded: the conversations it answered
        served += config.served_conversations or len({r["session_id"] for r in saved})
        for record in saved:
            if record["interaction_id"] in seen:
                raise ValueError(f"turn {record['interaction_id']} is in both {seen[record['interaction_id']]} and {src}")
            seen[record["interaction_id"]] = src
            answers.append(record)
        for name in (JUDGMENTS, TRACES):
            append_jsonl(output_dir / name, read_jsonl(src / name))
        append_jsonl(output_dir / BATCHES, [{**b, "source": str(src)} for b in read_jsonl(src / BATCHES)])
    write_run_record(output_dir, merged_record(configs, sources, served, len(answers)))
    append_jsonl(output_dir / ANSWERS, answers)  # last: answers mark a finished merge
    return notices
