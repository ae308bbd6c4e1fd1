"""Load and run the project's engines under whatever transformers is first on the path, and print
what they did as JSON. tests/full/test_transformers_pin.py runs this module in a subprocess whose
PYTHONPATH puts the GPU set's transformers / tokenizers pins (requirements.txt) in front of the
venv's, so the pinned version builds the tiny models, loads them through our engines and generates.

    python -m testkit.pin_check SMOLLM2_DIR
"""
from __future__ import annotations

import json
import sys


def main(smollm2_dir: str) -> dict:
    import tokenizers
    import transformers

    from agents.engines.base import ChatRequest, Sampling
    from agents.engines.reranker import CrossEncoderReranker
    from agents.engines.transformers_engine import TransformersEngine
    from testkit.tiny_models import build_tiny_mllama, build_tiny_xlmr_reranker

    question = [{"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": "What is the name of the river in this city?"}]
    greedy = Sampling(max_tokens=12, temperature=0.0)
    stopped = Sampling(max_tokens=12, temperature=0.0, stop=("\n", "."))
    out = {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
           "transformers_file": transformers.__file__}

    causal = TransformersEngine(smollm2_dir, dtype="float32")
    out["causal_dtype"] = str(causal.net.dtype)
    out["causal"] = [r.text for r in causal.generate([ChatRequest(question)] * 2, greedy, stage="pin")]
    out["causal_stop"] = [r.text for r in causal.generate([ChatRequest(question)], stopped, stage="pin")]

    from PIL import Image

    vision = TransformersEngine(build_tiny_mllama(), dtype="float32")
    image = Image.new("RGB", (90, 60), (200, 30, 30))
    results = vision.generate([ChatRequest(question, image=image), ChatRequest(question)], stopped, stage="pin")
    out["vision_dtype"] = str(vision.net.dtype)
    out["vision_output_tokens"] = [r.output_tokens for r in results]

    reranker = CrossEncoderReranker(build_tiny_xlmr_reranker())
    out["rerank"] = reranker.score([("Which river?", "The Seine flows through Paris."), ("Which river?", "A dog.")])
    return out


if __name__ == "__main__":
    print("PIN-CHECK " + json.dumps(main(sys.argv[1])))
