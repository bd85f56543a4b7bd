"""The HTML report: self-contained (figures as base64 PNG), tables, config, versions, git hash; renders in a
real browser (headless Chromium, skipped when absent)."""

import base64
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from deepcollapse.analysis.figures import plot_matrix, save_figure
from deepcollapse.analysis.report import Report, environment_info


def _report(tmp_path):
    fig, _ = plot_matrix(np.arange(12.0).reshape(3, 4), title="test matrix")
    png, _ = save_figure(fig, tmp_path, "m")
    rep = Report("My <sweep>", description="desc & more", command="deepcollapse sweep x.yaml --out y")
    rep.section("Figures").add_figure(png, "a caption")
    rep.section("Tables").add_table(pd.DataFrame({"lam": [0.004], "final_loss_mean": [0.123456789]}), "tab")
    rep.set_config({"base": {"classes": 10, "lam": 0.004}, "seeds": [0, 1]})
    return rep.write(tmp_path / "report.html"), png


def test_report_is_self_contained(tmp_path):
    path, png = _report(tmp_path)
    html = path.read_text()
    assert base64.b64encode(png.read_bytes()).decode() in html
    assert "My &lt;sweep&gt;" in html and "desc &amp; more" in html
    assert "0.123457" in html and "<table" in html
    assert "classes: 10" in html and "seeds:" in html
    info = environment_info()
    assert info["numpy"] in html and "git" in info
    # nothing fetched from elsewhere
    assert not re.search(r'(src|href)="(http|//)', html)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed")
def test_report_renders_in_headless_chromium(tmp_path):
    from matplotlib.image import imread

    path, _ = _report(tmp_path)
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--window-size=1000,1200",
            f"--screenshot={shot}",
            path.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert shot.is_file()
    img = imread(shot)
    assert img.shape[0] == 1200 and img.shape[1] == 1000
    # the page is not blank: the figure's colours and the text make a varied image
    assert img[..., :3].std() > 0.05
