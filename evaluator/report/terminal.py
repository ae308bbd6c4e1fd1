"""What a run prints: the faults, scores (all and egocentric) with their 95% intervals,
breakdowns, timing, example turns; and what a comparison of runs prints (print_paired)."""
from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from evaluator.harness.faults import FAULT_EXIT_HINT
from evaluator.harness.outputs import Results
from evaluator.harness.score_files import BREAKDOWN_COLUMNS, INTERVALS_KEY
from evaluator.harness.unjudged import SHOWN_SCORES as UNJUDGED_SCORES
from evaluator.report.paired import PairedComparison, judge_line
from evaluator.scoring.coverage import coverage_figures
from evaluator.scoring.scores import breakdown, shown_score

SCORE_LABELS = [
    ("total", "Total turns", "{:.0f}"),
    ("correct_exact", "Exact matches", "{:.0f}"),
    ("correct", "Correct", "{:.0f}"),
    ("miss", "Missed (I don't know)", "{:.0f}"),
    ("hallucination", "Hallucinated", "{:.0f}"),
    ("exact_match", "Exact match rate", "{:.2%}"),
    ("accuracy", "Accuracy", "{:.2%}"),
    ("missing", "Missing rate", "{:.2%}"),
    ("hallucination_rate", "Hallucination rate", "{:.2%}"),
    ("truthfulness_score", "Truthfulness", "{:.4f}"),
    ("mean_multi_turn_conversation_score", "Mean conversation score", "{:.4f}"),
]


def loud_notice(console: Console, title: str, text: str) -> None:
    console.print(Panel(f"[bold red]{text}[/bold red]", title=f"[bold red]{title}[/bold red]",
                        border_style="red", expand=False, padding=(1, 4)))


def interval_text(interval: list[float] | None, fmt: str) -> str:
    """'[low, high]' in the score's own format, or '' where there is no interval."""
    if not interval:
        return ""
    return f"[{fmt.format(interval[0])}, {fmt.format(interval[1])}]"


def scores_table(scores: dict, intervals: dict | None = None) -> Table:
    intervals = intervals or {}
    title = "Scores"
    if intervals:
        title += (f" (95% intervals: bootstrap over conversations, {intervals.get('resamples')} resamples, "
                  f"seed {intervals.get('seed')})")
    table = Table(title=title)
    table.add_column("Metric")
    for subset in ("All", "Egocentric"):
        table.add_column(subset, justify="right")
        if intervals:
            table.add_column("95% interval", justify="right")
    for key, label, fmt in SCORE_LABELS:
        cells = []
        for subset in ("all", "ego"):
            cells.append(shown_score(scores[subset], key, fmt))
            if intervals:
                cells.append(interval_text((intervals.get(subset) or {}).get(key), fmt))
        table.add_row(label, *cells)
    return table


def breakdown_table(rows: list[dict], column: str) -> Table:
    table = Table(title=f"By {column} (95% intervals)")
    for name in (column, "count", "accuracy", "missing", "hallucination", "truthfulness"):
        table.add_column(name, justify="left" if name == column else "right")
    for entry in breakdown(rows, column):
        cells = [f"{entry[key]:{fmt}} {interval_text(entry.get(f'{key}_ci'), '{:' + fmt + '}')}".rstrip()
                 for key, fmt in (("accuracy", ".1%"), ("missing", ".1%"), ("hallucination", ".1%"),
                                  ("truthfulness", "+.3f"))]
        table.add_row(Text(entry[column]), str(entry["count"]), *cells)
    return table


def examples_table(rows: list[dict], count: int) -> Table:
    table = Table(title=f"Example turns (first {count})", show_lines=True)
    for name in ("session / turn", "query", "ground truth", "answer", "verdict"):
        table.add_column(name, overflow="fold")
    for row in rows[:count]:
        verdict = "correct" if row["is_correct"] else "miss" if row["is_miss"] else "hallucination"
        # Text(): answers may hold square brackets that rich would take for markup
        table.add_row(Text(f"{row['session_id'][:12]} / {row['turn_idx']}"), Text(str(row["query"])),
                      Text(str(row["ground_truth"])), Text(str(row["agent_response"])), verdict)
    return table


