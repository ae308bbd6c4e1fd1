"""Text in a photo: RapidOCR (PP-OCRv4 detection + recognition as ONNX, `rapidocr-onnxruntime`,
Apache-2.0, pinned in requirements-cpu.txt), on CPU.

One ONNX thread per session: seven processes may share two cores, and a second thread bought
little for one small image. The text-angle classifier is skipped (text in photos is nearly always
upright, and it costs a third model per line). The detector reads the image at its longest side
`max_side` at most ("max" limit): the package's default scales the SHORT side UP to 736 px, which
costs seconds on a phone photo.
"""
from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=2)
def load_ocr(max_side: int):
    from rapidocr_onnxruntime import RapidOCR

    return RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1, use_cls=False,
                    det_limit_type="max", det_limit_side_len=max_side, max_side_len=max_side)


def read_text(image, max_side: int = 960) -> list[tuple[list[list[float]], str, float]]:
    """(box, text, confidence) per line found in a PIL image, in the detector's order; [] when
    none. box: the four corners [x, y] in the pixels of the image as given."""
    image = image.convert("RGB")
    scale = min(1.0, max_side / max(image.size))
    if scale < 1.0:
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    rows, _ = load_ocr(max_side)(image)
    return [([[x / scale, y / scale] for x, y in box], str(text), float(score)) for box, text, score in rows or []]
