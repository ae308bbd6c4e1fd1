"""SAM-RAG's trace: one JSON-ready record per turn with every step's output (the isRel verdicts
per document and round, both answers and isUse verdicts when it regenerated, isSup), so that
tools/calibrate.py can replay decide.py; its funnel; and the run's figures for the report."""
from __future__ import annotations

from agents.engines.base import TOKEN_COUNT
from agents.peers.sam_rag.types import RelevanceSearch, SupportCheck, UseCheck
from agents.runtime.trace import not_idk
from agents.stages.s3_retrieve import regions_trace
from agents.stages.types import Answers, Decision, Retrieval, Summary, Turn

OUTCOMES = ("supported", "supported_after_regeneration", "unsupported", "not_useful", "not_checked", "abstained",
            "error")


def parse_outcomes(summary: Summary, relevance: RelevanceSearch, answers: Answers, use: UseCheck,
                   support: SupportCheck) -> dict[str, bool]:
    judged = [c.p_yes is not None for c in relevance.checks.values()]
    parsed = {"caption": summary.parsed, "is_rel": all(judged) if judged else None, "generate": answers.rag_parsed,
              "is_use": None if use.first is None else use.first.p_yes is not None,
              "regenerate": None if use.regenerated is None else bool(use.regenerated_raw.strip()),
              "is_sup": support.parsed}
    return {stage: ok for stage, ok in parsed.items() if ok is not None}


def turn_trace(*, turn: Turn, summary: Summary, retrieval: Retrieval, relevance: RelevanceSearch, context: str,
               answers: Answers, use: UseCheck, support: SupportCheck, candidate: str,
               decision: Decision) -> tuple[dict, dict[str, bool]]:
    """(SAM-RAG's own fields of one turn's trace, its parse outcomes): agents/runtime/trace.py
    `record` adds what every system records."""
    parsed = parse_outcomes(summary, relevance, answers, use, support)
    kept = relevance.kept
    return {
        # modality alignment and retrieval
        "summary": retrieval.summary,
        "summary_raw": summary.raw,
        "retrieval_query": retrieval.query,
        "web_query": retrieval.web_query,
        # a follow-up only: its photo's image hits were an earlier turn's (no search ran)
        **({"image_hits_reused": retrieval.image_hits_reused} if turn.history else {}),
        "searches_run": retrieval.searches,
        "retrieved": retrieval.items,
        "regions_searched": regions_trace(retrieval),
        "chunks": [{"text": text, "source": source, "score": score,
                    "is_rel": relevance.checks[i].passed if i in relevance.checks else None,
                    **({"last_modified": date} if date else {})}
                   for i, (text, source, score, date) in enumerate(zip(
                       retrieval.chunks, retrieval.chunk_sources, relevance.scores or [None] * len(retrieval.chunks),
                       retrieval.chunk_dates or [""] * len(retrieval.chunks)))],
        # isRel rounds
        "relevance_rounds": relevance.rounds,
        "relevance_judged": len(relevance.checks),
        "relevance_raw": {str(i): c.raw for i, c in relevance.checks.items()},
        "kept_chunks": [retrieval.chunks[i] for i in kept],
        "context": context,
        "retrieval_score": max(relevance.scores, default=0.0),
        # generation, isUse and the one regeneration
        "first_answer": answers.rag,
        "first_raw": answers.rag_raw,
        "is_use_first": None if use.first is None else use.first.passed,
        "is_use_first_raw": "" if use.first is None else use.first.raw,
        "regenerated": use.regenerated is not None,
        "regenerated_answer": use.regenerated,
        "regenerated_raw": use.regenerated_raw,
        "is_use_second": None if use.second is None else use.second.passed,
        "is_use": use.passed,
        # isSup and the answer it judged (calibration judges it too)
        "rag_answer": candidate,
        "rag_min_token_prob": use.regenerated_min_token_prob if use.regenerated is not None else answers.rag_min_token_prob,
        "token_count": TOKEN_COUNT,
        "is_sup_confidence": support.confidence,
        "is_sup_raw": support.raw,
        "branch": decision.branch,
        "final_answer": decision.answer,
    }, parsed


def funnel_flags(trace: dict, cfg) -> dict[str, bool]:
    """SAM-RAG's steps in order, each passed or not."""
    confidence = trace.get("is_sup_confidence")
    return {
        "retrieved": bool(trace.get("retrieved")),
        "relevant document kept (isRel)": bool(trace.get("context")),
        "answer written (not I don't know)": not_idk(trace.get("rag_answer")),
        "isUse: answers the question (one regeneration at most)": trace.get("is_use") is True,
        f"isSup: supported (>= {cfg.answer.tau_low:g})": confidence is not None and float(confidence) >= cfg.answer.tau_low,
    }


def summarize(traces: list[dict]) -> dict:
    rounds: dict[str, int] = {}
    for t in traces:
        key = str(t.get("relevance_rounds", 0))
        rounds[key] = rounds.get(key, 0) + 1
    outcomes = dict.fromkeys(OUTCOMES, 0)
    for t in traces:
        outcomes[str(t.get("branch"))] = outcomes.get(str(t.get("branch")), 0) + 1
    return {
        "sam_rag": {
            "outcomes": outcomes,
            "relevance_rounds": dict(sorted(rounds.items())),
            "documents_judged": sum(int(t.get("relevance_judged") or 0) for t in traces),
            "documents_kept": sum(len(t.get("kept_chunks") or []) for t in traces),
            "turns_with_context": sum(1 for t in traces if t.get("context")),
            "regenerated": sum(1 for t in traces if t.get("regenerated")),
            "useful_after_regeneration": sum(1 for t in traces if t.get("regenerated") and t.get("is_use") is True),
        },
    }


def report_sections(summary: dict) -> list[dict]:
    figures = summary.get("sam_rag") or {}
    rows = [[f"outcome: {k}", v] for k, v in (figures.get("outcomes") or {}).items() if v]
    rows += [[f"isRel rounds run: {k}", v] for k, v in (figures.get("relevance_rounds") or {}).items()]
    rows += [["documents judged / kept (isRel)", f"{figures.get('documents_judged', 0)} / "
                                                  f"{figures.get('documents_kept', 0)}"],
             ["turns with relevant documents", figures.get("turns_with_context", 0)],
             ["answers regenerated (isUse failed) / then useful", f"{figures.get('regenerated', 0)} / "
                                                                   f"{figures.get('useful_after_regeneration', 0)}"]]
    return [{"title": "SAM-RAG: what its checks did", "id": "sam-rag-steps", "header": ["what", "turns"], "rows": rows}]
