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
import importlib.resources
import io
import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from agents.base_agent import IDK_ANSWER
from evaluator.harness.faults import FAULT_EXIT_HINT, fault_table, fault_turns
from evaluator.harness.run_record import RunRecord, read_run_record
from evaluator.harness.runner import ANSWERS, DIAGNOSTICS, TRACES, read_jsonl
from evaluator.harness.score_files import BREAKDOWN_COLUMNS, INTERVALS_KEY
from evaluator.harness.trace_view import load_trace_view
from evaluator.harness.unjudged import SHOWN_SCORES as UNJUDGED_SCORES
from evaluator.report import charts
from evaluator.report.paired import OUTCOMES, PairedComparison, compare_to_first, judge_line, outcome_of
from evaluator.scoring.coverage import ANSWER_SOURCES, COVERAGE_LABELS, coverage_figures
from evaluator.scoring.intervals import method, score_intervals
from evaluator.scoring.multi_turn import multi_turn_figures
from evaluator.scoring.scores import breakdown, is_miss, label_of, shown_score

TEMPLATES = Path(__file__).resolve().parent / "templates"
REPORT_NAME = "report.html"
OFFICIAL_CSV = "turn_evaluation_results_all.csv"
EXTENDED_CSV = "turn_evaluation_results_all_extended.csv"
BOOL_COLUMNS = ("is_ego", "is_exact_match", "is_correct", "is_miss", "is_semantically_correct", "is_hallucination")
THUMBNAIL_PX = 160
TURNS_PER_PAGE = 100

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


# --------------------------------------------------------------------------- the funnel
def funnel_steps(turns: list[dict]) -> list[dict]:
    """Counts at each step of the agent's own funnel (its traces' "funnel": {step: passed}, in
    the order the agent lists them, decided at the settings the run used), then "answered" and
    "correct" from the scored rows: turns passing the step alone, and passing it together with
    every earlier one. A turn without a trace passes none; [] when the agent reports no funnel."""
    labels: list[str] = []
    for t in turns:
        for label in ((t["trace"] or {}).get("funnel") or {}):
            if label not in labels:
                labels.append(label)
    if not labels:
        return []

    def agent_step(label):
        return lambda t: t["trace"] is not None and bool((t["trace"].get("funnel") or {}).get(label))

    checks = [(label, agent_step(label)) for label in labels] + [
        ("answered", lambda t: t["trace"] is not None and not is_miss(str(t["row"].get("agent_response") or IDK_ANSWER))),
        ("correct", lambda t: t["trace"] is not None and t["row"]["is_correct"]),
    ]
    steps = [{"label": "all turns", "count": len(turns), "chained": len(turns)}]
    passing = list(turns)
    for label, check in checks:
        count = sum(1 for t in turns if check(t))
        passing = [t for t in passing if check(t)]
        steps.append({"label": label, "count": count, "chained": len(passing)})
    return steps


# --------------------------------------------------------------------------- the agent's view
def agent_sections(run: "RunData") -> list[dict]:
    """The agent's own tables (its trace view's report_sections over the run's agent_summary; a
    run summarized before agent_summary existed kept those figures at the top of the summary)."""
    view = load_trace_view(run.record)
    sections = getattr(view, "report_sections", None)
    if sections is None:
        return []
    return sections(run.summary.get("agent_summary") or run.summary)


def recorded_settings(run: RunRecord) -> list[tuple[str, str]]:
    """The agent's settings as the run recorded them (agents/base_agent.py `describe`), shown
    as they are; [] for an agent that described none."""
    described = run.agent_description or {}
    shown = []
    for section in ("config", "where"):
        for key, value in (described.get(section) or {}).items():
            shown.append((key, json.dumps(value) if isinstance(value, (dict, list)) else str(value)))
    return shown


