"""report.html (one run) and compare.html (several runs): pages built from an output folder with
Jinja2 templates (evaluator/report/templates/) and matplotlib SVG charts.

Everything is read back from the files a run leaves (turn CSV, scores_dictionary.json,
run_summary.json, traces.jsonl, answers.jsonl, run_config.json), so a report can be built for
any finished, resumed, rejudged or merged run.

A run's report is report.html plus report_turns/: report.html holds the scores, breakdowns,
funnel, timing and one short row per turn with filters (outcome, domain, branch, deadline cut);
each turn's full trace lives on a page of report_turns/ (TURNS_PER_PAGE turns each), which the
row links to. A whole validation split (~4k turns, ~25 KB of trace each) so stays a page of a
few MB that a browser opens at once, and every page works from file:// without a server. Images
are embedded as small base64 thumbnails on the turn pages; no page fetches anything.
"""
from __future__ import annotations

import base64
import functools
import io
import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from agents.base_agent import IDK_ANSWER
from evaluator.harness.outputs import BREAKDOWN_COLUMNS, INTERVALS_KEY
from evaluator.harness.runner import ANSWERS, RUN_CONFIG, TRACES, read_jsonl
from evaluator.harness.unjudged import SHOWN_SCORES as UNJUDGED_SCORES
from evaluator.report import charts
from evaluator.report.paired import OUTCOMES, PairedComparison, compare_to_first, outcome_of
from evaluator.scoring.coverage import ANSWER_SOURCES, COVERAGE_LABELS, coverage_figures
from evaluator.scoring.intervals import method, score_intervals
from evaluator.scoring.scores import breakdown, is_miss, label_of

TEMPLATES = Path(__file__).resolve().parent / "templates"
REPORT_NAME = "report.html"
OFFICIAL_CSV = "turn_evaluation_results_all.csv"
EXTENDED_CSV = "turn_evaluation_results_all_extended.csv"
BOOL_COLUMNS = ("is_ego", "is_exact_match", "is_correct", "is_miss", "is_semantically_correct", "is_hallucination")
THUMBNAIL_PX = 160
TURNS_PER_PAGE = 100

# Trace keys the turn details lay out by hand; any other key is shown as it is under "more".
SHOWN_TRACE_KEYS = {
    "interaction_id", "session_id", "turn_idx", "preset", "needs_external", "is_real_time", "router_parsed",
    "router_raw", "summary", "retrieval_query", "retrieved", "chunks", "theta", "kept_chunks", "context",
    "retrieval_score", "rag_answer", "rag_raw", "direct_answer", "direct_raw", "consistent", "consistency_raw",
    "cov_confidence", "cov_raw", "branch", "final_answer", "stage_ms", "deadline_cut", "deadline_cut_before",
    "errors",
    # the peer stages (shown in their own rows)
    "route_search", "question_type", "domain", "domain_source", "domain_notes", "router_extras_parsed",
    "searches_run", "crop_object", "crop_boxes", "crop_raw", "crops_searched", "sub_queries", "decompose_raw",
    "entity_verdicts", "entities_rejected", "entity_check_raw", "chunks_dropped_entity", "relevance",
    "chunks_dropped_irrelevant", "relevance_raw",
    # perception for a text-only VLM (its own row)
    "perception",
}
# run_summary.json's judge figures (outputs.judge_rows), in the order a reader asks about them.
JUDGE_FIGURES = [
    ("needing_judge", "turns that needed the judge"), ("judge_asked", "asked"),
    ("judge_cache_hits", "answered from the verdict cache"), ("judge_failures", "failed every attempt"),
    ("judge_not_asked", "not asked (the judge had given up)"), ("unjudged_turns", "left unjudged"), ("judge_rate_limit_waits", "HTTP 429/5xx waited out"),
    ("judge_waited_s_max_turn", "longest wait for one turn (s)"),
    ("offline_judged_turns", "decided by the offline lexical judge"),
    ("abstain_expected_turns", "turns whose right reply is to abstain"),
    ("abstain_expected_abstained", "... abstained on (missing, 0)"),
    ("abstain_expected_answered", "... answered (hallucination)"),
]


