"""What a run prints: scores (all and egocentric), breakdowns, timing, example turns."""
from __future__ import annotations

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from evaluation.harness.outputs import BREAKDOWN_COLUMNS, Results
from evaluation.scoring.coverage import coverage_figures
from evaluation.scoring.scores import breakdown

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


def scores_table(scores: dict) -> Table:
    table = Table(title="Scores")
    table.add_column("Metric")
    table.add_column("All", justify="right")
    table.add_column("Egocentric", justify="right")
    for key, label, fmt in SCORE_LABELS:
        table.add_row(label, fmt.format(scores["all"][key]), fmt.format(scores["ego"][key]))
    return table


def breakdown_table(rows: list[dict], column: str) -> Table:
    table = Table(title=f"By {column}")
    for name in (column, "count", "accuracy", "missing", "hallucination", "truthfulness"):
        table.add_column(name, justify="left" if name == column else "right")
    for entry in breakdown(rows, column):
        table.add_row(Text(entry[column]), str(entry["count"]), f"{entry['accuracy']:.2%}",
                      f"{entry['missing']:.2%}", f"{entry['hallucination']:.2%}",
                      f"{entry['truthfulness']:+.3f}")
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


def print_report(console: Console, results: Results, display_conversations: int) -> None:
    s = results.summary
    console.print(scores_table(results.scores))
    if results.rows_all:
        for column in BREAKDOWN_COLUMNS:
            console.print(breakdown_table(results.rows_all, column))
    if s.get("evidence_coverage"):
        console.print(coverage_table(s["evidence_coverage"]))
    if display_conversations > 0 and results.rows_all:
        console.print(examples_table(results.rows_all, display_conversations))
    console.print(Text(
        f"rules: {s['rules']}\ntokenizer: {s['tokenizer']}\nconversations: {s['conversation_selection']}\n"
        f"judge: {s['judge']} (asked {s['judge_asked']}, "
        f"from cache {s['judge_cache_hits']}, failures {s['judge_failures']}, unjudged {s['unjudged_turns']})\n"
        f"batches: {s['batches']}, wall ms p50 {s['wall_ms_p50']:.0f} / p95 {s['wall_ms_p95']:.0f} / "
        f"max {s['wall_ms_max']:.0f}, over the 10 s x batch-size budget: {s['over_budget_count']}\n"
        f"turns answered {s['turns_answered']} of {s['turns_expected']}; agent-error turns "
        f"{s['agent_error_turns']}; stage-fault turns {s.get('stage_fault_turns', 0)}; deadline-cut turns "
        f"{s['deadline_cut_turns']}; image load failures "
        f"{len(s['image_load_failures'])}"
    ))
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
        console.print(Text(f"notice: {notice}", style="yellow"))