def turn_renderer(run: RunRecord):
    """turn -> the HTML rows of its trace, by the agent's TURN_TEMPLATE; None without one. Also
    sets the turn's "extra": the trace keys that template does not lay out."""
    view = load_trace_view(run)
    template_path = getattr(view, "TURN_TEMPLATE", None)
    shown = set(getattr(view, "SHOWN_TRACE_KEYS", ()))
    prepare = getattr(view, "prepare_turn", None)
    macro = None
    if template_path is not None:
        macro = template_environment(str(Path(template_path).parent)).get_template(
            Path(template_path).name).module.trace_details

    def render_turn(turn: dict) -> None:
        trace = turn["trace"] or {}
        if prepare is not None:
            turn.update(prepare(trace))
        laid_out = turn.get("shown_keys", shown)  # the turn's own system's page, where the view says
        turn["extra"] = {k: v for k, v in trace.items() if k not in laid_out}
        turn["trace_html"] = macro(turn) if macro is not None and turn["trace"] is not None else ""

    return render_turn


# --------------------------------------------------------------------------- images
def thumbnails(run: RunRecord, session_ids: set[str]) -> tuple[dict[str, str], str | None]:
    """session_id -> data: URI of a small JPEG of the conversation's image, and a notice when
    the images could not be read. URL images are used only when already in the local cache."""
    if not session_ids or not run.dataset:
        return {}, None
    try:
        from evaluator.harness.dataset import load_split

        ds, _, _ = load_split(run.dataset, run.revision, run.split or "validation")
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

    from agents.profiles import cache_dir

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
def run_faults(run: RunData) -> dict | None:
    """The faults table atop the report ({"turns", "rows", "left_out"}; None where no turn
    faulted): run_summary.json's, or for a run summarized before it kept one, read from the
    saved traces and answers (evaluator/harness/faults.py)."""
    if "faults" in run.summary:
        rows, turns = run.summary["faults"], run.summary.get("fault_turns", 0)
        left_out = run.summary.get("fault_rows_left_out", 0)
    else:
        answers = [t["answer"] for t in run.turns if t["answer"]]
        traces = [t["trace"] for t in run.turns if t["trace"]]
        rows, turns, left_out = fault_table(answers, traces), fault_turns(answers, traces), 0
    return {"turns": turns, "rows": rows, "left_out": left_out} if rows else None


@dataclass
class RunData:
    run_dir: Path
    label: str
    rows: list[dict]
    scores: dict
    summary: dict
    record: RunRecord  # run_config.json
    turns: list[dict] = field(default_factory=list)  # row + trace + answer record + outcome


def load_run(run_dir: Path) -> RunData:
    run_dir = Path(run_dir)
    rows = load_turn_rows(run_dir)
    scores = read_json(run_dir / "scores_dictionary.json")
    summary = read_json(run_dir / "run_summary.json")
    record = read_run_record(run_dir) or RunRecord()
    traces = {t["interaction_id"]: t for t in read_jsonl(run_dir / TRACES) if "interaction_id" in t}
    answers = {a["interaction_id"]: a for a in read_jsonl(run_dir / ANSWERS) if "interaction_id" in a}
    turns = []
    for row in rows:
        iid = row["interaction_id"]
        trace = traces.get(iid)
        turns.append({"row": row, "trace": trace, "answer": answers.get(iid, {}), "outcome": outcome_of(row),
                      "branch": (trace or {}).get("branch") or "no trace"})
    return RunData(run_dir, run_label(run_dir, record, summary), rows, scores, summary, record, turns)


def system_name(run: RunRecord, summary: dict) -> str:
    """The system a run ran, by its name: the one its agent's configuration records (`system`, a
    MODULE:NAME as the run was given it), else its trace view's summary's, else the agent class's
    name (an agent without systems)."""
    found = run.system or (summary.get("agent_summary") or {}).get("system")
    if found:
        return str(found)
    agent = str(run.agent or summary.get("agent") or "?")
    return agent.rpartition(":")[2] or agent


def run_label(run_dir: Path, run: RunRecord, summary: dict) -> str:
    """How the report and compare.html name a run: its system, with the preset beside it and its
    folder (two runs of one system apart)."""
    imported = run.imported or summary.get("imported")
    if isinstance(imported, dict):  # another harness's run (evaluator/imported_runs.py): its model on its task
        return f"{imported.get('task')}: {imported.get('harness')} model {imported.get('model')} ({Path(run_dir).name})"
    preset = summary.get("preset") or run.preset or "?"
    return f"{system_name(run, summary)} ({preset}; {Path(run_dir).name})"


