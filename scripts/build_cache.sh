#!/usr/bin/env bash
# What the cpu profile reads from .cache/, built with the Python given (scripts/setup.sh passes
# .venv's, scripts/setup_lmms.sh .venv-lmms's): SmolLM2 converted from its GGUF file and the mini
# benchmark's search indices. Each step skips what is already built.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:?usage: build_cache.sh PYTHON}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
echo "==> convert models"
"$PY" -m agents.engines.local_models smollm2  # converted once, kept in .cache/models
echo "==> build indices"
# embeds images with EfficientNet-Lite0 and text with MiniLM; content-addressed, so rebuilt only when the
# benchmark, the models or the builder change
"$PY" -m minibench.build_indices
