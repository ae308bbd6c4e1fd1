"""The weights a causal LM runs with on a CPU (ModelSettings.cpu_weights, agents/engines/cpu_path.py):
the path read from the CPU's flags, resolved when the configuration loads (so run_config.json and
the fingerprint name it), and each path made at load by the transformers engine. A tiny random
Llama (testkit/tiny_models.py); SmolLM2's figures: docs/benchmarks.md "CPU paths on the mini benchmark"."""
from __future__ import annotations

import pytest
import torch

from agents.config.loading import load_config
from agents.engines.base import ChatRequest, Sampling
from agents.engines.cpu_path import choose_cpu_weights, cpu_flags, resolve_cpu_weights
from agents.engines.transformers_engine import TransformersEngine
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


def test_an_unreadable_cpu_gets_float32(tmp_path):
    assert cpu_flags(tmp_path / "absent") is None
    assert choose_cpu_weights(None) == "float32"
    with pytest.raises(ValueError, match="cpu_weights 'int4'"):
        resolve_cpu_weights("int4", frozenset())


def test_the_cpu_profile_resolves_its_path_when_it_loads():
    """The resolved path, not "auto", is what a run records; other profiles stay float32."""
    assert load_config("cpu").models.cpu_weights == resolve_cpu_weights("auto")
    assert load_config("cpu", cpu_weights="float32").models.cpu_weights == "float32"
    assert load_config("l40s").models.cpu_weights == "float32"


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_llama()


def test_int8_quantizes_every_linear_layer_and_still_answers(tiny):
    engine = TransformersEngine(tiny, cpu_weights="int8")
    assert engine.cpu_weights == "int8"
    linear = [m for m in engine.net.modules() if type(m) is torch.nn.Linear]
    dynamic = [m for m in engine.net.modules() if type(m).__name__ == "Linear" and "quantized" in type(m).__module__]
    assert not linear and dynamic
    # one scale per output channel: a per-tensor scale rounds a 135M model's answers away
    assert dynamic[0].weight().qscheme() == torch.per_channel_affine
    request = ChatRequest([{"role": "user", "content": "what color is the bus"}])
    text = engine.generate([request], Sampling(max_tokens=6))[0]
    choice = engine.generate([request], Sampling(choices=("yes", "no")))[0]
    assert text.output_tokens > 0 and choice.text in ("yes", "no")


def test_bfloat16_and_float32_load_as_named(tiny):
    assert next(TransformersEngine(tiny, cpu_weights="bfloat16").net.parameters()).dtype == torch.bfloat16
    assert next(TransformersEngine(tiny, cpu_weights="float32").net.parameters()).dtype == torch.float32