def run_intervals(run: RunData) -> dict:
    """The run's 95% intervals: as scores_dictionary.json records them, else (a run scored before
    intervals were written) computed from its turn rows with the same seed and resamples."""
    saved = run.scores.get(INTERVALS_KEY)
    if isinstance(saved, dict):
        return saved
    return {**method(), "all": score_intervals(run.rows), "ego": score_intervals([r for r in run.rows if r["is_ego"]])}


def multi_turn_section(run: RunData) -> dict | None:
    """Both rule sets' multi-turn figures (evaluator/scoring/multi_turn.py), as run_summary.json
    records them, else (a run summarized before they were written) from the official turn CSV,
    whose flags are the ones before the cut; None for a single-turn run."""
    if "multi_turn" in run.summary:
        return run.summary["multi_turn"]
    official = run.run_dir / OFFICIAL_CSV
    return multi_turn_figures(load_turn_rows_from(official)) if official.exists() else None


def load_turn_rows_from(path: Path) -> list[dict]:
    import pandas as pd

    return pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")


def outcome_counts(rows: list[dict]) -> dict:
    counts = Counter(outcome_of(r) for r in rows)
    return {"count": len(rows), **{o: counts.get(o, 0) for o in OUTCOMES}}


def breakdown_sections(rows: list[dict]) -> list[dict]:
    sections = []
    for column in BREAKDOWN_COLUMNS:
        table = breakdown(rows, column)
        groups = [outcome_counts([r for r in rows if label_of(r, column) == entry[column]]) for entry in table]
        sections.append({"column": column, "table": table,
                         "chart": charts.outcome_bars([entry[column] for entry in table], groups,
                                                      [entry["truthfulness"] for entry in table]) if table else ""})
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


def token_section(summary: dict) -> dict:
    """run_summary.json's "tokens" (harness/run_summary.py token_summary), empty for a run without them."""
    tokens = summary.get("tokens") if isinstance(summary.get("tokens"), dict) else {}
    return tokens if tokens.get("per_stage") else {"per_stage": None}


