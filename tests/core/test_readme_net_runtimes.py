"""The README's table of paper-scale network runtimes is what tools/readme_net_runtimes.py computes from the
gpu-check result in benchmarks/results (or says that nothing was measured yet), and the tool's arithmetic
agrees with a hand computation on a small made-up result."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location(
        "readme_net_runtimes", ROOT / "tools" / "readme_net_runtimes.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_holds_the_section_the_tool_computes(tool):
    readme = (ROOT / "README.md").read_text()
    start, end = readme.index(tool.START), readme.index(tool.END) + len(tool.END)
    path = tool.find_gpu_check()
    assert readme[start:end] == tool.section(tool.load(path), path.name if path else "")
    if path is None:
        assert "not measured yet" in readme[start:end]


def test_hours_from_measured_rows(tool):
    def row(label: str, S: int, per_seed: float) -> dict:
        return {"device": "cuda", "shape": "cifar10", "flops_per_image": 1.0, "label": label, "seeds": S,
                "images_per_s": S * per_seed, "images_per_s_per_seed": per_seed}  # fmt: skip

    rows = [row("single", 1, 10_000.0), row("batched S=4", 4, 30_000.0), row("batched S=8", 8, 25_000.0)]
    rows.append(row("graph S=8", 8, 1.0))  # not a batched row: not used
    result = {"device": "GPU X", "steps": [{"benchmark": "net_throughput", "rows": rows}]}
    text = tool.section(result)
    line = next(ln for ln in text.splitlines() if ln.startswith("| net-2024-fig2-bottom |"))
    # 5 seeds in one batch: 30 000 + (25 000 - 30 000) / 4 = 28 750 images/s per seed; 200 epochs of 50 000
    assert line == (
        f"| net-2024-fig2-bottom | 5 | 5 | 28750 | {200 * 50_000 / 28_750 / 60:.0f} min | "
        f"{5 * 200 * 50_000 / 10_000 / 60:.0f} min |"
    )
    assert "| net-2024-fig4-mnist | 5 | 5 | not measured (mnist) | - | - |" in text