def as_bool(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def load_turn_rows(run_dir: Path) -> list[dict]:
    """The run's scored turn rows: the extended CSV when the run wrote one, else the official
    CSV (is_hallucination derived when absent: neither correct nor a miss)."""
    import pandas as pd

    path = run_dir / EXTENDED_CSV
    if not path.exists():
        path = run_dir / OFFICIAL_CSV
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} has neither {EXTENDED_CSV} nor {OFFICIAL_CSV}: not a finished run")
    rows = pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")
    for row in rows:
        for column in BOOL_COLUMNS:
            if column in row:
                row[column] = as_bool(row[column])
        if "is_hallucination" not in row:
            row["is_hallucination"] = not row["is_correct"] and not row["is_miss"]
        row["turn_idx"] = int(row.get("turn_idx") or 0)
    return rows


def read_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


# --------------------------------------------------------------------------- thresholds
def run_thresholds(summary: dict, run_config: dict) -> dict:
    """tau_low, tau_high and the preset's switches as the agent ran them: the profile and preset
    from the run, with the run's --set overrides. Missing pieces fall back to the defaults."""
    from agents.config import PRESETS, PROFILES, load_config

    profile = summary.get("profile") or run_config.get("profile") or "cpu"
    preset = summary.get("preset") or run_config.get("preset") or "full"
    settings = (summary.get("run_config") or run_config.get("args") or {}).get("set") or []
    try:
        cfg = load_config(profile if profile in PROFILES else "cpu",
                          preset if preset in PRESETS else "full")
        overrides = {}
        for setting in settings:
            key, _, value = str(setting).partition("=")
            key = key.strip().lower()
            if key in ("tau_low", "tau_high", "tau_ret"):
                overrides[key] = float(value)
        cfg = cfg.replace(**overrides)
    except ValueError:  # a malformed setting: show the defaults
        from agents.config import CruiseConfig

        cfg = CruiseConfig()
    return {"tau_low": cfg.tau_low, "tau_high": cfg.tau_high, "tau_ret": cfg.tau_ret,
            "use_self_consistency": cfg.use_self_consistency, "use_cov": cfg.use_cov}


# --------------------------------------------------------------------------- the funnel
def funnel_steps(turns: list[dict], thresholds: dict) -> list[dict]:
    """Counts at each step of the chain: turns passing the check alone, and passing it together
    with every earlier check. A turn without a trace (agent error, unreadable image) passes none."""
    def rag_not_idk(t):
        return bool(t.get("rag_answer")) and not is_miss(str(t["rag_answer"]))

    def cov_passes(t):
        if not thresholds["use_cov"]:
            return True
        threshold = thresholds["tau_low"] if t.get("context") else thresholds["tau_high"]
        return t.get("cov_confidence") is not None and float(t["cov_confidence"]) >= threshold

    ran = peer_stages_that_ran([t["trace"] for t in turns if t["trace"] is not None])
    checks = [
        ("routed to retrieval", lambda t, row: t.get("needs_external") is True),
        *([("tool router chose a search", lambda t, row: t.get("route_search") != "none")] if "tool route" in ran else []),
        ("retrieved", lambda t, row: bool(t.get("retrieved"))),
        *([("chunks left after the entity check", lambda t, row: bool(t.get("chunks")))] if "entity check" in ran else []),
        *([("context after the MAD filter", lambda t, row: bool(t.get("context") or t.get("chunks_dropped_irrelevant")))]
          if "relevance filter" in ran else []),
        ("non-empty context", lambda t, row: bool(t.get("context"))),
        ("RAG answer not IDK", lambda t, row: rag_not_idk(t)),
        ("consistent", lambda t, row: t.get("consistent") is True or not thresholds["use_self_consistency"]),
        (f"CoV >= threshold ({thresholds['tau_low']:g} / {thresholds['tau_high']:g})", lambda t, row: cov_passes(t)),
        ("answered", lambda t, row: bool(t.get("final_answer")) and not is_miss(str(t["final_answer"]))),
        ("correct", lambda t, row: row["is_correct"]),
    ]
    steps = [{"label": "all turns", "count": len(turns), "chained": len(turns)}]
    passing = [t for t in turns if t["trace"] is not None]
    for label, check in checks:
        count = sum(1 for t in turns if t["trace"] is not None and check(t["trace"], t["row"]))
        passing = [t for t in passing if check(t["trace"], t["row"])]
        steps.append({"label": label, "count": count, "chained": len(passing)})
    return steps


