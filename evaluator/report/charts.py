"""The report's charts: matplotlib figures saved as SVG text, inlined into the HTML page.

Text stays text (svg.fonttype "none"), so the page is searchable and the charts are small; the
SVG ids are salted with a fixed string so the same run always gives the same file.
"""
from __future__ import annotations

import io

import matplotlib
import matplotlib.ticker
from matplotlib.figure import Figure

OUTCOME_COLORS = {"correct": "#2e7d32", "missed": "#9e9e9e", "hallucinated": "#c62828"}
BUDGET_COLOR = "#c62828"
STAGE_COLORS = ["#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#558b2f", "#ad1457", "#4e342e", "#37474f"]

matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "cruise-report", "font.size": 9,
                            "axes.spines.top": False, "axes.spines.right": False})


def to_svg(fig: Figure) -> str:
    """The figure as an <svg> element (no XML prolog, so it can sit inside HTML)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def error_bars(values: list[float], intervals: list[list[float] | None]) -> list[list[float]] | None:
    """matplotlib's asymmetric yerr for bars with 95% intervals (None where a bar has none)."""
    if not any(intervals):
        return None
    return [[v - i[0] if i else 0.0 for v, i in zip(values, intervals)],
            [i[1] - v if i else 0.0 for v, i in zip(values, intervals)]]


def scores_chart(scores: dict, intervals: dict | None = None) -> str:
    """Accuracy, missing and hallucination rates and truthfulness, all turns beside egocentric,
    with whiskers at the 95% intervals when given."""
    metrics = [("accuracy", "accuracy"), ("missing", "missing"), ("hallucination_rate", "hallucination"),
               ("truthfulness_score", "truthfulness")]
    fig = Figure(figsize=(6.0, 2.4))
    ax = fig.subplots()
    width = 0.38
    for offset, subset, color in ((-width / 2, "all", "#1565c0"), (width / 2, "ego", "#90caf9")):
        values = [scores.get(subset, {}).get(key, 0.0) for key, _ in metrics]
        whiskers = error_bars(values, [((intervals or {}).get(subset) or {}).get(key) for key, _ in metrics])
        bars = ax.bar([i + offset for i in range(len(metrics))], values, width, label=subset, color=color,
                      yerr=whiskers, error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#424242"})
        ax.bar_label(bars, labels=[f"{v:+.2f}" if k == "truthfulness_score" else f"{v:.0%}"
                                   for (k, _), v in zip(metrics, values)], fontsize=7, padding=1)
    ax.set_xticks(range(len(metrics)), [label for _, label in metrics])
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylim(min(-1.0, ax.get_ylim()[0]), 1.1)
    ax.legend(frameon=False, ncols=2, loc="upper right")
    return to_svg(fig)


def outcome_bars(labels: list[str], counts: list[dict], truthfulness: list[float] | None = None) -> str:
    """One horizontal bar per label, split into correct / missed / hallucinated shares; each
    label's truthfulness written at the bar's end when given."""
    fig = Figure(figsize=(6.0, 0.5 + 0.28 * max(len(labels), 1)))
    ax = fig.subplots()
    positions = list(range(len(labels)))[::-1]
    left = [0.0] * len(labels)
    for outcome, color in OUTCOME_COLORS.items():
        shares = [c[outcome] / c["count"] if c["count"] else 0.0 for c in counts]
        ax.barh(positions, shares, left=left, color=color, label=outcome, height=0.7)
        left = [a + b for a, b in zip(left, shares)]
    if truthfulness is not None:
        ax.text(1.02, len(labels) - 0.5, "truthfulness", fontsize=7, va="bottom", ha="left")
        for position, value in zip(positions, truthfulness):
            ax.text(1.02, position, f"{value:+.3f}", va="center", ha="left", fontsize=8)
    ax.set_yticks(positions, [f"{label} ({c['count']})" for label, c in zip(labels, counts)])
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    ax.legend(frameon=False, ncols=3, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return to_svg(fig)


def funnel_chart(steps: list[dict]) -> str:
    """Turns passing each check on its own (light) and passing it and every check before (dark)."""
    fig = Figure(figsize=(6.5, 0.6 + 0.3 * len(steps)))
    ax = fig.subplots()
    positions = list(range(len(steps)))[::-1]
    alone = ax.barh(positions, [s["count"] for s in steps], color="#bbdefb", height=0.75, label="passes this check")
    chain = ax.barh(positions, [s["chained"] for s in steps], color="#1565c0", height=0.45,
                    label="passes this and every check above")
    ax.bar_label(alone, labels=[str(s["count"]) for s in steps], fontsize=7, padding=2)
    ax.bar_label(chain, labels=[str(s["chained"]) for s in steps], fontsize=7, padding=2, color="white",
                 label_type="center")
    ax.set_yticks(positions, [s["label"] for s in steps])
    ax.set_xlabel("turns")
    ax.legend(frameon=False, ncols=2, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return to_svg(fig)


def batch_time_chart(batches: list[dict], stages: list[str]) -> str:
    """Per batch: the stages' wall time stacked, the whole call's wall time, the competition's
    budget and the run's own where it kept another."""
    fig = Figure(figsize=(7.0, 2.8))
    ax = fig.subplots()
    xs = list(range(len(batches)))
    bottom = [0.0] * len(batches)
    for i, stage in enumerate(stages):
        seconds = [(b.get("stage_ms") or {}).get(stage, 0.0) / 1000.0 for b in batches]
        ax.bar(xs, seconds, bottom=bottom, color=STAGE_COLORS[i % len(STAGE_COLORS)], label=stage, width=0.8)
        bottom = [a + b for a, b in zip(bottom, seconds)]
    ax.plot(xs, [b["wall_ms"] / 1000.0 for b in batches], "o", color="black", markersize=3, label="batch wall time")
    edges = [x - 0.5 for x in xs] + [xs[-1] + 0.5] if xs else []

    def budget_step(budgets_ms: list[float], style: str, label: str) -> None:
        ax.step(edges, [ms / 1000.0 for ms in budgets_ms + budgets_ms[-1:]], where="post", color=BUDGET_COLOR,
                linestyle=style, linewidth=1, label=label)

    competition = [b["budget_ms"] for b in batches]
    budget_step(competition, "--", "budget (10 s x batch size)")
    own = [b.get("run_budget_ms") for b in batches]
    if own and all(own) and own != competition:  # the run kept a budget of its own
        budget_step(own, ":", "the run's budget")
    ax.set_xlabel("batch")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_ylabel("seconds")
    ax.set_ylim(0, None)
    ax.legend(frameon=False, fontsize=7, ncols=4, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return to_svg(fig)


def truthfulness_chart(labels: list[str], scores: list[dict]) -> str:
    """Accuracy, missing, hallucination and truthfulness of several runs, grouped by run."""
    metrics = [("accuracy", "accuracy", "#2e7d32"), ("missing", "missing", "#9e9e9e"),
               ("hallucination_rate", "hallucination", "#c62828"), ("truthfulness_score", "truthfulness", "#1565c0")]
    fig = Figure(figsize=(min(1.0 + 1.4 * len(labels), 10.0), 2.6))
    ax = fig.subplots()
    width = 0.8 / len(metrics)
    for j, (key, name, color) in enumerate(metrics):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(labels))]
        ax.bar(xs, [s["all"].get(key, 0.0) for s in scores], width, color=color, label=name)
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylim(min(-1.0, ax.get_ylim()[0]), 1.05)
    ax.legend(frameon=False, ncols=4, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return to_svg(fig)
