"""Benchmark figures that can fail: the machine read from the system (benchmarks/machine.py) and
benchmarks/cpu_engines.py's agreement column (always against float32) and paired lines, on
figures written by hand. A process's own peak memory, which takes child processes:
tests/full/test_peak_memory.py.

The cpuinfo fixtures are Linux's /proc/cpuinfo text: amd_epyc_avx2.txt is our development
machine's, copied as it is; intel_xeon_amx.txt is a Sapphire Rapids Xeon's in the same layout
(its flags as the kernel lists them on such a CPU, AMX and AVX-512 BF16 among them).
"""
from __future__ import annotations

from pathlib import Path

from benchmarks.cpu_engines import REFERENCE, Figures, backends_to_run, paired_lines, table
from benchmarks.machine import WATCHED_FLAGS, parse_cpuinfo

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "cpuinfo"


# --- the machine --------------------------------------------------------------------------------
def test_a_xeon_with_amx_is_read_with_its_model_its_cpus_and_every_watched_flag():
    machine = parse_cpuinfo((FIXTURES / "intel_xeon_amx.txt").read_text())
    assert machine.cpu == "Intel(R) Xeon(R) Platinum 8480+"
    assert (machine.logical_cpus, machine.usable_cpus) == (4, 4)
    assert machine.flags == WATCHED_FLAGS  # avx2 ... amx_int8, all of them, in the watched order
    line = machine.line()
    assert line.startswith("Intel(R) Xeon(R) Platinum 8480+, 4 logical CPUs (")
    assert "amx_bf16" in line and "avx512_bf16" in line and "; no " not in line
    assert machine.record()["flags"] == list(WATCHED_FLAGS)


def test_an_epyc_without_avx512_is_read_with_avx2_alone():
    machine = parse_cpuinfo((FIXTURES / "amd_epyc_avx2.txt").read_text(), usable_cpus=1)
    assert machine.cpu == "AMD EPYC"
    assert (machine.logical_cpus, machine.usable_cpus) == (2, 1)
    assert machine.flags == ("avx2",)
    assert machine.line() == ("AMD EPYC, 1 of 2 logical CPUs usable (avx2; no avx512f, avx512_vnni, avx512_bf16, "
                              "amx_tile, amx_bf16, amx_int8)")


def test_flags_are_whole_words_of_the_flags_line_only():
    """avx512_fp16 is not avx512f, and "vmx flags" (a later line of the same processor) is not its flags."""
    text = ("processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx2 avx512_fp16 amx_tile_x\n"
            "vmx flags\t: avx512f amx_bf16\n")
    assert parse_cpuinfo(text).flags == ("avx2",)


def test_an_arm_cpuinfo_gives_its_features_and_a_cpu_without_a_model_name_still_has_a_name():
    text = ("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n"
            "CPU implementer\t: 0x41\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n")
    machine = parse_cpuinfo(text)
    assert machine.logical_cpus == 2 and machine.flags == () and machine.cpu
    assert machine.line() == f"{machine.cpu}, 2 logical CPUs (none of {', '.join(WATCHED_FLAGS)})"


def test_an_x86_cpu_without_any_watched_flag_says_none_of_them_and_lists_nothing_as_missing_twice():
    machine = parse_cpuinfo("processor\t: 0\nmodel name\t: Old CPU\nflags\t\t: fpu sse2\n")
    assert machine.flags == ()
    assert machine.line() == ("Old CPU, 1 logical CPUs (none of avx2, avx512f, avx512_vnni, avx512_bf16, amx_tile, "
                              "amx_bf16, amx_int8)")


def test_a_system_that_does_not_list_its_flags_says_they_were_not_read():
    machine = parse_cpuinfo("processor\t: 0\nmodel name\t: Odd CPU\n")
    assert machine.flags is None and machine.line() == "Odd CPU, 1 logical CPUs (instruction sets not read)"


# --- cpu_engines' agreement column and paired lines ---------------------------------------------
def ran(key: str, answers: list[str], seconds: list[float], round_: int = 1, error: str = "",
        cpu: list[float] | None = None) -> Figures:
    return Figures(backend=f"backend {key}", key=key, round=round_, error=error, answers=answers,
                   answer_s=seconds, answer_cpu_s=seconds if cpu is None else cpu,
                   speeds={"8": (100.0, 10.0), "16": (100.0, 10.0)})


