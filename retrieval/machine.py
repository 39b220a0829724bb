"""Which CPU a run's numbers came from, as far as they depend on it: the architecture and the vector instruction
sets that torch's and onnxruntime's kernels choose between. The same corpus, config and code give bit-identical
metrics on one such CPU (docs/determinism.md); another one (AVX-512 VNNI against AVX2, say) sums and quantises in
other ways, so the last bits of every vector differ and a ranking can move. Reports record it so that a comparison
or a gate can say so instead of calling every difference the change's."""

from __future__ import annotations

import functools
import platform
from pathlib import Path

# The instruction sets whose presence changes the kernels torch (oneDNN / MKL) and onnxruntime (MLAS) run.
FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_int8", "amx_bf16")


def kind(cpuinfo: str | None = None, arch: str | None = None) -> str:
    """``<architecture> <flag+flag…>`` (Linux: from ``/proc/cpuinfo``'s first ``flags`` line); the architecture
    alone where the flags cannot be read (another system, a sandbox)."""
    arch = arch if arch is not None else platform.machine() or "unknown"
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    line = next((ln for ln in cpuinfo.splitlines() if ln.split(":")[0].strip() in ("flags", "Features")), "")
    have = set(line.partition(":")[2].split())
    found = [f for f in FLAGS if f in have]
    return f"{arch} {'+'.join(found)}" if found else arch


@functools.cache
def this_machine() -> str:
    """``kind()`` of the CPU this process runs on (read once)."""
    return kind()
