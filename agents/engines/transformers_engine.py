"""Chat generation with plain transformers: the CPU profile's engine and the reference for vLLM.

Two model families:
- causal LMs (AutoModelForCausalLM; SmolLM2 on CPU): text only (ChatEngine.generate drops
  images with one warning per engine);
- image-text-to-text models (AutoModelForImageTextToText + AutoProcessor; Mllama, i.e.
  Llama-3.2-Vision): messages are laid out as the vLLM engine lays them out
  (`base.template_messages`: plain-string contents, the image alone in a user message right
  after the system message), so the processor's chat template writes the model's own image token
  and both engines render the same prompt.

Batches are left-padded. Mllama's processor refuses a batch that mixes prompts with and without
an image, so such a call runs as two sub-batches, and so does a call whose requests carry
different samplings (`ChatRequest.sampling`); it is still one `generate` call for the ledger.
A causal LM's text prompts may instead be read by rows (agents/engines/rows_prefill.py); where
generation stops, at a stop string or before the deadline, is agents/engines/stopping.py's.
"""
from __future__ import annotations

import os
import time

import torch

from agents.engines.base import (
    ChatEngine,
    ChatRequest,
    ChatResult,
    Sampling,
    call_end,
    choice_variants,
    cut_at_stop,
    deadline_cut_result,
    image_layout,
    template_messages,
)
from agents.engines.cpu_path import quantized_int8, resolve_cpu_weights
from agents.engines.local_models import dtype_argument, resolve_model
from agents.engines.rows_prefill import DeadlinePassed, left_padded, prefill_rows, prefix_tree
from agents.engines.stopping import StopAtClock, StopOnText

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _set_cpu_threads() -> None:
    # Measured on 2 cores (SmolLM2, batch 4): 2 threads give 33 tokens/s and 1 thread 31 when the
    # machine is idle, but 11 against 30 when another process holds a core (OpenMP threads wait
    # on each other). So leave one core free; CRUISE_TORCH_THREADS overrides. Process-wide setting.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = int(os.environ.get("CRUISE_TORCH_THREADS", "0")) or max(1, cores - 1)
    torch.set_num_threads(threads)


# How much slower than the engine's last prefill, a call of the same kind (a batch of chat prompts
# on the same model), a prefill is allowed to come out (a decode step's slack: agents/engines/stopping.py). At 2.0 the cpu profile's consistency check was cut
# before it started on most batches of 8 with 28 s left, where it then took 10.5 s (SmolLM2 on one
# thread, 2026-11-24); a prefill that does run over is paid from the batch's safety margin.
PREFILL_SLACK = 1.5
# A one-word choice (`Sampling.choices`) is one forward pass with nothing between its steps to
# stop at, so a call of many such requests runs in passes of at most this many: the deadline is
# checked, and the prefill rate measured afresh, before each. Found when QA-Dragon's fine reranker
# (40 yes/no prompts, one 13.6 s pass with SmolLM2) ran a batch 1.4 s past the deadline while
# another process held the second core (tests/full/test_peer_systems_smollm2.py).
CHOICE_ROWS = 8