def agreement_column(markdown: str) -> dict[str, str]:
    rows = [line.split("|")[1:-1] for line in markdown.splitlines()[2:]]
    return {cells[0].strip(): cells[-1].strip() for cells in rows}


def test_float32_runs_as_the_reference_when_it_is_not_asked_for():
    assert backends_to_run(["bf16-rows", "int8-rows"]) == ["bf16-rows", "int8-rows", REFERENCE]
    assert backends_to_run(["fp32-rows", "fp32"]) == ["fp32-rows", "fp32"]  # asked: not twice


def test_agreement_is_counted_against_float32_not_against_the_first_backend():
    results = [ran("bf16-rows", ["a", "b", "c", "d"], [1.0]), ran("int8-rows", ["a", "b", "x", "y"], [1.0]),
               ran("fp32", ["a", "q", "c", "q"], [2.0])]
    column = agreement_column(table(results))
    assert column == {"backend bf16-rows": "2/4", "backend int8-rows": "1/4", "backend fp32": "4/4"}


def test_without_a_float32_run_the_column_says_no_reference():
    results = [ran("bf16-rows", ["a", "b"], [1.0]), ran("fp32", [], [], error="OSError: no model")]
    column = agreement_column(table(results))
    assert column["backend bf16-rows"] == "no reference"


def test_paired_lines_divide_float32s_seconds_by_each_backends_in_the_same_round():
    results = [ran("fp32", ["a"], [30.0, 20.0], 1, cpu=[20.0, 10.0]), ran("fp32-rows", ["a"], [15.0, 16.0], 1, cpu=[10.0, 10.0]),
               ran("fp32", ["a"], [60.0, 40.0], 2), ran("fp32-rows", ["a"], [20.0, 20.0], 2)]
    lines = paired_lines(results)
    assert len(lines) == 2
    assert lines[0].startswith("round 1: fp32-rows 15.0/16.0 s against fp32 30.0/20.0 s: 2.00/1.25x (1.61x in all); "
                               "CPU 10.0/10.0 s against 20.0/10.0 s: 2.00/1.00x (1.50x in all)")
    assert lines[1].startswith("round 2: fp32-rows 20.0/20.0 s against fp32 60.0/40.0 s: 3.00/2.00x (2.50x in all)")
    assert "round 2" in agreement_column(table(results)).popitem()[0]  # rows of several rounds say which


# --- the machine: its edges ---------------------------------------------------------------------
def test_a_model_name_with_a_colon_is_kept_whole():
    machine = parse_cpuinfo("processor\t: 0\nmodel name\t: AMD EPYC 7B13: 64-Core\nflags\t\t: avx2\n")
    assert machine.cpu == "AMD EPYC 7B13: 64-Core"


def test_the_cpu_is_read_from_the_processors_not_from_a_block_before_them():
    text = "model name\t: Not A Processor\n\nprocessor\t: 0\nmodel name\t: Real CPU\nflags\t\t: avx2\n"
    machine = parse_cpuinfo(text)
    assert (machine.cpu, machine.logical_cpus, machine.flags) == ("Real CPU", 1, ("avx2",))


def test_a_cpuinfo_without_processor_lines_reads_its_first_block_and_its_hardware_name():
    machine = parse_cpuinfo("Hardware\t: BCM2835\nFeatures\t: fp asimd\n", usable_cpus=3)
    assert (machine.cpu, machine.flags, machine.usable_cpus) == ("BCM2835", (), 3)


def test_read_machine_reads_the_file_it_is_given_and_says_when_there_is_none(tmp_path):
    from benchmarks.machine import read_machine

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Given CPU\nflags\t\t: avx2 avx512f\n")
    assert read_machine(cpuinfo).cpu == "Given CPU" and read_machine(cpuinfo).flags == ("avx2", "avx512f")
    absent = read_machine(tmp_path / "absent")
    assert absent.flags is None and absent.cpu and absent.logical_cpus >= 1 and absent.usable_cpus >= 1
    assert absent.line().endswith("(instruction sets not read)")


def test_the_load_average_is_three_figures_or_a_dash_where_the_system_has_none(monkeypatch):
    from benchmarks import machine

    monkeypatch.setattr(machine.os, "getloadavg", lambda: (0.5, 1.25, 12.0))
    assert machine.load_average() == "0.50 1.25 12.00"
    assert machine.machine_header().endswith("; load average 0.50 1.25 12.00")

    def none():
        raise OSError("no load average here")

    monkeypatch.setattr(machine.os, "getloadavg", none)
    assert machine.load_average() == "-"


