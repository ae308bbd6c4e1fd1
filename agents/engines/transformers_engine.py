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
"""
from __future__ import annotations

import os

import torch

from agents.engines.base import (
    ChatEngine,
    ChatRequest,
    ChatResult,
    Sampling,
    accepts_system_beside_image,
    cut_at_stop,
    template_messages,
)
from agents.engines.local_models import dtype_argument, resolve_model

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _set_cpu_threads() -> None:
    # Measured on 2 cores (SmolLM2, batch 4): 2 threads give 33 tokens/s and 1 thread 31 when the
    # machine is idle, but 11 against 30 when another process holds a core (OpenMP threads wait
    # on each other). So leave one core free; CRUISE_TORCH_THREADS overrides. Process-wide setting.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = int(os.environ.get("CRUISE_TORCH_THREADS", "0")) or max(1, cores - 1)
    torch.set_num_threads(threads)


class StopOnText:
    """generate()'s stopping criterion for stop strings: a row is done once the text it has
    generated contains one of them.

    Why not transformers' own `stop_strings=`: its StopStringCriteria precomputes, for every
    token of the vocabulary, where it could end each stop string, and caches that on the
    vocabulary's order, which changes between calls, so it was rebuilt on every call: 5-8 s of
    CPU per verify call with the 128k Llama vocabulary on the H100. Here each step
    decodes only the last few generated tokens of each row (a window wide enough to hold the
    longest stop string, so a stop string is seen on the step that completes it) and searches
    them. The text we return is cut at the earliest stop string afterwards (`cut_at_stop`) either
    way, so where a row stops changes only how long the batch runs, never its text.
    """

    def __init__(self, tokenizer, stops, prompt_len: int):
        self.tokenizer = tokenizer
        self.stops = [s for s in stops if s]
        self.prompt_len = prompt_len
        # A token decodes to at least one character (a byte-level piece of a multi-byte
        # character decodes to one replacement character), so L characters span <= L tokens;
        # the margin covers a partial character at the window's start.
        self.window = max((len(s) for s in self.stops), default=0) + 4
        self.done: list[bool] | None = None

    def __call__(self, input_ids: torch.LongTensor, scores=None, **kwargs) -> torch.BoolTensor:
        if self.done is None:
            self.done = [False] * input_ids.shape[0]
        start = max(self.prompt_len, input_ids.shape[1] - self.window)
        tails = input_ids[:, start:].tolist()
        for row, tail in enumerate(tails):
            if not self.done[row]:
                text = self.tokenizer.decode(tail, skip_special_tokens=True)
                self.done[row] = any(s in text for s in self.stops)
        return torch.tensor(self.done, dtype=torch.bool, device=input_ids.device)


class TransformersEngine(ChatEngine):
    def __init__(self, model: str, ledger=None, *, dtype: str = "float32", device: str | None = None,
                 cudnn_attention: bool = True):
        super().__init__(model, ledger)
        from transformers import AutoConfig

        self.path = resolve_model(model)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.device == "cpu":
            _set_cpu_threads()
            dtype = "float32"  # bf16 matmuls are slower than fp32 on most CPUs
        elif not cudnn_attention:
            # cuDNN attention builds a plan per new shape (a first call at a new shape ran at twice
            # the steady step time on the H100); the mem-efficient kernel does not. Process-wide.
            torch.backends.cuda.enable_cudnn_sdp(False)
        torch_dtype = _DTYPES[dtype]
        config = AutoConfig.from_pretrained(self.path)
        self.supports_images = hasattr(config, "vision_config")
        if self.supports_images:
            from transformers import AutoModelForImageTextToText, AutoProcessor

            self.processor = AutoProcessor.from_pretrained(self.path)
            self.tokenizer = self.processor.tokenizer
            self.net = AutoModelForImageTextToText.from_pretrained(self.path, **dtype_argument(torch_dtype))
        else:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self.processor = None
            self.tokenizer = AutoTokenizer.from_pretrained(self.path)
            self.net = AutoModelForCausalLM.from_pretrained(self.path, **dtype_argument(torch_dtype))
        self.net.to(self.device).eval()
        self.tokenizer.padding_side = "left"  # not always saved with the tokenizer
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        # Token ids that end an answer: the generation config's eos ids, the tokenizer's eos, and
        # the pad id (generate fills finished rows with it).
        eos = self.net.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        self.end_ids = [i for i in dict.fromkeys(eos + [self.tokenizer.eos_token_id]) if i is not None]
        self.pad_id = self.tokenizer.pad_token_id
        self._system_beside_image: bool | None = None  # asked of the chat template on first use

    # --- prompt building -------------------------------------------------------------------
    def _render(self, messages: list[dict]) -> str:
        owner = self.processor if self.processor is not None else self.tokenizer
        return owner.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def prompt_text(self, request: ChatRequest, with_image: bool) -> str:
        """The rendered chat, laid out exactly as the vLLM engine lays it out (`template_messages`)."""
        if with_image and self._system_beside_image is None:
            self._system_beside_image = accepts_system_beside_image(self._render)
        return self._render(template_messages(request.messages, with_image, bool(self._system_beside_image)))

    # --- generation ------------------------------------------------------------------------
    def _generate(self, requests: list[ChatRequest], sampling: Sampling) -> list[ChatResult]:
        # Sub-batches: with or without an image, and per distinct sampling (a request may carry its
        # own). Still one `generate` call for the ledger and the chain.
        groups: dict[tuple[bool, Sampling], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.image is not None, r.sampling_or(sampling)), []).append(i)
        results: list[ChatResult | None] = [None] * len(requests)
        for (images, group_sampling), group in groups.items():
            chats = [requests[i] for i in group]
            for i, res in zip(group, self._run_batch(chats, group_sampling, images=images)):
                results[i] = res
        return results

    @torch.inference_mode()
    def _run_batch(self, chats: list[ChatRequest], sampling: Sampling, images: bool) -> list[ChatResult]:
        texts = [self.prompt_text(c, with_image=images) for c in chats]
        bos = self.tokenizer.bos_token
        # Chat templates that write the BOS themselves must not get a second one from the tokenizer.
        add_special = not (bos and all(t.startswith(bos) for t in texts))
        if images:
            batch = self.processor(images=[[c.image.convert("RGB")] for c in chats], text=texts,
                                   return_tensors="pt", padding=True, add_special_tokens=add_special)
        else:
            batch = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=add_special)
        batch.pop("token_type_ids", None)  # GGUF-derived tokenizers return them; generate() rejects them
        batch = batch.to(self.device)
        prompt_len = batch["input_ids"].shape[1]

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
        out = self.net.generate(**batch, **kwargs)
        new_ids = out.sequences[:, prompt_len:].tolist()
        logprobs = None
        if sampling.logprobs:
            # Log-probability of each chosen token under the model's own (unwarped) distribution,
            # which is what vLLM reports too.
            logits = torch.stack(out.logits, dim=1).float()
            chosen = out.sequences[:, prompt_len:].unsqueeze(-1)
            logprobs = torch.log_softmax(logits, dim=-1).gather(-1, chosen).squeeze(-1).tolist()

        prompt_counts = batch["attention_mask"].sum(dim=1).tolist()
        return [self._result(ids, None if logprobs is None else logprobs[row], int(prompt_counts[row]), sampling)
                for row, ids in enumerate(new_ids)]

    def _stop_kwargs(self, stops, prompt_len: int) -> dict:
        """generate() arguments that end each row once its text holds a stop string (the text is
        cut in `_result`)."""
        from transformers import StoppingCriteriaList

        return {"stopping_criteria": StoppingCriteriaList([StopOnText(self.tokenizer, stops, prompt_len)])}

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
