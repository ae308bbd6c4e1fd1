"""The production engine: vLLM offline inference (`vllm.LLM`), one `llm.generate` per batch.

Prompts are rendered with the model's own chat template (the tokenizer's `apply_chat_template`)
and images travel next to them as `multi_modal_data`. For Llama-3.2-11B-Vision-Instruct on one
L40S: bf16, eager mode (no CUDA-graph capture: faster start-up inside the 10-minute load budget),
at most one image per prompt, and no swap space: vLLM 0.10.1.1 pins `swap_space` GiB of host
memory per engine (4 by default, vllm/entrypoints/llm.py:190; allocated pinned in
vllm/worker/cache_engine.py:67,77), while our single-sequence requests are preempted by
recomputation and never swapped (vllm/core/scheduler.py:1763-1765). Sizes and their sources: tools/memory_plan.py.

Inside the batch's deadline (`base.time_limit`) a call does not go through `LLM.generate`, which
runs until every request has finished: `generate_until` adds the requests to the engine and steps
it as `LLM._run_engine` does (vllm/entrypoints/llm.py, 0.10.1.1), but stops stepping when the
next step would end after the deadline and aborts the requests still running
(`LLMEngine.abort_request`; the same four methods on the V0 engine that Mllama runs on and on V1).
Those come back cut (`ChatResult.cut_by_deadline`, empty text).

`import vllm` happens only in the constructor, so machines without vLLM can import this module.
`build_vllm_inputs`, `to_sampling_kwargs` and `generate_until` need no vLLM: they are
unit-tested with stand-ins for vLLM's API.
"""
from __future__ import annotations

import itertools
import time

from agents.engines.base import (
    ChatEngine,
    ChatRequest,
    ChatResult,
    Ledger,
    Sampling,
    call_end,
    deadline_cut_result,
    ended_on_end_token,
    image_groups,
    image_layout,
    pick_choice,
    template_messages,
)
from agents.engines.local_models import read_checkpoint_config, resolve_model


def render_prompt(tokenizer, messages: list[dict]) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def renders_image_parts(render) -> bool:
    """Whether a chat template places a typed image part (a text-only template, such as the
    original InternVL checkpoints' ChatML, prints the part as a Python list instead)."""
    try:
        shown = render([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "probe"}]}])
    except Exception:  # noqa: BLE001 - a template that refuses the part places none either
        return False
    return "'type'" not in shown


def build_vllm_inputs(requests: list[ChatRequest], tokenizer, supports_images: bool,
                      text_placeholder: str = "") -> list[dict]:
    """Our chats -> vLLM prompt dicts (`prompt`, and `multi_modal_data` when there is an image).

    Messages take the layout of `template_messages` that the model's template accepts
    (`image_layout`, asked once per call). A template that places no typed image part gets the
    family's placeholder as text instead (`text_placeholder`, ModelStack.text_placeholder: what
    the relaunched evaluator writes for InternVL), which vLLM's processor then expands."""
    bos = getattr(tokenizer, "bos_token", None)
    # vLLM tokenizes a text prompt with special tokens on; when both the template and the
    # tokenizer write the BOS, drop the template's copy so the model sees exactly one.
    adds_bos = bool(bos) and tokenizer("x").input_ids[:1] == [tokenizer.bos_token_id]
    any_image = supports_images and any(r.image is not None for r in requests)
    render = lambda m: render_prompt(tokenizer, m)  # noqa: E731
    as_text = any_image and bool(text_placeholder) and not renders_image_parts(render)
    layout = image_layout(render) if any_image and not as_text else "own_turn"
    inputs = []
    for req in requests:
        with_image = supports_images and req.image is not None
        messages = template_messages(req.messages, with_image, layout)
        if with_image and as_text:
            messages = [dict(m, content=text_placeholder) if m["content"] == [{"type": "image"}] else m
                        for m in messages]
        prompt = render_prompt(tokenizer, messages)
        if adds_bos and prompt.startswith(bos):
            prompt = prompt[len(bos):]
        item = {"prompt": prompt}
        if with_image:
            item["multi_modal_data"] = {"image": req.image.convert("RGB")}
        inputs.append(item)
    return inputs


# `Sampling.choices`: how many of the most likely next tokens vLLM reports; the choice words are
# read among them (`base.pick_choice`). 20 is the most vLLM returns by default (max_logprobs).
CHOICE_TOP_LOGPROBS = 20


def to_sampling_kwargs(sampling: Sampling) -> dict:
    """Our Sampling -> keyword arguments of vllm.SamplingParams."""
    if sampling.choices:
        return dict(max_tokens=1, temperature=0.0, top_p=1.0, stop=[], seed=sampling.seed,
                    logprobs=CHOICE_TOP_LOGPROBS)
    kwargs = dict(max_tokens=sampling.max_tokens, temperature=sampling.temperature,
                  top_p=sampling.top_p if sampling.temperature > 0 else 1.0,
                  stop=list(sampling.stop), seed=sampling.seed)
    if sampling.logprobs:
        kwargs["logprobs"] = 1  # vLLM always includes the chosen token's log-probability
    return kwargs