def peer_stages_that_ran(traces: list[dict]) -> set[str]:
    """The peer stages that left a mark on some turn of the run."""
    marks = {"tool route": "route_search", "domain route": "domain", "decomposition": "sub_queries",
             "crop search": "crops_searched", "entity check": "entity_verdicts", "relevance filter": "relevance"}
    return {stage for stage, key in marks.items() if any(t.get(key) for t in traces)}


def peer_rows(summary: dict) -> list[tuple[str, str]]:
    """The report's "added stages" table: (what, how many) from run_summary.json's peer_stages."""
    counts = summary.get("peer_stages") or {}
    if not any(v for v in counts.values()):
        return []

    def tally(name):
        return ", ".join(f"{k} {v}" for k, v in sorted((counts.get(name) or {}).items(), key=lambda kv: -kv[1])) or "-"

    return [
        ("search chosen by the tool router", tally("route_search")),
        ("question type (decomposition)", tally("question_type")),
        ("domain", tally("domain")),
        ("turns whose answer prompt got domain notes", str(counts.get("turns_with_domain_notes", 0))),
        ("turns decomposed / sub-queries searched", f"{counts.get('turns_decomposed', 0)} / {counts.get('sub_queries', 0)}"),
        ("turns cropped / crops searched", f"{counts.get('turns_cropped', 0)} / {counts.get('crops_searched', 0)}"),
        ("entities checked / rejected", f"{counts.get('entities_checked', 0)} / {counts.get('entities_rejected', 0)}"),
        ("chunks dropped with rejected entities", str(counts.get("chunks_dropped_entity", 0))),
        ("chunks judged / dropped as irrelevant", f"{counts.get('chunks_judged_relevance', 0)} / "
                                                  f"{counts.get('chunks_dropped_irrelevant', 0)}"),
        ("turns whose context the relevance filter emptied", str(counts.get("turns_context_emptied_by_relevance", 0))),
    ]


# --------------------------------------------------------------------------- images
def thumbnails(run_config: dict, session_ids: set[str]) -> tuple[dict[str, str], str | None]:
    """session_id -> data: URI of a small JPEG of the conversation's image, and a notice when
    the images could not be read. URL images are used only when already in the local cache."""
    if not session_ids or not run_config.get("dataset"):
        return {}, None
    try:
        from evaluator.harness.dataset import load_split

        ds, _, _ = load_split(run_config["dataset"], run_config.get("revision"), run_config.get("split") or "validation")
        ids = ds["session_id"]
        wanted = [i for i, sid in enumerate(ids) if sid in session_ids]
        out = {}
        for i in wanted:
            row = ds[i]
            image = row.get("image") or cached_url_image(row.get("image_url"))
            if image is not None:
                out[str(row["session_id"])] = thumbnail_uri(image)
        return out, None
    except Exception as exc:  # noqa: BLE001 - the report is still useful without pictures
        return {}, f"images not shown: {type(exc).__name__}: {exc}"


def cached_url_image(url: str | None):
    import hashlib

    from PIL import Image

    from agents.config import cache_dir

    if not url:
        return None
    path = cache_dir() / "images" / hashlib.sha256(url.encode()).hexdigest()
    return Image.open(path) if path.exists() else None


def thumbnail_uri(image) -> str:
    small = image.convert("RGB")
    small.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))
    buffer = io.BytesIO()
    small.save(buffer, format="JPEG", quality=70)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


# --------------------------------------------------------------------------- one run
@dataclass
class RunData:
    run_dir: Path
    label: str
    rows: list[dict]
    scores: dict
    summary: dict
    run_config: dict
    turns: list[dict] = field(default_factory=list)  # row + trace + answer record + outcome


