"""Loading a vision model's processor (tokenizer + image processor + chat template) for the
transformers engine, on machines with and without torchvision.

Several families' processors (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, InternVL) hold a video processor
besides the image processor, and transformers 4.5x builds every video processor on torchvision.
Where torchvision cannot be installed (our CPU machines: the package index's builds are linked
against CUDA and fail to import with torch 2.13.0+cpu; docs/models.md), `AutoProcessor.from_pretrained`
fails for those families although the chain never sends a video. `load_processor` then builds the same processor class from the same files,
with a stand-in for the video processor that refuses any video (`NoVideoProcessor`): the
tokenizer, the image processor (its PIL variant) and the chat template are the checkpoint's own.
"""
from __future__ import annotations

import json
from pathlib import Path


def _no_video_processor_class():
    """A video processor that holds nothing and accepts no video.

    `ProcessorMixin` checks each part against the class `transformers` exports under the part's
    base name. Without torchvision that export is a placeholder object, so the stand-in derives
    from both the real base class (for its behaviour) and the placeholder (for the check)."""
    import transformers
    from transformers.video_processing_utils import BaseVideoProcessor

    exported = getattr(transformers, "BaseVideoProcessor")
    bases = (BaseVideoProcessor,) if exported is BaseVideoProcessor else (BaseVideoProcessor, exported)

    class NoVideoProcessor(*bases):
        """The chain sends images only: a call with a video is a bug, said as such."""

        def __call__(self, videos=None, **kwargs):
            raise ValueError("this processor was loaded without a video processor (no torchvision here)")

    return NoVideoProcessor


def no_video_processor():
    return _no_video_processor_class()()


def _processor_class_name(path: Path) -> str | None:
    for name in ("processor_config.json", "preprocessor_config.json"):
        file = path / name
        if file.exists():
            found = json.loads(file.read_text()).get("processor_class")
            if found:
                return found
    return None


def _chat_template(path: Path, tokenizer) -> str | None:
    """The checkpoint's chat template: chat_template.jinja, chat_template.json (the two files
    processors save), else the tokenizer's own (tokenizer_config.json)."""
    if (path / "chat_template.jinja").exists():
        return (path / "chat_template.jinja").read_text(encoding="utf-8")
    if (path / "chat_template.json").exists():
        return json.loads((path / "chat_template.json").read_text(encoding="utf-8")).get("chat_template")
    return getattr(tokenizer, "chat_template", None)


def load_processor(path: str):
    """`AutoProcessor.from_pretrained(path)`, or, where that needs torchvision and none is
    installed, the same processor class built from the checkpoint's tokenizer, image processor
    and chat template with `NoVideoProcessor` in the video processor's place."""
    import transformers
    from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer

    try:
        return AutoProcessor.from_pretrained(path)
    except (ImportError, ValueError, TypeError) as exc:
        if "torchvision" not in str(exc).lower() and "video" not in str(exc).lower():
            raise
        first_error = exc
    folder = Path(path)
    name = _processor_class_name(folder)
    cls = getattr(transformers, name, None) if name else None
    if cls is None or "video_processor" not in getattr(cls, "attributes", ()):
        raise first_error
    tokenizer = AutoTokenizer.from_pretrained(path)
    image_processor = AutoImageProcessor.from_pretrained(path, use_fast=False)
    kwargs = {}
    for key in ("image_seq_length",):  # processor settings some families save (InternVL)
        file = folder / "processor_config.json"
        if file.exists() and key in json.loads(file.read_text()):
            kwargs[key] = json.loads(file.read_text())[key]
    return cls(image_processor=image_processor, tokenizer=tokenizer, video_processor=no_video_processor(),
               chat_template=_chat_template(folder, tokenizer), **kwargs)
