"""Which weights a causal LM runs with on a CPU (ModelSettings.cpu_weights), read from the CPU's
instruction sets, and how each is made at load.

"float32": as saved. "bfloat16": the weights rounded to bfloat16 (native matmuls need
avx512_bf16 or the AMX tiles). "int8": every Linear layer's weights quantized to int8 per
output channel at load (torch's dynamic quantization: activations are quantized per call, the
matmul runs in int8 through fbgemm, which wants AVX2; avx512_vnni makes it faster).
"""
from __future__ import annotations

from pathlib import Path

CPU_WEIGHTS = ("float32", "bfloat16", "int8")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The first processor's flags (x86 "flags", ARM "Features"); None where the system does not say."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("flags", "features"):
            return frozenset(value.split())
    return None


def choose_cpu_weights(flags: frozenset[str] | None) -> str:
    """The path `cpu_weights="auto"` takes on a CPU with these flags: float32 on every CPU
    measured so far. On an AMD EPYC with AVX2, AVX-512 VNNI and AVX512-BF16 (no AMX) both
    others changed answers (docs/benchmarks.md "CPU paths on the mini benchmark"): int8 moved
    SmolLM2's yes/no odds across the router's calibrated cut (the real-time label turned yes on
    most turns) and, its activations being quantized per call, made a turn's answer depend on
    the other turns of its batch; bfloat16 was no faster (decode steps cost what float32's do
    without AMX). A CPU with AMX tiles for bfloat16 (`amx_bf16`) has not been measured; until
    it is, it runs float32 too."""
    return "float32"


def resolve_cpu_weights(setting: str, flags: frozenset[str] | None = None) -> str:
    if setting == "auto":
        return choose_cpu_weights(cpu_flags() if flags is None else flags)  # pragma: no mutate: float32 whatever the flags, until another path is measured
    if setting not in CPU_WEIGHTS:
        raise ValueError(f"cpu_weights {setting!r}: choose auto or one of {', '.join(CPU_WEIGHTS)}")
    return setting


def quantized_int8(net):
    """`net` with every Linear layer's weights in int8, one scale per output channel."""
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    # torch 2.13 warns that torch.ao's eager quantization moves to torchao; it still runs here
    # (tests/test_cpu_path.py loads it), and the warning would fill every run's console.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (DeprecationWarning, UserWarning))
        # the qconfig says int8 weights, one scale per output channel (quantize_dynamic's dtype
        # is read only where the spec names layer types without a qconfig)
        return quantize_dynamic(net, {torch.nn.Linear: per_channel_dynamic_qconfig})