class TransformersEngine(ChatEngine):
    # Seconds per prompt token read (padding included) of the last prefill: a sub-batch whose
    # prefill would end after the deadline is not started (on 2 loaded cores, 8 answer prompts
    # took 30 s to read). One-word choices keep their own rate: read by rows, the router's short
    # prompts after their shared run take more seconds per token than the answer's long ones (a
    # forward pass per row), and with the router's rate every answer stage of a loaded run was
    # refused up front.
    prefill_s_per_token: float | None = None
    choice_s_per_token: float | None = None

    def __init__(self, model: str, ledger=None, *, dtype: str = "float32", device: str | None = None,
                 cudnn_attention: bool = True, prefill: str = "auto", cpu_weights: str = "float32"):
        super().__init__(model, ledger)
        from transformers import AutoConfig

        self.path = resolve_model(model)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        # On a CPU the weights are `cpu_weights`' (agents/engines/cpu_path.py), whatever `dtype` says.
        self.cpu_weights = None
        if self.device == "cpu":
            _set_cpu_threads()
            self.cpu_weights = resolve_cpu_weights(cpu_weights)
            dtype = "bfloat16" if self.cpu_weights == "bfloat16" else "float32"
        elif not cudnn_attention:
            # cuDNN attention builds a plan per new shape (a first call at a new shape ran at twice
            # the steady step time on the H100); the mem-efficient kernel does not. Process-wide.
            torch.backends.cuda.enable_cudnn_sdp(False)
        torch_dtype = _DTYPES[dtype]
        config = AutoConfig.from_pretrained(self.path)
        self.supports_images = hasattr(config, "vision_config")
        # A causal LM's prompts read each alone, shared runs once (`prefill_rows`), or as one
        # left-padded batch (ModelSettings.prefill). An image-text model's cache also holds its
        # cross-attention or image states, which prefill_rows does not join: always a batch.
        self.rows_prefill = not self.supports_images and (prefill == "rows" or (prefill == "auto" and self.device == "cpu"))
        if self.supports_images:
            from transformers import AutoModelForImageTextToText

            from agents.engines.processors import load_processor

            self.processor = load_processor(self.path)
            self.tokenizer = self.processor.tokenizer
            self.net = AutoModelForImageTextToText.from_pretrained(self.path, **dtype_argument(torch_dtype))
        else:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self.processor = None
            self.tokenizer = AutoTokenizer.from_pretrained(self.path)
            self.net = AutoModelForCausalLM.from_pretrained(self.path, **dtype_argument(torch_dtype))
        self.net.to(self.device).eval()
        if self.cpu_weights == "int8":
            self.net = quantized_int8(self.net)
        self.tokenizer.padding_side = "left"  # not always saved with the tokenizer
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        # Token ids that end an answer: the generation config's eos ids, the tokenizer's eos, and
        # the pad id (generate fills finished rows with it).
        eos = self.net.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        self.end_ids = [i for i in dict.fromkeys(eos + [self.tokenizer.eos_token_id]) if i is not None]
        self.pad_id = self.tokenizer.pad_token_id
        self._image_layout: str | None = None  # asked of the chat template on first use

    # --- prompt building -------------------------------------------------------------------
    def _render(self, messages: list[dict]) -> str:
        owner = self.processor if self.processor is not None else self.tokenizer
        return owner.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def prompt_text(self, request: ChatRequest, with_image: bool) -> str:
        """The rendered chat, laid out exactly as the vLLM engine lays it out (`template_messages`)."""
        if with_image and self._image_layout is None:
            self._image_layout = image_layout(self._render)
        return self._render(template_messages(request.messages, with_image, self._image_layout or "own_turn"))

    # --- generation ------------------------------------------------------------------------
    def _generate(self, requests: list[ChatRequest], sampling: Sampling) -> list[ChatResult]:
        # Sub-batches: with or without an image, and per distinct sampling (a request may carry its
        # own). Still one `generate` call for the ledger and the chain.
        groups: dict[tuple[bool, Sampling], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.image is not None, r.sampling_or(sampling)), []).append(i)
        results: list[ChatResult | None] = [None] * len(requests)
        end = call_end()
        passes = []
        for (images, group_sampling), group in groups.items():
            rows = CHOICE_ROWS if group_sampling.choices else len(group)
            passes += [(images, group_sampling, group[k:k + rows]) for k in range(0, len(group), rows)]
        for images, group_sampling, group in passes:
            chats = [requests[i] for i in group]
            if end is not None and time.monotonic() >= end:
                out = [deadline_cut_result() for _ in chats]  # an earlier sub-batch used the time up
            else:
                out = self._run_batch(chats, group_sampling, images=images, end=end)
            for i, res in zip(group, out):
                results[i] = res
        return results

    @torch.inference_mode()
    def _run_batch(self, chats: list[ChatRequest], sampling: Sampling, images: bool,
                   end: float | None = None) -> list[ChatResult]:
        texts = [self.prompt_text(c, with_image=images) for c in chats]
        bos = self.tokenizer.bos_token
        # Chat templates that write the BOS themselves must not get a second one from the tokenizer.
        add_special = not (bos and all(t.startswith(bos) for t in texts))
        rows = None
        if images:
            batch = self.processor(images=[[c.image.convert("RGB")] for c in chats], text=texts,
                                   return_tensors="pt", padding=True, add_special_tokens=add_special)
            batch.pop("token_type_ids", None)
        else:
            # the ids only: GGUF-derived tokenizers also return token_type_ids, which generate() rejects
            rows = self.tokenizer(texts, add_special_tokens=add_special)["input_ids"]
            ids, mask = left_padded(rows, self.pad_id)
            batch = {"input_ids": ids, "attention_mask": mask}
            if not self.rows_prefill or min(len(r) for r in rows) < 2:
                rows = None  # read as one left-padded batch
        batch = {k: v.to(self.device) for k, v in batch.items()}
        prompt_len = batch["input_ids"].shape[1]
        # what the prefill computes: every position of the padded batch, or each row's tokens
        # with the shared prefixes once
        prompt_tokens = batch["input_ids"].numel() if rows is None \
            else sum(len(tokens) for _, tokens in prefix_tree([r[:-1] for r in rows])[0]) + len(rows)
        rate = self.choice_s_per_token if sampling.choices else self.prefill_s_per_token
        if end is not None and rate is not None and time.monotonic() + PREFILL_SLACK * prompt_tokens * rate >= end:
            return [deadline_cut_result() for _ in chats]  # its prefill alone would outlive the deadline
        began = time.monotonic()
        cache = None
        if rows is not None:
            try:
                cache = prefill_rows(self.net, rows, end, clock=time.monotonic)
            except DeadlinePassed:
                return [deadline_cut_result() for _ in chats]
        if sampling.choices:
            results = self._choose(batch, sampling.choices, images, cache)
            self.choice_s_per_token = (time.monotonic() - began) / prompt_tokens
            return results
        rows_prefill_s = time.monotonic() - began

        kwargs = dict(max_new_tokens=sampling.max_tokens, pad_token_id=self.pad_id, eos_token_id=self.end_ids,
                      return_dict_in_generate=True, output_logits=sampling.logprobs)
        if sampling.temperature > 0:
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            kwargs.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if sampling.stop:
            kwargs.update(self._stop_kwargs(sampling.stop, prompt_len))
        from transformers import StoppingCriteriaList

        # Outside a deadline it never fires, and still times the prefill.
        clock_stop = StopAtClock(end if end is not None else float("inf"), clock=time.monotonic)
        kwargs["stopping_criteria"] = StoppingCriteriaList([*kwargs.get("stopping_criteria", []), clock_stop])
        if cache is not None:
            kwargs["past_key_values"] = cache  # generate() reads only each row's last token
        out = self.net.generate(**batch, **kwargs)
        if clock_stop.first_step_s is not None:
            self.prefill_s_per_token = (rows_prefill_s + clock_stop.first_step_s) / prompt_tokens
        new_ids = out.sequences[:, prompt_len:].tolist()
        logprobs = None
        if sampling.logprobs:
            # Log-probability of each chosen token under the model's own (unwarped) distribution,
            # which is what vLLM reports too.
            logits = torch.stack(out.logits, dim=1).float()
            chosen = out.sequences[:, prompt_len:].unsqueeze(-1)
            logprobs = torch.log_softmax(logits, dim=-1).gather(-1, chosen).squeeze(-1).tolist()

        prompt_counts = self._prompt_counts(batch, images)
        results = [self._result(ids, None if logprobs is None else logprobs[row], int(prompt_counts[row]), sampling)
                   for row, ids in enumerate(new_ids)]
        if clock_stop.fired:
            # Rows that had not ended on their own (end token, stop string, max_tokens) were cut.
            results = [self._cut(res, ids, sampling) for res, ids in zip(results, new_ids)]
        return results

    def _prompt_counts(self, batch, images: bool) -> list[int]:
        counts = batch["attention_mask"].sum(dim=1)
        if images and "aspect_ratio_mask" in batch:
            # A cross-attention model (Mllama) reads its image beside the prompt; every other
            # family's processor already wrote the image's tokens into the prompt (Qwen's
            # <|image_pad|>, InternVL's <IMG_CONTEXT>, Gemma's soft tokens, Pixtral's [IMG] rows),
            # so the attention mask counts them, as vLLM's prompt_token_ids do.
            counts = counts + self._image_tokens(batch)
        return counts.tolist()

    def _choose(self, batch, choices: tuple[str, ...], images: bool, cache=None) -> list[ChatResult]:
        """`Sampling.choices`: one forward pass; each word's probability is the sum over the first
        tokens of its spellings (`choice_variants`) at the next position (the last, left-padded).
        `cache`: every row but its last token, already read (`prefill_rows`)."""
        # Only the last position's logits: the vocabulary projection of every prompt position
        # made this pass about a third slower per token than generate()'s prefill on CPU, and its
        # rate sets how long the deadline expects the next prefill to take.
        if cache is None:
            logits = self.net(**batch, logits_to_keep=1).logits
        else:
            mask = batch["attention_mask"]
            logits = self.net(input_ids=batch["input_ids"][:, -1:], attention_mask=mask, past_key_values=cache,
                              position_ids=mask.sum(dim=1, keepdim=True) - 1, logits_to_keep=1).logits
        logprobs = torch.log_softmax(logits[:, -1, :].float(), dim=-1)
        ids = {word: sorted({self.tokenizer.encode(v, add_special_tokens=False)[0] for v in choice_variants(word)})
               for word in choices}
        prompt_counts = self._prompt_counts(batch, images)
        results = []
        for row in range(logprobs.shape[0]):
            word_lp = {w: float(torch.logsumexp(logprobs[row, i], dim=0)) for w, i in ids.items()}
            best = max(word_lp, key=word_lp.get)
            results.append(ChatResult(text=best, prompt_tokens=int(prompt_counts[row]), output_tokens=1,
                                      token_logprobs=[word_lp[best]], tokens=[best], choice_logprobs=word_lp))
        return results

    def _image_tokens(self, batch) -> torch.Tensor:
        """Per row, the image's encoder tokens as vLLM counts them (its `usage.prompt_tokens`
        and its RequestOutput's `encoder_prompt_token_ids`): one per patch of each tile the image
        fills, plus one class token per tile (vllm/model_executor/models/mllama.py,
        `calc_token_per_chunk`: (image_size // 14) ** 2 + 1 with Llama-3.2-Vision's 14-pixel patches)."""
        vision = self.net.config.vision_config
        per_tile = (vision.image_size // vision.patch_size) ** 2 + 1
        tiles = batch["aspect_ratio_mask"].reshape(batch["aspect_ratio_mask"].shape[0], -1).sum(dim=1)
        return tiles * per_tile

    def _stop_kwargs(self, stops, prompt_len: int) -> dict:
        """generate() arguments that end each row once its text holds a stop string (the text is
        cut in `_result`)."""
        from transformers import StoppingCriteriaList

        return {"stopping_criteria": StoppingCriteriaList([StopOnText(self.tokenizer, stops, prompt_len)])}

    def _cut(self, result: ChatResult, ids: list[int], sampling: Sampling) -> ChatResult:
        ended = any(t in self.end_ids or t == self.pad_id for t in ids)
        stopped = bool(sampling.stop) and cut_at_stop(
            self.tokenizer.decode(ids, skip_special_tokens=True), sampling.stop)[1]
        if ended or stopped or len(ids) >= sampling.max_tokens:
            return result
        return ChatResult(text="", prompt_tokens=result.prompt_tokens, output_tokens=result.output_tokens,
                          cut_by_deadline=True)

    def _result(self, ids: list[int], logprobs, prompt_tokens: int, sampling: Sampling) -> ChatResult:
        end = next((k for k, t in enumerate(ids) if t in self.end_ids or t == self.pad_id), len(ids))
        ids = ids[:end]
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        text, stopped = cut_at_stop(text, sampling.stop)
        if stopped:
            # Keep the tokens up to the one that completed the stop string (as vLLM counts them).
            n = next(k for k in range(1, len(ids) + 1)
                     if cut_at_stop(self.tokenizer.decode(ids[:k], skip_special_tokens=True), sampling.stop)[1])
            ids = ids[:n]
        return ChatResult(
            text=text.strip(),
            prompt_tokens=prompt_tokens,
            output_tokens=len(ids),
            token_logprobs=None if logprobs is None else [float(x) for x in logprobs[: len(ids)]],
            tokens=None if logprobs is None else [self.tokenizer.decode([t]) for t in ids],
        )


def build(models, role: str, ledger) -> TransformersEngine:
    """The engine of one role with the arguments the run's ModelSettings give it (agents/engines/registry.py)."""
    return TransformersEngine(resolve_model(getattr(models, f"{role}_model")), ledger, dtype=models.dtype,
                              cudnn_attention=models.cudnn_attention,
                              prefill=models.prefill, cpu_weights=models.cpu_weights)
