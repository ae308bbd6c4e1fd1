"""Every open family the agent runs in-process (and Qwen3-VL, which the GPU image serves, through
transformers), end to end on CPU: a tiny random-weight model of
the family's own transformers classes (testkit/tiny_models.py), carrying the family's chat
template (testkit/templates/SOURCES.md says where each comes from), through our
TransformersEngine and then through the whole chain (`local_evaluation.py --model-name`).

Checked per family: the prompt is the family's template's rendering of our messages; the image's
tokens are counted as the family's processor expands its placeholder; every stage of the chain
ran and is in the trace."""
from __future__ import annotations

import json

import pytest
from PIL import Image

import local_evaluation
from agents.engines.base import ChatRequest, Sampling, image_layout, template_messages
from agents.engines.transformers_engine import TransformersEngine
from agents.stacks import stack_for_model
from testkit.tiny_models import FAMILY_BUILDERS, FAMILY_TEMPLATES, chat_template

MESSAGES = [{"role": "system", "content": "You answer questions about photos briefly."},
            {"role": "user", "content": "What is in the photo?"}, {"role": "assistant", "content": "A sign."},
            {"role": "user", "content": "What colour is the sign?"}]

# Per family: an image size its tiny processor does not resize in a way we would have to guess,
# what the family's template writes for the image, and what its processor turns that into (the
# rule of each family, written out here: Qwen's pad repeated once per 28 px cell after the 2 x 2
# merge (32 px for Qwen3-VL); InternVL's <img> frame around image_seq_length context tokens per tile; Gemma 3's
# "\n\n" frame around mm_tokens_per_image soft tokens; Pixtral's rows of 16 px [IMG] patches
# closed by [IMG_BREAK], the last by [IMG_END]).
EXPANSIONS = {
    "qwen2.5-vl": ((84, 56), "<|image_pad|>", "<|image_pad|>" * (3 * 2)),
    "qwen3-vl": ((96, 64), "<|image_pad|>", "<|image_pad|>" * (3 * 2)),  # 32 px cells: 16 px patches, 2 x 2
    "internvl": ((56, 56), "<IMG_CONTEXT>", "<img>" + "<IMG_CONTEXT>" * 4 + "</img>"),
    "gemma-3": ((56, 56), "<start_of_image>", "\n\n<start_of_image>" + "<image_soft_token>" * 4 + "<end_of_image>\n\n"),
    "pixtral": ((64, 48), "[IMG]", ("[IMG]" * 4 + "[IMG_BREAK]") * 2 + "[IMG]" * 4 + "[IMG_END]"),
}


@pytest.fixture(scope="module", params=sorted(FAMILY_BUILDERS))
def family(request):
    return request.param, FAMILY_BUILDERS[request.param]()


def test_the_prompt_is_the_familys_template_and_the_image_tokens_are_its_processors(family):
    from transformers.utils.chat_template_utils import render_jinja_template

    name, path = family
    engine = TransformersEngine(path)
    template = chat_template(FAMILY_TEMPLATES[name])
    assert engine.processor.chat_template == template  # the family's template travels with the model
    size, placeholder, expansion = EXPANSIONS[name]
    request = ChatRequest(MESSAGES, image=Image.new("RGB", size, (200, 30, 30)))
    prompt = engine.prompt_text(request, with_image=True)
    tokenizer = engine.tokenizer

    def render(messages):
        rendered, _ = render_jinja_template(conversations=[messages], chat_template=template,
                                            add_generation_prompt=True, bos_token=tokenizer.bos_token or "",
                                            eos_token=tokenizer.eos_token)
        return rendered[0]

    layout = image_layout(render)
    assert layout == ("first_user" if name == "gemma-3" else "own_turn")
    assert prompt == render(template_messages(MESSAGES, with_image=True, layout=layout))
    assert prompt.count(placeholder) == 1
    [answer] = engine.generate([request], Sampling(max_tokens=4))
    [text_only] = engine.generate([ChatRequest(MESSAGES)], Sampling(max_tokens=4))
    bos = tokenizer.bos_token
    expanded = prompt.replace(placeholder, expansion)
    expected = len(tokenizer(expanded, add_special_tokens=not (bos and expanded.startswith(bos))).input_ids)
    assert answer.prompt_tokens == expected > text_only.prompt_tokens
    assert answer.output_tokens >= 1 and not answer.cut_by_deadline


CHAIN_STAGES = ("route", "summarize", "retrieve", "rerank", "answer", "consistency", "verify")


def test_the_chain_runs_end_to_end_on_the_family(family, tmp_path):
    name, path = family
    out = tmp_path / "out"
    try:
        local_evaluation.main(["--profile", "cpu", "--model-name", path, "--num-conversations", "2",
                               "--exact-conversations", "--eval-model", "None", "--output-dir", str(out),
                               "--no_progress"])
    except SystemExit as exc:
        assert exc.code in (None, 0), exc.code
    config = json.loads((out / "run_config.json").read_text())["agent_description"]["config"]
    assert (config["stack"], config["vlm_model"], config["router_model"]) == (stack_for_model(path).name, path, path)
    assert config["stack"] == name and config["perception"] == "auto"  # the VLM sees: no picture-as-text stage
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert len(traces) == len(answers) == 2
    for trace in traces:
        assert set(CHAIN_STAGES) <= set(trace["stage_ms"]), trace["stage_ms"]
        assert trace["errors"] == [] and not trace["deadline_cut"]
        assert trace["funnel"] and trace["router_raw"] and trace["summary_raw"] is not None
        assert trace["rag_raw"] is not None and trace["branch"]
        assert not trace["perception"]  # the photo went to the model, not through labels and OCR
