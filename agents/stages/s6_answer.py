"""Stage 6: dual-path generation in ONE engine call of up to 2B requests.

The RAG answer a' sees the question, image, history and context C; the non-RAG answer a sees
the question, image and history only. When C is empty the two prompts are the same: a greedy a
would copy a', so a is sampled at `direct_temperature` (seeded) in the same call, and the
consistency check then asks whether the model's answer is stable (the paper relies on generation
variance). `direct_temperature=0` falls back to copying a'.

a' is generated with log-probabilities (no extra call); its minimum and mean token probability
are the white-box signal of QA-Dragon's verifier (finalizer gate `min_token_prob`).

`answer_prompts = "baseline"` (the rag_baseline preset) asks in the layout of the relaunched
repository's straightforward agent for the model's family instead (agents/stages/baseline_prompt.py).
"""
from __future__ import annotations

import math

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest, ChatResult, Sampling
from agents.runtime.system import Prior, Stage
from agents.stages.baseline_prompt import baseline_messages
from agents.stages.parsing import abstains, content_lines
from agents.stages.prompts import load_prompt, quote_notes, vlm_image
from agents.stages.types import Answers, Evidence, Turn, column

_LABELS = ("final answer", "short answer", "answer")
_QUOTES = "\"“”"


def read_answer(text: str) -> tuple[str, bool]:
    """(answer, parsed): the first line that holds text once a lead-in ("Here is the answer:"), an
    "Answer:" label (alone on its line or not, with markdown) and quotes are removed; exactly
    "I don't know" for any abstention (parsing.abstains), even one broken over two lines. parsed
    is False when the reply held no answer text."""
    lines = content_lines(text, _LABELS)
    line = lines[0].strip(_QUOTES).strip() if lines else ""
    if not line:
        return IDK_ANSWER, False
    return (IDK_ANSWER if abstains(line) else line), True


def normalize_answer(text: str) -> str:
    """A short answer on one line, or exactly "I don't know"."""
    return read_answer(text)[0]


def token_probabilities(result: ChatResult) -> tuple[float | None, float | None]:
    """(minimum, mean) probability of the generated tokens; None when the engine gave none."""
    probs = [math.exp(lp) for lp in (result.token_logprobs or []) if lp is not None and not math.isnan(lp)]
    if not probs:
        return None, None
    return min(probs), sum(probs) / len(probs)


def answer_request(turn: Turn, context: str, sampling: Sampling | None = None, notes: str = "",
                   engine: ChatEngine | None = None, *, position: int | None = None,
                   baseline_style: str | None = None) -> ChatRequest:
    """`notes`: the domain's own lines (domain routing, s1b), added at the end of the question.
    `position`: the turn's place in the stage's list (ChatRequest.turn). `baseline_style`: the
    straightforward agent's prompt for that family (agents/stages/baseline_prompt.py) instead of ours."""
    if baseline_style is not None:
        messages = baseline_messages(turn, context, baseline_style)
    elif context:
        messages = load_prompt("answer_with_context").messages(
            turn.history, turn.picture, query=turn.query, context=quote_notes(context)
        )
    else:
        messages = load_prompt("answer_without_context").messages(turn.history, turn.picture, query=turn.query)
    if notes:
        messages[-1] = {**messages[-1], "content": messages[-1]["content"] + "\n\n" + notes}
    return ChatRequest(messages, image=vlm_image(turn, engine) if engine is not None else turn.image,
                       sampling=sampling, turn=position)


def answer_batch(
    turns: list[Turn], evidence: list[Evidence], engine: ChatEngine, cfg: CruiseConfig,
    domain_notes: list[str] | None = None,
) -> list[Answers]:
    """`domain_notes`: per turn, the lines domain routing adds to both answer prompts ("" none)."""
    notes = domain_notes or [""] * len(turns)
    # The non-RAG answer is CRUISE's dual path: a system whose own settings have none answers once.
    dual = cfg.has("use_dual_path") and cfg.value("use_dual_path")
    temperature = cfg.value("direct_temperature") if dual else 0.0
    greedy = Sampling(max_tokens=cfg.answer.answer_max_tokens, seed=cfg.models.seed, logprobs=True)
    sampled = Sampling(max_tokens=cfg.answer.answer_max_tokens, temperature=temperature, seed=cfg.models.seed)
    style = cfg.answer.baseline_style if cfg.answer.answer_prompts == "baseline" else None
    rag_requests = [answer_request(t, e.context, notes=n, engine=engine, position=i, baseline_style=style)
                    for i, (t, e, n) in enumerate(zip(turns, evidence, notes))]
    # The non-RAG answer: greedy where there is context (another prompt), sampled where there is
    # none (the same prompt); with direct_temperature 0 and no context it is a copy of a'.
    direct_for = [i for i, e in enumerate(evidence)
                  if dual and (e.context or temperature > 0)]
    direct_requests = [answer_request(turns[i], "", None if evidence[i].context else sampled, notes[i], engine,
                                      position=i, baseline_style=style) for i in direct_for]
    results = engine.generate(rag_requests + direct_requests, greedy, stage="answer")
    answers = []
    for r in results[: len(turns)]:
        text, parsed = read_answer(r.text)
        lowest, mean = token_probabilities(r)
        answers.append(Answers(rag=text, rag_raw=r.text, rag_parsed=parsed,
                               rag_min_token_prob=lowest, rag_mean_token_prob=mean))
    if dual:
        for a in answers:
            a.direct, a.direct_raw = a.rag, a.rag_raw
        for i, r in zip(direct_for, results[len(turns) :]):
            answers[i].direct, answers[i].direct_raw = normalize_answer(r.text), r.text
            answers[i].direct_sampled = not evidence[i].context
    return answers


def answer(batch) -> list[dict]:
    """Each turn's answers from its context (`evidence`) and its domain's lines (`notes`)."""
    found = answer_batch(batch.turns, column(batch.reads, "evidence"), batch.engines.vlm, batch.cfg,
                         column(batch.reads, "notes"))
    return [{"answers": a} for a in found]


STAGE = Stage("answer", batch_fn=answer, reads=("evidence", "notes"), writes=("answers",), parsed="answer",
              prior=Prior("answer", max_tokens=lambda cfg: cfg.answer.answer_max_tokens),
              prompts=("answer_with_context", "answer_without_context"))
