"""The machine a benchmark runs on, read from the system, and a process's own peak memory.

Every benchmark that prints a table or writes a record names the machine with `machine_line()`
(or stores `read_machine().record()`), so that a figure carries the CPU it was measured on: the
same backend can be several times faster on a CPU with AMX or AVX-512 BF16 than on one without.
"""
from __future__ import annotations

import os
import platform
import re
import resource
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

# The instruction sets that change which CPU backend wins: bf16 matmuls run natively with
# avx512_bf16 or the AMX tiles, int8 ones with avx512_vnni / amx_int8; avx2 is the floor.
WATCHED_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")


@dataclass(frozen=True)
class Machine:
    cpu: str  # the model name as the system gives it
    logical_cpus: int  # the processors the system lists
    usable_cpus: int  # those this process may run on (a container or taskset can allow fewer)
    flags: tuple[str, ...] | None  # the WATCHED_FLAGS it has; None: the system did not say

    def line(self) -> str:
        cpus = (f"{self.logical_cpus} logical CPUs" if self.usable_cpus == self.logical_cpus
                else f"{self.usable_cpus} of {self.logical_cpus} logical CPUs usable")
        if self.flags is None:
            flags = "instruction sets not read"
        else:
            missing = [f for f in WATCHED_FLAGS if f not in self.flags]
            flags = ", ".join(self.flags) or "none of " + ", ".join(WATCHED_FLAGS)
            if self.flags and missing:
                flags += "; no " + ", ".join(missing)
        return f"{self.cpu}, {cpus} ({flags})"

    def record(self) -> dict:
        return {**asdict(self), "flags": None if self.flags is None else list(self.flags)}


def parse_cpuinfo(text: str, usable_cpus: int | None = None) -> Machine:
    """A Machine from the text of Linux's /proc/cpuinfo: x86 lists "model name" and "flags" per
    processor, ARM "Features" (and often no model name: then the platform's name stands)."""
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    fields: list[dict[str, str]] = []
    for block in blocks:
        entry = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                entry[key.strip().lower()] = value.strip()
        fields.append(entry)
    processors = [f for f in fields if "processor" in f]
    first = processors[0] if processors else (fields[0] if fields else {})
    cpu = first.get("model name") or first.get("hardware") or platform.processor() or platform.machine() or "unknown CPU"
    listed = first.get("flags", first.get("features"))
    flags = None if listed is None else tuple(f for f in WATCHED_FLAGS if f in listed.split())
    logical = len(processors) or os.cpu_count() or 1
    return Machine(cpu=cpu, logical_cpus=logical, usable_cpus=usable_cpus or logical, flags=flags)


def usable_cpus() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return None


def read_machine(cpuinfo: Path = Path("/proc/cpuinfo")) -> Machine:
    """This machine: /proc/cpuinfo where there is one (Linux), else what the platform module
    says (the instruction sets then unknown)."""
    if cpuinfo.exists():
        return parse_cpuinfo(cpuinfo.read_text(errors="replace"), usable_cpus())
    count = os.cpu_count() or 1
    return Machine(cpu=platform.processor() or platform.machine() or "unknown CPU", logical_cpus=count,
                   usable_cpus=usable_cpus() or count, flags=None)


def machine_line() -> str:
    return read_machine().line()


def machine_header() -> str:
    """The line a benchmark prints above its figures: the machine and its load now."""
    return f"machine: {machine_line()}; load average {load_average()}"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, "-" where the system has none."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "-"


def own_peak_rss_mib() -> float:
    """This process's own peak resident memory, MiB. On Linux the kernel's high-water mark of the
    process's own address space (VmHWM), which starts afresh at exec: getrusage's ru_maxrss does
    not, and a child spawned by a large parent reports the parent's peak as its own."""
    status = Path("/proc/self/status")
    if status.exists():
        found = re.search(r"^VmHWM:\s+(\d+)\s+kB", status.read_text(), re.MULTILINE)
        if found:
            return int(found.group(1)) / 1024
    # Systems without /proc (macOS): Linux, where the tests run, answers from VmHWM above and
    # never reaches these two lines, so their mutants are equivalent there.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # pragma: no mutate: unreached on Linux
    return peak / 2 ** 20 if sys.platform == "darwin" else peak / 1024  # pragma: no mutate: bytes on macOS, KiB elsewhere
