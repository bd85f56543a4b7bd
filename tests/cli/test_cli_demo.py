"""`deepcollapse demo`: one report with the theory table, the flagship DUFM panels and Fig. 3 left."""

import pytest
import torch

from deepcollapse.cli import main

torch.set_num_threads(1)


@pytest.mark.check  # seconds-long end to end: the claims tier keeps the fast tier within 3 minutes
def test_demo_small(tmp_path, capsys):
    out = tmp_path / "demo"
    assert (
        main(["demo", "--out", str(out), "--steps", "40", "--runs", "2", "--workers", "1", "--no-progress"])
        == 0
    )
    text = capsys.readouterr().out
    assert f"report: {out.resolve() / 'report.html'}" in text.splitlines()[-1]
    html = (out / "report.html").read_text()
    for heading in ("1. Theory", "2. Flagship 4-DUFM", "3. 2024 Fig. 3 left", "4. 2024 Fig. 1"):
        assert heading in html
    assert html.count("data:image/png;base64,") >= 5  # loss, DNC1, singular values, ratio, SRG matrices
    assert "loss_dnc" in html and "classification" in html
    # the terminal shows the theory comparison and each run's analysis next to the theory values
    from deepcollapse.theory import compare

    c = compare(10, 4, 50, 0.004, 0.004)
    assert f"L_SRG / L_DNC = {c['ratio']:.6f}" in text
    assert text.count(f"L_DNC = {c['loss_dnc']:.6f}   L_SRG = {c['loss_srg']:.6f}") == 2  # per seed folder
    assert "classifications:" in text
    assert "figures/fig1_srg_dnc.png" in text and "figures/fig3_left_ratio.png" in text


def test_demo_needs_out(capsys):
    assert main(["demo"]) == 2
    assert "--out == None" in capsys.readouterr().err
