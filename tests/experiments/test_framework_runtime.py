"""A report states the wall time of the very run that wrote it (measured, with the machine's cores and load),
beside the static estimate."""

from __future__ import annotations

import html
import re
import time

from deepcollapse.experiments.framework import Experiment, measured_runtime


def test_the_report_states_the_measured_wall_time_of_its_run(tmp_path):
    pause = 0.6

    def body(ctx):
        time.sleep(pause)  # the "work": its length is known independently of the code under test

    exp = Experiment("t", "test", "no figure", "a stand-in", "none", "≈ 1 s", "theory", body)
    t0 = time.perf_counter()
    report = exp.run(tmp_path / "out")
    outer = time.perf_counter() - t0
    text = html.unescape(report.read_text())
    said = re.findall(r"This run took (\d+) s of wall time on this machine \((\d+) CPU cores", text)
    assert len(said) == 1, text[:2000]
    assert pause - 0.5 <= int(said[0][0]) <= outer + 0.5
    assert "Expected runtime" in text  # the static estimate stays, next to the measurement


def test_measured_runtime_words():
    busy, idle = measured_runtime(65.2, 1.54), measured_runtime(360.0, None)
    assert "took 65 s" in busy and "load average 1.5 at the start" in busy
    assert "took 6.0 min" in idle and "load average" not in idle