def coverage_table(coverage: dict) -> Table:
    table = Table(title=f"Evidence coverage ({coverage.get('turns', 0)} turns)")
    table.add_column("Measure")
    table.add_column("Value", justify="right")
    for label, value in coverage_figures(coverage):
        table.add_row(label, value)
    return table


def unjudged_panel(unjudged: dict) -> Panel:
    """Under the scores table: how many turns lack a verdict and why, the scores with them left
    out, and the command that judges them again."""
    table = Table(title="Scores with the unjudged turns left out", title_justify="left")
    table.add_column("Metric")
    table.add_column("All", justify="right")
    table.add_column("Egocentric", justify="right")
    left_out = unjudged["scores_without_unjudged"]
    for key, label, fmt in [("total", "Turns", "{:.0f}"), *[(k, n, f) for k, n, f in UNJUDGED_SCORES]]:
        table.add_row(label, *[shown_score(left_out[subset], key, fmt) for subset in ("all", "ego")])
    command = unjudged["rejudge_command"]
    how = command if unjudged.get("llm_judge") else f"set OPENAI_API_KEY (or add --eval-base-url URL), then {command}"
    lines = [Text(f"{unjudged['turns']} turns that needed the judge have no verdict ({unjudged['cause']}).",
                  style="bold red"),
             Text("They count as not correct (hallucinated), as the official evaluator counts a failed "
                  "judgement: accuracy and truthfulness above are lower bounds, the hallucination rate an upper one.")]
    if unjudged.get("gave_up"):
        lines.append(Text(unjudged["gave_up"]))
    lines += [table, Text("Judge them again: ", style="bold") + Text(how)]
    return Panel(Group(*lines), title=f"[bold red]{unjudged['turns']} TURNS WITHOUT A VERDICT[/bold red]",
                 border_style="red", expand=False)


def systemic_fault_panel(fault: dict) -> Panel:
    """Before everything else: the fault that stopped every turn (or every turn of one stage),
    where and why (evaluator/harness/faults.py)."""
    lines = [Text(fault["lines"][0], style="bold red"), *(Text(line) for line in fault["lines"][1:])]
    return Panel(Group(*lines), title=f"[bold red]SYSTEMIC FAULT: {fault['turns']} TURNS FAULTED[/bold red]",
                 border_style="red", expand=False)


def fault_place(row: dict) -> str:
    """A faults table row's stage as the table shows it (evaluator/harness/faults.py)."""
    return row["stage"] if row["stage"] else "before any stage"


def faults_table(summary: dict) -> Table:
    """Atop the scores, where any turn faulted: each stage (or rule) with the turns it faulted,
    the exception and where in the system's own code (run_summary.json "faults")."""
    turns = summary["fault_turns"]
    left_out = summary.get("fault_rows_left_out")
    caption = FAULT_EXIT_HINT + (f"; {left_out} more rows in traces.jsonl and answers.jsonl" if left_out else "")
    table = Table(title=Text(f"FAULTS: {turns} turn{'s' if turns != 1 else ''} faulted, each answered "
                             "\"I don't know\" for a fault, not for want of evidence", style="bold red"),
                  title_justify="left", border_style="red", caption=Text(caption), caption_justify="left")
    for name in ("stage (or rule)", "turns", "exception", "where"):
        table.add_column(name, justify="right" if name == "turns" else "left", overflow="fold")
    for row in summary["faults"]:
        table.add_row(Text(fault_place(row)), str(row["turns"]), Text(row["exception"]),
                      Text(row["where"] or "not recorded"))
    return table


def deadline_cut_panel(cut: dict) -> Panel:
    """Above the scores table: how many turns the deadline cut and where, that they were abstained
    for time, the scores of the turns it did not cut, and the flag that runs without the budget."""
    table = Table(title="Scores of the cut turns and of the others", title_justify="left")
    table.add_column("Metric")
    table.add_column("Cut", justify="right")
    table.add_column("Not cut", justify="right")
    for key, label, fmt in [("total", "Turns", "{:.0f}"), *UNJUDGED_SCORES]:
        table.add_row(label, *[shown_score(cut[part]["all"], key, fmt) for part in ("scores_cut", "scores_not_cut")])
    lines = [Text(f"The deadline cut {cut['turns']} of {cut['of_turns']} turns: "
                  + ", ".join(f"{where} {n}" for where, n in cut["where"].items()) + ".", style="bold red"),
             Text(f"The budget: {cut.get('budget') or 'not recorded'}."),
             Text(f"{cut['turns'] - cut['cut_answered']} of them were abstained for time, not for want of evidence: "
                  "the scores below mix the chain's own abstentions with this machine's speed."),
             table, Text("Run the same turns without the budget: add ", style="bold") + Text(cut["no_budget_flag"])]
    return Panel(Group(*lines), title=f"[bold red]{cut['turns']} TURNS CUT BY THE DEADLINE[/bold red]",
                 border_style="red", expand=False)