def load_run(run_dir: Path) -> RunData:
    run_dir = Path(run_dir)
    rows = load_turn_rows(run_dir)
    scores = read_json(run_dir / "scores_dictionary.json")
    summary = read_json(run_dir / "run_summary.json")
    run_config = read_json(run_dir / RUN_CONFIG)
    traces = {t["interaction_id"]: t for t in read_jsonl(run_dir / TRACES) if "interaction_id" in t}
    answers = {a["interaction_id"]: a for a in read_jsonl(run_dir / ANSWERS) if "interaction_id" in a}
    preset = summary.get("preset") or run_config.get("preset") or "?"
    turns = []
    for row in rows:
        iid = row["interaction_id"]
        trace = traces.get(iid)
        turns.append({"row": row, "trace": trace, "answer": answers.get(iid, {}), "outcome": outcome_of(row),
                      "branch": (trace or {}).get("branch") or "no trace"})
    return RunData(run_dir, f"{preset} ({run_dir.name})", rows, scores, summary, run_config, turns)


def run_intervals(run: RunData) -> dict:
    """The run's 95% intervals: as scores_dictionary.json records them, else (a run scored before
    intervals were written) computed from its turn rows with the same seed and resamples."""
    saved = run.scores.get(INTERVALS_KEY)
    if isinstance(saved, dict):
        return saved
    return {**method(), "all": score_intervals(run.rows), "ego": score_intervals([r for r in run.rows if r["is_ego"]])}


def outcome_counts(rows: list[dict]) -> dict:
    counts = Counter(outcome_of(r) for r in rows)
    return {"count": len(rows), **{o: counts.get(o, 0) for o in OUTCOMES}}


def breakdown_sections(rows: list[dict]) -> list[dict]:
    sections = []
    for column in BREAKDOWN_COLUMNS:
        table = breakdown(rows, column)
        groups = [outcome_counts([r for r in rows if label_of(r, column) == entry[column]]) for entry in table]
        sections.append({"column": column, "table": table,
                         "chart": charts.outcome_bars([entry[column] for entry in table], groups) if table else ""})
    return sections


def timing_section(summary: dict) -> dict:
    batches = []
    stage_ms = summary.get("stage_ms_per_batch") or []
    calls = summary.get("engine_calls_per_batch") or []
    for i, batch in enumerate(summary.get("per_batch") or []):
        batches.append({**batch, "stage_ms": stage_ms[i] if i < len(stage_ms) else {},
                        "engine_calls": calls[i] if i < len(calls) else None})
    stages = []
    for batch in batches:
        for stage in batch["stage_ms"] or {}:
            if stage not in stages:
                stages.append(stage)
    totals = [{"stage": s, "total_s": sum((b["stage_ms"] or {}).get(s, 0.0) for b in batches) / 1000.0,
               "batches": sum(1 for b in batches if s in (b["stage_ms"] or {}))} for s in stages]
    return {"batches": batches, "stages": totals,
            "chart": charts.batch_time_chart(batches, stages) if batches else "",
            "wall_total_s": sum(b["wall_ms"] for b in batches) / 1000.0}


def run_health(summary: dict) -> dict:
    """The run_summary.json figures besides scores and timing, as labelled rows: the judge, the
    parsers' unreadable outputs per stage, evidence coverage and what went wrong in the run."""
    read = summary.get("parsed_outputs") if isinstance(summary.get("parsed_outputs"), dict) else {}
    failures = summary.get("parse_failures") if isinstance(summary.get("parse_failures"), dict) else {}
    coverage = summary.get("evidence_coverage") if isinstance(summary.get("evidence_coverage"), dict) else {}
    # a coverage figure without a label yet (one another change adds) is listed under its key
    labelled = {key for key, _, _ in COVERAGE_LABELS} | {"turns", *(f"{s}_turns" for s in ANSWER_SOURCES)}
    unlabelled = [(key, f"{value:.4g}" if isinstance(value, float) else str(value))
                  for key, value in coverage.items() if key not in labelled]
    errors = [("agent-error turns", summary.get("agent_error_turns", 0)),
              ("deadline-cut turns", summary.get("deadline_cut_turns", 0)),
              ("image load failures", len(summary.get("image_load_failures") or [])),
              ("forced resumes", len(summary.get("forced_resumes") or [])),
              ("image URL updates applied", len(summary.get("image_url_updates") or []))]
    return {
        "rules": summary.get("rules"),
        "judge": [(label, summary[key]) for key, label in JUDGE_FIGURES if key in summary],
        "parsing": [{"stage": stage, "unreadable": count, "read": read.get(stage, 0)}
                    for stage, count in failures.items()],
        "coverage": coverage_figures(coverage) + unlabelled,
        "coverage_turns": coverage.get("turns"),
        "errors": errors,
        "agent_errors": summary.get("agent_errors") or [],
        "image_load_failures": summary.get("image_load_failures") or [],
    }


