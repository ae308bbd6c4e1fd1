"""The verdicts of a folder's saved answers: asked of the judge, or without one kept from the
verdicts an LLM judge saved there earlier (the turns with accepted answer forms left to the
offline lexical judge), and who decided them (`judged_by`).

A saved verdict counts only for exactly the same judging question: its key hashes the judge's
protocol, model, endpoint, question, ground truth and answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaluator.harness.runner import JUDGMENTS, append_jsonl, progress_bar, read_jsonl
from evaluator.scoring.judge import Judge, JudgeItem, judges_of_label, judging_key, prompt_origin_of, protocol_for
from evaluator.scoring.lexical_judge import OFFLINE_JUDGE_LABEL, abstention_counts, has_answer_forms, lexical_verdict
from evaluator.scoring.official_judge import OfficialJudge
from evaluator.scoring.rules import RuleSet
from evaluator.scoring.scores import needs_judge


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
