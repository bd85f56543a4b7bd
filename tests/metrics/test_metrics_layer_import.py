"""``from deepcollapse.metrics import layer_metrics`` (the documented import) works, and importing
deepcollapse.metrics still loads no torch (issue 44, point 2c)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.check  # seconds-long end to end: the claims tier keeps the fast tier within 3 minutes
def test_layer_metrics_is_exported_lazily():
    code = (
        "import sys, deepcollapse.metrics as m\n"
        "assert 'torch' not in sys.modules, 'import deepcollapse.metrics loaded torch'\n"
        "assert 'layer_metrics' in m.__all__ and 'layer_metrics' in dir(m)\n"
        "from deepcollapse.metrics import layer_metrics\n"
        "from deepcollapse.metrics.capture import layer_metrics as defined\n"
        "assert layer_metrics is defined\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