def run_health(summary: dict) -> dict:
    """The run_summary.json figures besides scores and timing, as labelled rows: the judge,
    evidence coverage and what went wrong in the run."""
    coverage = summary.get("evidence_coverage") if isinstance(summary.get("evidence_coverage"), dict) else {}
    # a coverage figure without a label yet (one another change adds) is listed under its key
    labelled = {key for key, _, _ in COVERAGE_LABELS} | {"turns", *(f"{s}_turns" for s in ANSWER_SOURCES)}
    unlabelled = [(key, f"{value:.4g}" if isinstance(value, float) else str(value))
                  for key, value in coverage.items() if key not in labelled]
    errors = [("agent-error turns", summary.get("agent_error_turns", 0)),
              ("stage-fault turns", summary.get("stage_fault_turns", 0)),
              ("turns a provider refused", summary.get("refused_turns", 0)),
              ("deadline-cut turns", summary.get("deadline_cut_turns", 0)),
              ("image load failures", len(summary.get("image_load_failures") or [])),
              ("forced resumes", len(summary.get("forced_resumes") or [])),
              ("image URL updates applied", len(summary.get("image_url_updates") or []))]
    return {
        "rules": summary.get("rules"),
        "judge": [(label, summary[key]) for key, label in JUDGE_FIGURES if key in summary],
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
    session_ids = {t["row"]["session_id"] for t in run.turns}
    thumbs, image_notice = thumbnails(run.record, session_ids) if images else ({}, None)
    pages = [run.turns[i:i + TURNS_PER_PAGE] for i in range(0, len(run.turns), TURNS_PER_PAGE)]
    page_names = [turn_page_name(i) for i in range(0, len(run.turns), TURNS_PER_PAGE)]
    for name, page_turns in zip(page_names, pages):
        for turn in page_turns:
            turn["page"] = f"{pages_dir.name}/{name}"
            turn["domain"] = turn["row"].get("domain_name") or turn["row"].get("domain") or "-"
            turn["cut"] = (turn["trace"] or {}).get("deadline_cut") is True
    steps = funnel_steps(run.turns)
    unjudged = run.summary.get("unjudged") or None
    cut = run.summary.get("deadline_cut") or None
    fault = run.summary.get("systemic_fault") or None
    faults = run_faults(run)
    # the systemic fault's, the unjudged and the cut turns' notices are their banners' own text:
    # shown once, in the banner
    notices = [n for n in run.summary.get("notices") or []
               if not any(part and n == part.get("notice") for part in (unjudged, cut, fault))]
    notices += [image_notice] if image_notice else []
    intervals = run_intervals(run)
    page = render("report.html.j2", run=run, scores=run.scores, intervals=intervals,
                  notices=notices, settings=recorded_settings(run.record),
                  unjudged=unjudged, unjudged_scores=UNJUDGED_SCORES, deadline_cut=cut, systemic_fault=fault,
                  faults=faults, fault_exit_hint=FAULT_EXIT_HINT,
                  scores_chart=charts.scores_chart(run.scores, intervals) if run.scores else "",
                  breakdowns=breakdown_sections(run.rows), funnel=steps,
                  funnel_chart=charts.funnel_chart(steps) if steps else "", agent_sections=agent_sections(run),
                  timing=timing_section(run.summary), tokens=token_section(run.summary), health=run_health(run.summary),
                  outcomes=OUTCOMES, branches=sorted({t["branch"] for t in run.turns}),
                  domains=sorted({t["domain"] for t in run.turns}), turn_pages=page_names,
                  pages_dir=pages_dir.name, outcome_totals=outcome_counts(run.rows), idk=IDK_ANSWER,
                  multi_turn=multi_turn_section(run), judge_line=judge_line(run.summary),
                  diagnostics=read_json(run.run_dir / DIAGNOSTICS) or None)
    # the pages of an earlier build may hold turns this one does not
    shutil.rmtree(pages_dir, ignore_errors=True)
    pages_dir.mkdir(parents=True)
    render_turn = turn_renderer(run.record)
    for n, (name, page_turns) in enumerate(zip(page_names, pages)):
        for turn in page_turns:
            turn["thumbnail"] = thumbs.get(turn["row"]["session_id"])
            render_turn(turn)
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
                  judge_lines=[judge_line(r.summary) for r in runs],
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


def package_template(name: str) -> str | None:
    """The template `PACKAGE:PATH` names, read from that installed or importable package (a
    system's turn page kept in its own package); None for any other name, or one not found."""
    package, colon, path = name.partition(":")
    if not colon or not package:
        return None
    try:
        found = importlib.resources.files(package).joinpath(*path.split("/"))
        return found.read_text(encoding="utf-8") if found.is_file() else None
    except (ImportError, TypeError):  # no such package, or a module that is not one
        return None


@functools.lru_cache(maxsize=4)
def template_environment(agent_templates: str | None = None):
    """One Jinja2 environment per process (and agent template folder): it compiles each template
    once, not once per turn page. An agent's turn template finds the report's macros beside it,
    and a page named `PACKAGE:PATH` is read from that package (`package_template`)."""
    from jinja2 import ChoiceLoader, Environment, FileSystemLoader, FunctionLoader, StrictUndefined, select_autoescape

    folders = [TEMPLATES] + ([agent_templates] if agent_templates else [])
    loader = ChoiceLoader([FileSystemLoader(folders), FunctionLoader(package_template)])
    env = Environment(loader=loader, autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["pretty"] = lambda value: json.dumps(value, indent=1, ensure_ascii=False, default=str)
    env.filters["pct"] = lambda value: f"{value:.1%}"
    env.filters["score"] = shown_score  # scores|score(key, fmt): "-" where a set of no turns has none
    env.filters["interval"] = interval_text
    return env


def render(template: str, **context) -> str:
    return template_environment().get_template(template).render(**context)