def test_the_peak_memory_of_this_process_covers_what_it_holds_now_in_mib():
    from benchmarks.machine import own_peak_rss_mib

    held = bytearray(b"x" * (120 * 2 ** 20))  # written, so resident
    total_mib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:")) / 1024
    assert 120 <= own_peak_rss_mib() <= total_mib
    assert len(held) == 120 * 2 ** 20


def test_the_peak_memory_is_the_kernels_high_water_mark_in_kib_over_1024():
    from benchmarks.machine import own_peak_rss_mib

    def high_water_kib():
        return next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith("VmHWM:"))

    before = high_water_kib()
    peak = own_peak_rss_mib()
    assert before / 1024 <= peak <= high_water_kib() / 1024


def test_a_cpu_without_a_model_or_hardware_name_is_named_by_the_platforms_processor_then_its_machine(monkeypatch):
    from benchmarks import machine

    text = "processor\t: 0\nFeatures\t: fp asimd\n"
    monkeypatch.setattr(machine.platform, "processor", lambda: "arm")
    monkeypatch.setattr(machine.platform, "machine", lambda: "aarch64")
    assert parse_cpuinfo(text).cpu == "arm"
    monkeypatch.setattr(machine.platform, "processor", lambda: "")
    assert parse_cpuinfo(text).cpu == "aarch64"
    monkeypatch.setattr(machine.platform, "machine", lambda: "")
    assert parse_cpuinfo(text).cpu == "unknown CPU"


def test_a_cpuinfo_that_lists_no_processor_counts_the_systems_cpus_or_one(monkeypatch):
    from benchmarks import machine

    monkeypatch.setattr(machine.os, "cpu_count", lambda: 6)
    assert parse_cpuinfo("Hardware\t: BCM2835\n").logical_cpus == 6
    monkeypatch.setattr(machine.os, "cpu_count", lambda: None)
    assert (parse_cpuinfo("Hardware\t: BCM2835\n").logical_cpus, parse_cpuinfo("").logical_cpus) == (1, 1)


def test_without_a_cpuinfo_the_machine_is_the_platforms_name_and_the_cpus_the_system_counts(tmp_path, monkeypatch):
    from benchmarks import machine

    monkeypatch.setattr(machine.platform, "processor", lambda: "i386")
    monkeypatch.setattr(machine.platform, "machine", lambda: "arm64")
    monkeypatch.setattr(machine.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(machine, "usable_cpus", lambda: None)  # not on Linux
    absent = tmp_path / "absent"
    assert machine.read_machine(absent) == machine.Machine(cpu="i386", logical_cpus=8, usable_cpus=8, flags=None)
    monkeypatch.setattr(machine.platform, "processor", lambda: "")
    monkeypatch.setattr(machine.os, "cpu_count", lambda: None)
    monkeypatch.setattr(machine, "usable_cpus", lambda: 3)
    assert machine.read_machine(absent) == machine.Machine(cpu="arm64", logical_cpus=1, usable_cpus=3, flags=None)
    monkeypatch.setattr(machine.platform, "machine", lambda: "")
    assert machine.read_machine(absent).cpu == "unknown CPU"


def test_the_usable_cpus_are_this_processs_affinity_and_unknown_where_the_system_has_none(monkeypatch):
    import os

    from benchmarks import machine

    assert machine.usable_cpus() == len(os.sched_getaffinity(0))
    monkeypatch.delattr(machine.os, "sched_getaffinity")
    assert machine.usable_cpus() is None


def test_a_cpuinfo_file_with_bytes_that_are_not_utf8_is_read_with_this_processs_usable_cpus(tmp_path, monkeypatch):
    from benchmarks import machine

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_bytes(b"processor\t: 0\nmodel name\t: Caf\xe9 CPU\nflags\t\t: avx2 avx512f\n\nprocessor\t: 1\n")
    monkeypatch.setattr(machine, "usable_cpus", lambda: 1)
    read = machine.read_machine(cpuinfo)
    assert (read.cpu, read.logical_cpus, read.usable_cpus) == ("Caf\ufffd CPU", 2, 1)
    assert read.line() == ("Caf\ufffd CPU, 1 of 2 logical CPUs usable (avx2, avx512f; no avx512_vnni, avx512_bf16, "
                           "amx_tile, amx_bf16, amx_int8)")
    assert machine.Machine("Odd CPU", 1, 1, None).record()["flags"] is None  # not read stays not read