def turn_pages_dir(report: Path) -> Path:
    """The folder of a report's turn pages: report_turns/ beside report.html."""
    return report.with_name(f"{report.stem}_turns")


def turn_page_name(position: int) -> str:
    """The turn page that holds the run's turn at `position` (its row's place in the turn CSV)."""
    return f"turns-{position // TURNS_PER_PAGE + 1:04d}.html"


def build_report(run_dir: Path, out: Path | None = None, *, images: bool = True) -> Path:
    """Write the run's report.html and its turn pages (into the run folder unless `out` is
    given); returns the report's path."""
    run = load_run(run_dir)
    path = Path(out) if out else run.run_dir / REPORT_NAME
    pages_dir = turn_pages_dir(path)
    thresholds = run_thresholds(run.summary, run.run_config)
    session_ids = {t["row"]["session_id"] for t in run.turns}
    thumbs, image_notice = thumbnails(run.run_config, session_ids) if images else ({}, None)
    pages = [run.turns[i:i + TURNS_PER_PAGE] for i in range(0, len(run.turns), TURNS_PER_PAGE)]
    page_names = [turn_page_name(i) for i in range(0, len(run.turns), TURNS_PER_PAGE)]
    for name, page_turns in zip(page_names, pages):
        for turn in page_turns:
            turn["page"] = f"{pages_dir.name}/{name}"
            turn["domain"] = turn["row"].get("domain_name") or turn["row"].get("domain") or "-"
            turn["cut"] = (turn["trace"] or {}).get("deadline_cut") is True
    steps = funnel_steps(run.turns, thresholds)
    unjudged = run.summary.get("unjudged") or None
    # the unjudged turns' notice is the banner's own text: shown once, in the banner
    notices = [n for n in run.summary.get("notices") or [] if not unjudged or n != unjudged.get("notice")]
    notices += [image_notice] if image_notice else []
    intervals = run_intervals(run)
    page = render("report.html.j2", run=run, scores=run.scores, intervals=intervals,
                  thresholds=thresholds, notices=notices, unjudged=unjudged, unjudged_scores=UNJUDGED_SCORES,
                  scores_chart=charts.scores_chart(run.scores, intervals) if run.scores else "",
                  breakdowns=breakdown_sections(run.rows), funnel=steps, funnel_chart=charts.funnel_chart(steps),
                  peer_rows=peer_rows(run.summary),
                  timing=timing_section(run.summary), health=run_health(run.summary),
                  outcomes=OUTCOMES, branches=sorted({t["branch"] for t in run.turns}),
                  domains=sorted({t["domain"] for t in run.turns}), turn_pages=page_names,
                  pages_dir=pages_dir.name, outcome_totals=outcome_counts(run.rows), idk=IDK_ANSWER)
    # the pages of an earlier build may hold turns this one does not
    shutil.rmtree(pages_dir, ignore_errors=True)
    pages_dir.mkdir(parents=True)
    for n, (name, page_turns) in enumerate(zip(page_names, pages)):
        for turn in page_turns:
            turn["thumbnail"] = thumbs.get(turn["row"]["session_id"])
            trace = turn["trace"] or {}
            kept = set(trace.get("kept_chunks") or [])
            turn["chunks"] = sorted(({**c, "kept": c.get("text") in kept} for c in trace.get("chunks") or []),
                                    key=lambda c: -(c.get("score") or 0.0))
            turn["extra"] = {k: v for k, v in trace.items() if k not in SHOWN_TRACE_KEYS}
        first = n * TURNS_PER_PAGE + 1
        (pages_dir / name).write_text(render(
            "turns.html.j2", run=run, turns=page_turns, first=first, last=first + len(page_turns) - 1,
            total=len(run.turns), report_name=path.name, idk=IDK_ANSWER,
            previous=page_names[n - 1] if n > 0 else None,
            following=page_names[n + 1] if n + 1 < len(page_names) else None), encoding="utf-8")
    path.write_text(page, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- several runs
def load_comparison(run_dirs: list[Path], out: Path) -> tuple[list[RunData], list[PairedComparison]]:
    """The runs, and each run after the first paired with the first. A flipped turn links to its
    page in the run's report_turns/ (relative to `out`); a run without its report gets it built."""
    runs = [load_run(Path(d)) for d in run_dirs]
    positions = {id(run): {r["interaction_id"]: i for i, r in enumerate(run.rows)} for run in runs}
    base = Path(out).resolve().parent

    def link(run: RunData, row: dict) -> str:
        report = run.run_dir / REPORT_NAME
        if not turn_pages_dir(report).is_dir():
            build_report(run.run_dir)
        page = turn_pages_dir(report.resolve()) / turn_page_name(positions[id(run)][row["interaction_id"]])
        return f"{os.path.relpath(page, base)}#turn-{row['interaction_id']}"

    return runs, compare_to_first(runs, link) if len(runs) > 1 else []


def build_comparison(run_dirs: list[Path], out: Path,
                     loaded: tuple[list[RunData], list[PairedComparison]] | None = None) -> Path:
    """compare.html: the paper's Table 1 over the runs with their 95% intervals, each run paired
    with the first (differences, flip table, flipped turns), and the turns on which they differ.
    `loaded`: what load_comparison returned, when the caller has it already."""
    runs, pairs = loaded or load_comparison(run_dirs, out)
    labels = [r.label for r in runs]
    by_turn: dict[str, list] = {}
    for index, run in enumerate(runs):
        for turn in run.turns:
            by_turn.setdefault(turn["row"]["interaction_id"], [None] * len(runs))[index] = turn
    differences = []
    for iid, entries in by_turn.items():
        outcomes = {e["outcome"] for e in entries if e is not None}
        if "correct" in outcomes and len(outcomes) > 1:
            first = next(e for e in entries if e is not None)
            differences.append({"interaction_id": iid, "row": first["row"], "entries": entries})
    differences.sort(key=lambda d: (d["row"]["session_id"], d["row"]["turn_idx"]))
    shared = sum(1 for entries in by_turn.values() if all(e is not None for e in entries))
    page = render("compare.html.j2", runs=runs, labels=labels, differences=differences, shared_turns=shared,
                  intervals=[run_intervals(r) for r in runs], pairs=pairs, interval_method=method(),
                  chart=charts.truthfulness_chart(labels, [r.scores for r in runs]))
    out = Path(out)
    out.write_text(page, encoding="utf-8")
    return out


def interval_text(interval, kind: str = "rate") -> str:
    """[low, high] as the page writes the score: a rate in percent, a score to 3 decimals
    ("signed": with its sign, as differences and truthfulness are shown)."""
    if not interval:
        return ""
    low, high = interval
    if kind == "rate":
        return f"[{low:.1%}, {high:.1%}]"
    if kind == "signed":
        return f"[{low:+.3f}, {high:+.3f}]"
    return f"[{low:.4f}, {high:.4f}]"


@functools.lru_cache(maxsize=1)
def template_environment():
    """One Jinja2 environment per process: it compiles each template once, not once per turn page."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["pretty"] = lambda value: json.dumps(value, indent=1, ensure_ascii=False, default=str)
    env.filters["pct"] = lambda value: f"{value:.1%}"
    env.filters["interval"] = interval_text
    return env


def render(template: str, **context) -> str:
    return template_environment().get_template(template).render(**context)
