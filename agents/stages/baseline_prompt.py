"""The answer prompt of the straightforward RAG agent (`answer_prompts = "baseline"`, the
rag_baseline preset): the fields and order facebookresearch/CRAG-MM's example agents send for a
model's family, in our own words (prompts/baseline_*.txt), so that a baseline run and a CRUISE
run on one VLM differ only in what verification adds.

The relaunched repository (example_agents/base_agent.py `_prepare_messages`, at 36b6b4b) sends,
in order: the system text (one for a single question, one for a conversation), the image, the
retrieved text as its own user message, the conversation so far, and the question alone. Its
open-model agents (vLLM: Llama, Qwen, InternVL, Pixtral) wrap the conversation in
<conversation_history> tags and put a reminder before the question (use the search results only
when they are relevant; keep the conversation in mind; be brief or say "I don't know"). Its GPT
and Claude agents send neither. Its Gemini agent adds one line to the system text (summarise
copyrighted sources rather than quote them). The engine puts the image right after the system
message (base.template_messages), as there.
"""
from __future__ import annotations

from agents.stages.prompts import load_prompt, load_prompt_lines, quote_notes
from agents.stages.types import Turn

STYLES = ("open", "hosted", "gemini")
HISTORY_OPEN, HISTORY_CLOSE = "<conversation_history>", "</conversation_history>"


def baseline_messages(turn: Turn, context: str, style: str) -> list[dict]:
    """Role/content messages of the baseline answer for one turn (`context`: the kept notes, ""
    for none), in the layout of `style` ("open", "hosted" or "gemini")."""
    if style not in STYLES:
        raise ValueError(f"unknown baseline style {style!r}; choose one of {STYLES}")
    history = list(turn.history or [])
    prompt = load_prompt("baseline_answer_multi_turn" if history else "baseline_answer")
    system = prompt.system.substitute()
    if style == "gemini":
        system += "\n\n" + load_prompt_lines("baseline_gemini_note")
    messages = [{"role": "system", "content": system}]
    if context:
        messages.append({"role": "user", "content": f"{load_prompt_lines('baseline_search_results')}\n"
                                                    f"<search_results>\n{quote_notes(context)}\n</search_results>"})
    if history:
        if style == "open":
            messages.append({"role": "user", "content": HISTORY_OPEN})
        messages += history
        if style == "open":
            messages.append({"role": "user", "content": HISTORY_CLOSE})
    if style == "open":
        reminders = ([load_prompt_lines("baseline_reminder_notes")] if context else []) \
            + ([load_prompt_lines("baseline_reminder_history")] if history else []) \
            + [load_prompt_lines("baseline_reminder_brevity")]
        messages.append({"role": "user", "content": " ".join(reminders)})
    question = prompt.user.substitute(query=turn.query)
    # a VLM that cannot see reads the picture as text (s0a_perceive) right before the question
    messages.append({"role": "user", "content": f"{turn.picture}\n\n{question}" if turn.picture else question})
    return messages
