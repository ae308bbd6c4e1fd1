#!/usr/bin/env bash
# Create .venv-lmms: lmms-eval 0.7.3 (requirements-lmms.txt) over the CPU set our agent runs on,
# plus integrations/lmms_eval (the CRAG-MM tasks, our systems as the lmms-eval model
# `cruise_agent` and any OpenAI-compatible server as `openai_tools`, registered through the
# entry-point group lmms_eval.models).
# The CPU set is .venv's (scripts/setup.sh, run first: requirements-cpu.txt,
# requirements-no-deps.txt and .cache/): .venv-lmms reads .venv's site-packages after its own,
# through a path file, and holds only what lmms-eval adds, or pins otherwise (filelock, protobuf:
# its own copies come first on the path). A second full copy of the CPU set took 10 min 37 s to
# install on our 2-core machine (2.7 GB, under load), this ~1 min (docs/evaluation.md "From lmms-eval").
# lmms-eval is installed from the package index, never copied here. Safe to run again: pip is
# skipped when neither the requirement files nor .venv changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-lmms

bash scripts/setup.sh
echo "==> install lmms-eval into $VENV"
if [ ! -x "$VENV/bin/python" ]; then
  # the interpreter .venv was made with: its site-packages must match
  "$(.venv/bin/python -c 'import sys; print(sys._base_executable)')" -m venv "$VENV"
fi
# pip's check after an install sees .venv's packages too, and names two conflicts that are known
# and harmless here: rapidocr-onnxruntime's opencv-python, which .venv leaves out on purpose
# (requirements-cpu.txt: rapidocr goes in with --no-deps beside the headless opencv), and
# kubernetes' python-dateutil>=3 (chromadb's client library, which nothing run here imports: the
# 2.9 pinned here is what pytablewriter's typepy requires). Those lines, and pip's heading of
# them, are replaced by one line saying so; anything else pip says is printed as it came.
filter_known_conflicts() {
  local heading="^ERROR: pip's dependency resolver does not currently take into account"
  local known="^rapidocr-onnxruntime [^ ]* requires opencv-python\|^kubernetes [^ ]* requires python-dateutil"
  local said others
  said=$(cat)
  others=$(printf '%s\n' "$said" | grep -v -e "$heading" -e "$known" || true)
  if printf '%s\n' "$said" | grep -q "$known"; then
    echo "note: pip's check names rapidocr-onnxruntime's opencv-python and kubernetes' python-dateutil>=3:" \
         "known and harmless here (scripts/setup_lmms.sh says why)"
  fi
  if printf '%s\n' "$others" | grep -q " requires \| has requirement "; then
    printf '%s\n' "$said" >&2  # another conflict: pip's whole message, heading included
  elif [ -n "$others" ]; then
    printf '%s\n' "$others" >&2
  fi
}
site() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
lmms_site=$(site "$VENV")
# .venv's packages after our own (their .pth files too: site.addsitedir), and the repository
# itself (agents/, evaluator/, minibench/), as an editable install of it would put it
printf 'import site; site.addsitedir(%s)\n' "'$(site .venv)'" > "$lmms_site/cruise_cpu_set.pth"
pwd > "$lmms_site/cruise_repository.pth"
stamp=$VENV/cruise-lmms-requirements.sha256
wanted=$( { cat requirements-lmms.txt integrations/lmms_eval/pyproject.toml .venv/cruise-requirements.sha256
            "$VENV/bin/python" --version; } | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "requirements-lmms.txt and .venv unchanged since the last install: pip skipped"
else
  # torch and the rest of the CPU set are found in .venv and stay there; pip reports the two
  # packages it installs here over .venv's ("Not uninstalling ... outside environment")
  pip_said=$(mktemp)
  if ! "$VENV/bin/python" -m pip install --quiet -r requirements-lmms.txt 2>"$pip_said"; then
    cat "$pip_said" >&2
    exit 1
  fi
  filter_known_conflicts <"$pip_said"
  rm -f "$pip_said"
  # installed above only so that pip resolves lmms-eval's torchvision>=0.16 without replacing
  # torch; it is a CUDA-linked build that breaks image processing here (requirements-lmms.txt)
  "$VENV/bin/python" -m pip uninstall --quiet -y torchvision
  "$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e integrations/lmms_eval
  echo "$wanted" > "$stamp"
fi

echo "==> check"
HF_HUB_OFFLINE=1 "$VENV/bin/python" - <<'PY'
from importlib import metadata, util

import filelock
import torch
from lmms_eval.models import get_model

assert util.find_spec("torchvision") is None, "torchvision is installed: uninstall it (requirements-lmms.txt says why)"
assert metadata.version("filelock") == filelock.__version__ and filelock.__version__.startswith("4.2."), filelock.__file__
get_model("cruise_agent")  # found through their entry point
get_model("openai_tools")
print(f"lmms-eval {metadata.version('lmms-eval')}, torch {torch.__version__}, models cruise_agent and openai_tools registered")
PY
echo "next: $VENV/bin/lmms-eval --model cruise_agent --model_args profile=cpu --tasks crag_mm_single \\"
echo "        --include_path integrations/lmms_eval/tasks --output_path outputs/lmms-eval --log_samples"