def to_chat_result(output, want_logprobs: bool, choices: tuple[str, ...] = ()) -> ChatResult:
    """One vLLM RequestOutput -> ChatResult (text is already cut at the stop string by vLLM).

    The end token vLLM lists last is not counted (see ChatResult); the image's encoder tokens
    count in `prompt_tokens`, as vLLM's server counts them in `usage.prompt_tokens`
    (vllm/entrypoints/openai/serving_chat.py adds `encoder_prompt_token_ids`)."""
    completion = output.outputs[0]
    prompt_tokens = len(output.prompt_token_ids or []) + len(getattr(output, "encoder_prompt_token_ids", None) or [])
    if choices:
        first = (completion.logprobs or [{}])[0]
        picked = pick_choice([(lp.decoded_token or "", lp.logprob) for lp in first.values()], choices)
        picked.prompt_tokens = prompt_tokens
        return picked
    token_ids = list(completion.token_ids)
    kept = len(token_ids) - (1 if token_ids and ended_on_end_token(completion.finish_reason,
                                                                    completion.stop_reason) else 0)
    logprobs = tokens = None
    if want_logprobs and completion.logprobs is not None:
        chosen = [step[tid] for tid, step in zip(token_ids[:kept], completion.logprobs)]
        logprobs = [float(c.logprob) for c in chosen]
        tokens = [c.decoded_token or "" for c in chosen]
    return ChatResult(text=completion.text.strip(), prompt_tokens=prompt_tokens,
                      output_tokens=kept, token_logprobs=logprobs, tokens=tokens)


_REQUEST_IDS = itertools.count()


def generate_until(llm_engine, inputs: list[dict], params: list, end: float, clock=None) -> list:
    """`LLM.generate` for `inputs` (one SamplingParams each) on `llm.llm_engine`, stopped at `end`
    (a `clock()` instant): the finished RequestOutputs in input order, None for a request aborted
    at the deadline. A step is assumed to take as long as the last one; the first (the prefill of
    every request) is taken whenever any time is left."""
    clock = clock or time.monotonic
    # Our own ids, apart from LLM's counter (plain integers): the engine is shared with it.
    ids = [f"cruise-{next(_REQUEST_IDS)}" for _ in inputs]
    finished: dict[str, object] = {}
    added: list[str] = []
    try:
        for request_id, item, param in zip(ids, inputs, params):
            if clock() >= end:
                break
            llm_engine.add_request(request_id, item, param)
            added.append(request_id)
        step_s = 0.0
        while llm_engine.has_unfinished_requests():
            before = clock()
            if before + step_s >= end:
                break
            for output in llm_engine.step():
                if output.finished:
                    finished[output.request_id] = output
            step_s = clock() - before
    finally:
        running = [r for r in added if r not in finished]
        if running:
            llm_engine.abort_request(running)
    return [finished.get(request_id) for request_id in ids]


def _is_vision_model(config: dict) -> bool:
    return "vision_config" in config or config.get("model_type") == "mllama"


def needs_remote_code(config: dict) -> bool:
    """A checkpoint whose model type transformers does not know ships its config class as code
    (the original InternVL checkpoints, model_type internvl_chat): vLLM must be allowed to run it,
    as the relaunched evaluator allows every model (trust_remote_code=True)."""
    from transformers import CONFIG_MAPPING

    model_type = config.get("model_type")
    return bool(model_type) and model_type not in CONFIG_MAPPING


def check_vllm_loads(config: dict, version: str, model: str = "") -> None:
    """Raise a clear error when this vLLM release cannot load the checkpoint's family in-process
    (agents/profiles.py: vllm_min / vllm_max of each family), naming the path that can."""
    from agents.stacks import stack_for_checkpoint, vllm_release_problem

    stack = stack_for_checkpoint(config)
    problem = vllm_release_problem(stack, version, model) if stack is not None else None
    if problem:
        raise RuntimeError(problem)


def text_placeholder_for(config: dict) -> str:
    """The family's placeholder where its checkpoints may carry a text-only template (ModelStack.text_placeholder)."""
    from agents.stacks import stack_for_checkpoint

    stack = stack_for_checkpoint(config)
    return stack.image_placeholder if stack is not None and stack.text_placeholder else ""


