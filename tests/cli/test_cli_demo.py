"""`deepcollapse demo`: one report with the theory table, the flagship DUFM panels and Fig. 3 left."""

import torch

from deepcollapse.cli import main

torch.set_num_threads(1)


def test_demo_small(tmp_path, capsys):
    out = tmp_path / "demo"
    assert (
        main(["demo", "--out", str(out), "--steps", "40", "--runs", "2", "--workers", "1", "--no-progress"])
        == 0
    )
    text = capsys.readouterr().out
    assert f"report: {out.resolve() / 'report.html'}" in text.splitlines()[-1]
    html = (out / "report.html").read_text()
    for heading in ("1. Theory", "2. Flagship 4-DUFM", "3. 2024 Fig. 3 left"):
        assert heading in html
    assert html.count("data:image/png;base64,") >= 4  # loss, DNC1, singular values, ratio
    assert "loss_dnc" in html and "classification" in html


def test_demo_needs_out(capsys):
    assert main(["demo"]) == 2
    assert "--out == None" in capsys.readouterr().err
