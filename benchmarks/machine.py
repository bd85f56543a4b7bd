"""What CPU a benchmark ran on, read in one place for every benchmark script here (they run as scripts,
so this sibling module imports by name): the model name, the /proc/cpuinfo flags, the widest SIMD level."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

_SIMD_LEVELS = (("amx", "amx_tile"), ("avx512", "avx512f"), ("avx2", "avx2"), ("avx", "avx"))


def _cpuinfo_field(key: str) -> str | None:
    """The first ``key : value`` of /proc/cpuinfo (``None`` where there is none, e.g. macOS)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == key:
            return value.strip()
    return None


def cpu_model() -> str:
    """The CPU's model name (``platform`` where /proc/cpuinfo has none)."""
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_flags() -> set[str]:
    """The CPU flags of /proc/cpuinfo (empty where there is none)."""
    return set((_cpuinfo_field("flags") or "").split())


def cpu_info() -> dict[str, Any]:
    """The CPU model, its widest SIMD level (``amx`` / ``avx512`` / ``avx2`` / ``avx`` / ``other``; ``None``
    without /proc/cpuinfo) and the number of CPUs."""
    flags = _cpuinfo_field("flags")
    simd = None
    if flags is not None:
        have = set(flags.split())
        simd = next((name for name, flag in _SIMD_LEVELS if flag in have), "other")
    return {"model": cpu_model(), "simd": simd, "cpus": os.cpu_count()}
