"""The weights a causal LM runs with on a CPU (ModelSettings.cpu_weights, agents/engines/cpu_path.py):
the path read from the CPU's flags, resolved when the configuration loads (so run_config.json and
the fingerprint name it), and each path made at load by the transformers engine that the run's own
factory builds from the run's settings. A tiny random
Llama (testkit/tiny_models.py); SmolLM2's figures: docs/benchmarks.md "CPU paths on the mini benchmark"."""
from __future__ import annotations

import warnings

import pytest
import torch

from agents.config.loading import load_config, load_config_from_settings
from agents.engines.base import ChatRequest, Ledger, Sampling
from agents.engines.cpu_path import choose_cpu_weights, cpu_flags, resolve_cpu_weights
from agents.factory import build_engines
from testkit.tiny_models import build_tiny_llama

# /proc/cpuinfo as Linux writes it: x86 (flags), ARM (Features, no model name)
EPYC = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9B14
flags\t\t: fpu vme sse sse2 avx avx2 avx512f avx512_vnni avx512_bf16

processor\t: 1
model name\t: AMD EPYC 9B14
flags\t\t: fpu vme sse sse2 avx avx2 avx512f avx512_vnni avx512_bf16
"""
OLD_X86 = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU E5-2680\nflags\t\t: fpu sse sse2 avx\n"
ARM = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n"


# float32 on every CPU until another path keeps the mini benchmark's answers (cpu_path.choose_cpu_weights):
# int8 and bfloat16 did not on the AVX512-BF16 EPYC
@pytest.mark.parametrize("text, flag, path", [(EPYC, "avx512_bf16", "float32"), (OLD_X86, "avx", "float32"),
                                              (ARM, "asimd", "float32")])
def test_the_cpu_flags_choose_the_path(tmp_path, text, flag, path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(text)
    flags = cpu_flags(cpuinfo)
    assert flag in flags and "avx2x" not in flags
    assert choose_cpu_weights(flags) == path
    assert resolve_cpu_weights("auto", flags) == path
    assert resolve_cpu_weights("int8", flags) == "int8"  # a forced path is kept


def test_a_cpuinfo_with_bytes_that_are_not_utf8_still_gives_its_flags(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_bytes(b"processor\t: 0\nmodel name\t: Vendor \xff\xfe CPU\nflags\t\t: fpu sse2 avx2\n")
    assert cpu_flags(cpuinfo) == frozenset({"fpu", "sse2", "avx2"})


def test_an_unreadable_cpu_gets_float32(tmp_path):
    assert cpu_flags(tmp_path / "absent") is None
    assert choose_cpu_weights(None) == "float32"
    with pytest.raises(ValueError) as refused:
        resolve_cpu_weights("int4", frozenset())
    assert str(refused.value) == "cpu_weights 'int4': choose auto or one of float32, bfloat16, int8"


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_llama()


def run_engines(tiny_vlm: str, tiny_router: str, *sets: str):
    """The engines a cpu run with these --set strings builds: its configuration as the run loads
    it (load_config_from_settings), then the run's own factory (agents/factory.py, the engine
    registry's `build`), as CruiseAgent builds them."""
    config = load_config_from_settings("cpu", None, [f"vlm_model={tiny_vlm}", f"router_model={tiny_router}", *sets])
    return config, build_engines(config, Ledger())


def linear_kinds(engine) -> tuple[int, int]:
    """(plain Linear layers, dynamically quantized ones) of an engine's network."""
    modules = list(engine.net.modules())
    return (sum(type(m) is torch.nn.Linear for m in modules),
            sum(type(m).__name__ == "Linear" and "quantized" in type(m).__module__ for m in modules))


def test_a_runs_auto_path_is_resolved_when_it_loads_and_is_the_one_its_engine_runs(tiny):
    """The resolved path, not "auto", is what a run records, and its engine runs that one; other
    profiles stay float32."""
    config, engines = run_engines(tiny, tiny, "cpu_weights=auto")
    assert config.models.cpu_weights == resolve_cpu_weights("auto") == engines.vlm.cpu_weights
    assert load_config("cpu").models.cpu_weights == resolve_cpu_weights("auto")
    assert load_config("l40s").models.cpu_weights == "float32"


def test_int8_set_for_a_run_quantizes_every_linear_layer_of_each_roles_engine_which_still_answers(tiny, tmp_path):
    router = build_tiny_llama(tmp_path / "router")  # another model: the router gets an engine of its own
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config, engines = run_engines(tiny, router, "cpu_weights=int8")
    assert not caught  # torch's notice that torch.ao's quantization moves would fill every run's console
    assert engines.router is not engines.vlm
    for engine in (engines.vlm, engines.router):
        assert engine.cpu_weights == "int8"
        plain, dynamic = linear_kinds(engine)
        assert plain == 0 and dynamic > 0
        # one scale per output channel: a per-tensor scale rounds a 135M model's answers away
        quantized = next(m for m in engine.net.modules() if "quantized" in type(m).__module__ and hasattr(m, "weight"))
        assert quantized.weight().qscheme() == torch.per_channel_affine
    request = ChatRequest([{"role": "user", "content": "what color is the bus"}])
    text = engines.vlm.generate([request], Sampling(max_tokens=6))[0]
    choice = engines.router.generate([request], Sampling(choices=("yes", "no")))[0]
    assert text.output_tokens > 0 and choice.text in ("yes", "no")


@pytest.mark.parametrize("path, dtype", [("bfloat16", torch.bfloat16), ("float32", torch.float32)])
def test_bfloat16_and_float32_set_for_a_run_load_its_engine_as_named(tiny, path, dtype):
    _, engines = run_engines(tiny, tiny, f"cpu_weights={path}")
    assert engines.router is engines.vlm  # one model plays both roles: one engine
    assert engines.vlm.cpu_weights == path
    assert {p.dtype for p in engines.vlm.net.parameters()} == {dtype}
    assert linear_kinds(engines.vlm)[1] == 0