class VLLMEngine(ChatEngine):
    def __init__(self, model: str, ledger: Ledger | None = None, *, dtype: str = "bfloat16",
                 max_model_len: int = 8192, max_num_seqs: int = 8, gpu_memory_utilization: float = 0.735,
                 enforce_eager: bool = True, seed: int = 0, swap_space: float = 0, batch_images: bool = True,
                 **llm_kwargs):
        super().__init__(model, ledger)
        self.batch_images = batch_images
        import vllm

        path = resolve_model(model)
        checkpoint = read_checkpoint_config(path)
        check_vllm_loads(checkpoint, vllm.__version__, model)
        vision = _is_vision_model(checkpoint)
        if vision:
            llm_kwargs.setdefault("limit_mm_per_prompt", {"image": 1})
        if needs_remote_code(checkpoint):
            llm_kwargs.setdefault("trust_remote_code", True)
        llm = vllm.LLM(model=path, dtype=dtype, max_model_len=max_model_len, max_num_seqs=max_num_seqs,
                       gpu_memory_utilization=gpu_memory_utilization, enforce_eager=enforce_eager,
                       seed=seed, swap_space=swap_space, **llm_kwargs)

        self._attach(llm, vllm.SamplingParams, vision, text_placeholder_for(checkpoint))

    @classmethod
    def from_llm(cls, llm, sampling_params_cls, *, model: str, supports_images: bool,
                 ledger: Ledger | None = None, batch_images: bool = True, text_placeholder: str = "") -> "VLLMEngine":
        """Wrap an already built `vllm.LLM` (or an object with its `generate`/`get_tokenizer`)."""
        engine = cls.__new__(cls)
        ChatEngine.__init__(engine, model, ledger)
        engine.batch_images = batch_images
        engine._attach(llm, sampling_params_cls, supports_images, text_placeholder)
        return engine

    def _attach(self, llm, sampling_params_cls, supports_images: bool, text_placeholder: str = "") -> None:
        self.llm = llm
        self.tokenizer = llm.get_tokenizer()
        self.sampling_params_cls = sampling_params_cls
        self.supports_images = supports_images
        self.text_placeholder = text_placeholder

    def _generate(self, requests: list[ChatRequest], sampling: Sampling) -> list[ChatResult]:
        results: list[ChatResult | None] = [None] * len(requests)
        for group in image_groups(requests, self.batch_images or not self.supports_images):
            for i, result in zip(group, self._generate_together([requests[i] for i in group], sampling)):
                results[i] = result
        return results

    def _generate_together(self, requests: list[ChatRequest], sampling: Sampling) -> list[ChatResult]:
        inputs = build_vllm_inputs(requests, self.tokenizer, self.supports_images, self.text_placeholder)
        samplings = [r.sampling_or(sampling) for r in requests]
        end = call_end()
        if end is not None:
            params = [self.sampling_params_cls(**to_sampling_kwargs(s)) for s in samplings]
            outputs = generate_until(self.llm.llm_engine, inputs, params, end)
            return [deadline_cut_result() if o is None else to_chat_result(o, s.logprobs, s.choices)
                    for o, s in zip(outputs, samplings)]
        if all(s == sampling for s in samplings):
            params = self.sampling_params_cls(**to_sampling_kwargs(sampling))
        else:
            # vLLM 0.10.1.1's LLM.generate pairs a list of SamplingParams with the prompts one by
            # one (vllm/entrypoints/llm.py, `generate`), so mixed samplings stay one call.
            params = [self.sampling_params_cls(**to_sampling_kwargs(s)) for s in samplings]
        outputs = self.llm.generate(inputs, params, use_tqdm=False)
        return [to_chat_result(o, s.logprobs, s.choices) for o, s in zip(outputs, samplings)]


def memory_share(models, role: str) -> float:
    """The share of the GPU a vLLM engine takes. One engine serves both roles when the router is
    the VLM's model (a family stack's `--model-name`), and then it takes both roles' shares."""
    if role == "vlm" and models.router_model == models.vlm_model:
        return models.vlm_gpu_memory_utilization + models.router_gpu_memory_utilization
    return models.vlm_gpu_memory_utilization if role == "vlm" else models.router_gpu_memory_utilization


def build(models, role: str, ledger: Ledger) -> VLLMEngine:
    """The engine of one role with the arguments the run's ModelSettings give it (agents/engines/registry.py)."""
    return VLLMEngine(
        resolve_model(getattr(models, f"{role}_model")), ledger, dtype=models.dtype, max_num_seqs=models.max_num_seqs,
        seed=models.seed, batch_images=models.batch_images,
        max_model_len=models.vlm_max_model_len if role == "vlm" else models.router_max_model_len,
        gpu_memory_utilization=memory_share(models, role))


def release_problem(models, stack: str) -> str | None:
    """Where the run loads its VLM in vLLM: a family that this vLLM release cannot load (Llama-3.2-
    Vision past 0.10.2, Qwen3-VL before 0.11) stops the run here, in one line that names the path
    that can, before the search models and the router have loaded for minutes. The release is read
    from the installed package's metadata (vLLM is not imported), or is the project's pin
    (requirements.txt) where no vLLM is installed: the family still needs what the GPU image has."""
    from importlib import metadata

    from agents.stacks import PINNED_VLLM, family_of, vllm_release_problem

    family = family_of(models.vlm_model, stack)
    if family is None:
        return None
    try:
        version = metadata.version("vllm")
    except metadata.PackageNotFoundError:
        version = PINNED_VLLM
    problem = vllm_release_problem(family, version, models.vlm_model)
    return f"cannot start: {problem}" if problem else None