def tokens_table(tokens: dict) -> Table:
    """What the run's model calls read and wrote, per stage (run_summary.json "tokens")."""
    per_turn = tokens["per_turn"]
    table = Table(title=f"Tokens per stage ({tokens['turns']} turns; per turn {per_turn['prompt']:.0f} prompt, "
                        f"{per_turn['completion']:.0f} completion, {per_turn['reasoning']:.0f} reasoning)")
    for name in ("stage", "requests", "prompt", "completion", "reasoning", "empty", "refused"):
        table.add_column(name, justify="left" if name == "stage" else "right")
    for stage, counts in tokens["per_stage"].items():
        table.add_row(stage, *(str(counts.get(k, 0)) for k in ("requests", "prompt", "completion", "reasoning",
                                                                "empty", "refused")))
    return table


def no_judge_panel(summary: dict) -> Panel | None:
    """For a scoring without a judge that said nothing of it beforehand (rejudge, merge): how many
    turns keep a verdict saved earlier and how many fall back; None where a judge was asked or
    every turn that needed one keeps its saved verdict."""
    if "kept_verdict_turns" not in summary:
        return None
    offline, unjudged = summary.get("offline_judged_turns", 0), summary.get("unjudged_turns", 0)
    if not offline + unjudged:
        return None
    judges = summary.get("kept_verdict_judges") or {}
    kept = (f"{summary['kept_verdict_turns']} turns keep the verdicts {' and '.join(judges)} saved; "
            if judges else "no turn has a verdict saved by an earlier judge; ")
    lines = [kept + f"{offline + unjudged} turns without one are scored by exact match"]
    if offline:
        lines.append(f"{offline} of them are decided by the offline lexical judge (not the official judge) "
                     "against the data's accepted answer forms")
    if unjudged:
        lines.append(f"{unjudged} of them have no verdict: only an exact match would count as correct, so "
                     "accuracy is a lower bound")
    text = ("No LLM judge was asked (no OPENAI_API_KEY or --eval-base-url, or --eval-model None).\n"
            + ";\n".join(lines) + ".")
    return Panel(Text(text, style="bold red"), title="[bold red]NO JUDGE[/bold red]",
                 border_style="red", expand=False, padding=(1, 4))


