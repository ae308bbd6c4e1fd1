"""Which profile this machine's GPU can run: what `--profile auto` picks, and why.

The l40s profile puts every model into one GPU, with vLLM budgets that are shares of the card's
total memory (tools/memory_plan.py holds the plan). So `auto` picks l40s only where the card torch
sees first (device 0: one process uses one GPU) has at least L40S_MIN_GPU_GIB, read with
`torch.cuda.get_device_properties`, the total vLLM divides as well. Elsewhere it picks cpu: no
CUDA, or a card too small for the plan (an RTX 4090's 24 GiB cannot hold the 11B VLM's budget),
where the l40s models would otherwise fail to load after minutes. The served profile is never
picked by itself: it needs model servers that someone started (docs/serving.md).
"""
from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3
# The least total GPU memory (GiB, as torch reports it) on which the l40s profile's memory plan
# fits with its 3 GiB spare: the plan is on paper in tools/memory_plan.py (`python -m
# tools.memory_plan --cards`), which this module, part of the submission, may not import;
# tests/test_preflight_l40s.py checks that the two agree. An L40S reports 45.0 GiB.
L40S_MIN_GPU_GIB = 44.76


@dataclass(frozen=True)
class ProfileChoice:
    profile: str
    reason: str


def visible_gpu() -> tuple[str, float] | None:
    """(name, total GiB) of CUDA device 0, or None without torch, CUDA or a device."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        props = torch.cuda.get_device_properties(0)
        return str(props.name), props.total_memory / GIB
    except Exception:  # noqa: BLE001 - torch missing or broken: only the CPU path can run anyway
        return None


def profile_for_gpu(gpu: tuple[str, float] | None) -> ProfileChoice:
    """The profile a machine with `gpu` ((name, total GiB), or None) runs, with the reason."""
    if gpu is None:
        return ProfileChoice("cpu", "no CUDA GPU is visible to torch")
    name, gib = gpu
    if gib >= L40S_MIN_GPU_GIB:
        return ProfileChoice("l40s", f"{name} has {gib:.1f} GiB; the l40s profile's memory plan needs "
                                     f"{L40S_MIN_GPU_GIB:.1f} GiB (python -m tools.memory_plan --cards)")
    return ProfileChoice("cpu", f"{name} has {gib:.1f} GiB, less than the {L40S_MIN_GPU_GIB:.1f} GiB the l40s "
                                "profile's memory plan needs; the cpu profile runs instead (or --profile "
                                "served, with the models behind servers: docs/serving.md)")


def choose_profile() -> ProfileChoice:
    """What `--profile auto` picks on this machine, and why."""
    return profile_for_gpu(visible_gpu())


def describe_auto_profile() -> str:
    """One line: the profile `auto` picks here and why."""
    choice = choose_profile()
    return f"{choice.profile} ({choice.reason})"