def print_report(console: Console, results: Results, display_conversations: int, *,
                 judge_announced: bool = True) -> None:
    """The scores and what the run says of them; `judge_announced` False: nothing was said of a
    missing judge before scoring, so the NO JUDGE panel here says what scored the turns."""
    s = results.summary
    fault = s.get("systemic_fault")
    if fault:
        console.print(systemic_fault_panel(fault))
    if s.get("faults"):
        console.print(faults_table(s))
    cut = s.get("deadline_cut")
    if cut:
        console.print(deadline_cut_panel(cut))
    console.print(scores_table(results.scores, s.get(INTERVALS_KEY)))
    panel = None if judge_announced else no_judge_panel(s)
    if panel:
        console.print(panel)
    unjudged = s.get("unjudged")
    if unjudged:
        console.print(unjudged_panel(unjudged))
    if results.rows_all:
        for column in BREAKDOWN_COLUMNS:
            console.print(breakdown_table(results.rows_all, column))
    if s.get("evidence_coverage"):
        console.print(coverage_table(s["evidence_coverage"]))
    if display_conversations > 0 and results.rows_all:
        console.print(examples_table(results.rows_all, display_conversations))
    console.print(Text(
        f"rules: {s['rules']}\ntokenizer: {s['tokenizer']}\nconversations: {s['conversation_selection']}\n"
        f"{judge_line(s)} (turns to judge {s['judge_asked']}, "
        f"from cache {s['judge_cache_hits']}, failures {s['judge_failures']}, not asked {s.get('judge_not_asked', 0)}, "
        f"unjudged {s['unjudged_turns']})\n"
        f"batches: {s['batches']}, wall ms p50 {s['wall_ms_p50']:.0f} / p95 {s['wall_ms_p95']:.0f} / "
        f"max {s['wall_ms_max']:.0f}, over the 10 s x batch-size budget: {s['over_budget_count']}\n"
        f"turns run {s['turns_answered']} of {s['turns_expected']}; of them agent-error turns "
        f"{s['agent_error_turns']}; stage-fault turns {s.get('stage_fault_turns', 0)}; turns a provider refused "
        f"{s.get('refused_turns', 0)}; deadline-cut turns "
        f"{s['deadline_cut_turns']}; image load failures "
        f"{len(s['image_load_failures'])}"
    ))
    tokens = s.get("tokens") or {}
    if tokens.get("per_stage"):
        console.print(tokens_table(tokens))
    if "abstain_expected_turns" in s:
        console.print(Text(
            f"{s['judge']}: {s.get('offline_judged_turns', 0)} turns decided; of "
            f"{s['abstain_expected_turns']} turns whose right reply is to abstain, "
            f"{s['abstain_expected_abstained']} abstained on (counted missing) and "
            f"{s['abstain_expected_answered']} answered (counted hallucination)"))
    if s.get("parse_failures"):
        read = s.get("parsed_outputs") or {}
        console.print(Text("unreadable model outputs (safe default used): " + ", ".join(
            f"{stage} {count}/{read.get(stage, 0)}" for stage, count in s["parse_failures"].items())))
    for notice in s["notices"]:
        if any(part and notice == part["notice"] for part in (unjudged, cut, fault)):
            continue  # said in its panel
        console.print(Text(f"notice: {notice}", style="yellow"))



FLIPPED_SHOWN = 10  # flipped turns listed on the console (compare.html lists them all)
PAIRED_LABELS = [("accuracy", "Accuracy", "rate"), ("missing", "Missing", "rate"),
                 ("hallucination_rate", "Hallucination", "rate"), ("truthfulness_score", "Truthfulness", "score"),
                 ("mean_multi_turn_conversation_score", "Conversation score", "score")]


def print_paired(console: Console, pair: PairedComparison) -> None:
    """One run against the first: the refusal line, or the paired differences, the flip table
    and how many turns flipped."""
    if pair.refused:
        console.print(Text(pair.refused, style="bold red"))
        return
    for flag in pair.flags:
        console.print(Text(f"flag: {flag}", style="yellow"))
    table = Table(title=f"B - A: {pair.b} minus {pair.a} (paired bootstrap over conversations, 95%)")
    for name in ("Metric", "Turns", "A", "B", "B - A", "95% interval"):
        table.add_column(name, justify="left" if name in ("Metric", "Turns") else "right", no_wrap=True)
    for subset in ("all", "ego"):
        for key, label, kind in PAIRED_LABELS:
            d = pair.differences.get(subset, {}).get(key)
            if d is None:
                continue
            if kind == "rate":
                cells = [f"{d['a']:.1%}", f"{d['b']:.1%}", f"{100 * d['difference']:+.1f} pts",
                         f"[{100 * d['interval'][0]:+.1f}, {100 * d['interval'][1]:+.1f}]"]
            else:
                cells = [f"{d['a']:+.3f}", f"{d['b']:+.3f}", f"{d['difference']:+.3f}",
                         f"[{d['interval'][0]:+.3f}, {d['interval'][1]:+.3f}]"]
            table.add_row(label, subset, *cells,
                          end_section=key == PAIRED_LABELS[-1][0])
    console.print(table)
    flips = Table(title=f"Flip table: outcome in A ({pair.a}) -> outcome in B ({pair.b})")
    flips.add_column("A")
    flips.add_column("B")
    flips.add_column("turns", justify="right")
    for row in pair.flip_rows():
        flips.add_row(row["a"], row["b"], str(row["turns"]), style="dim" if row["a"] == row["b"] else None)
    console.print(flips)
    shown = pair.flipped[:FLIPPED_SHOWN]
    console.print(Text(f"{len(pair.flipped)} turns flipped" + (f" (the first {len(shown)} below)" if shown else "")
                       + "; the comparison page lists each with links to its turn pages"))
    for turn in shown:
        console.print(Text(f"  {turn['interaction_id']}: {turn['a_outcome']} -> {turn['b_outcome']}"))
