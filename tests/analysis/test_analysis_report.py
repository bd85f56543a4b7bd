"""The HTML report: self-contained (figures as base64 PNG), tables, config, versions, git hash; renders in a
real browser (headless Chromium, skipped when absent)."""

import base64
import re
import shutil
import subprocess
from pathlib import Path

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


CHROMIUM = next((shutil.which(b) for b in ("chromium", "chromium-browser") if shutil.which(b)), None)
_NO_BROWSER = "chromium not installed (.ci/run installs Debian's chromium where apt is usable)"

# Runs after the page has loaded: records what a reader would see into attributes of <body>, so that
# `--dump-dom` hands them back (the report itself carries no script; this is added to a copy only).
_PROBE = """<script>
window.addEventListener('load', () => {
  const b = document.body, w = document.documentElement.clientWidth;
  b.dataset.probeText = String(b.innerText.trim().length);
  b.dataset.probeWidth = String(w);
  document.querySelectorAll('img').forEach((img, i) => {
    img.dataset.probe = (img.complete && img.naturalWidth > 0) ? 'loaded' : 'broken';
    img.dataset.probeShown = String(Math.round(img.getBoundingClientRect().width));
    img.dataset.probeNatural = String(img.naturalWidth);
  });
  document.querySelectorAll('table').forEach(t => {
    const counts = Array.from(t.rows).map(r => Array.from(r.cells).reduce((a, c) => a + c.colSpan, 0));
    t.dataset.probeRows = String(t.rows.length);
    t.dataset.probeRagged = String(new Set(counts).size > 1);
    t.dataset.probeOverflow = String(Math.round(t.getBoundingClientRect().right) > w + 1);
  });
  b.dataset.probeDone = '1';
});
</script>"""


def browser_check(report: Path, tmp_path: Path, width: int = 1280) -> list[str]:
    """Render ``report`` in headless Chromium; return the problems a reader would see (empty: fine):
    a blank page, an ``<img>`` that did not load, a table with rows of different lengths or no data rows, a
    table wider than the window."""
    probe = tmp_path / f"probe-{report.stem}.html"
    probe.write_text(
        report.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"), encoding="utf-8"
    )
    profile = tmp_path / "chromium-profile"  # fresh profile: no state from earlier runs or other users
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        f"--window-size={width},2000",
        "--virtual-time-budget=5000",
        "--dump-dom",
        probe.as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    dom = proc.stdout
    if 'data-probe-done="1"' not in dom:
        return [f"the page did not finish loading (chromium rc {proc.returncode}): {proc.stderr[-500:]}"]
    problems = []
    text = re.search(r'data-probe-text="(\d+)"', dom)
    if not re.search(r"<h1>.+</h1>", dom) or not text or int(text.group(1)) < 50:
        problems.append("blank page: no title or almost no text")
    for i, m in enumerate(re.finditer(r"<img[^>]*>", dom)):
        tag = m.group(0)
        if 'data-probe="loaded"' not in tag:
            problems.append(f"image {i} did not load")
    for i, m in enumerate(re.finditer(r"<table[^>]*>", dom)):
        tag = m.group(0)
        if 'data-probe-ragged="true"' in tag:
            problems.append(f"table {i} is broken: rows with different numbers of cells")
        if re.search(r'data-probe-rows="[01]"', tag) and 'class="meta"' not in tag:
            problems.append(f"table {i} has no data rows")
        if 'data-probe-overflow="true"' in tag:
            problems.append(f"table {i} is wider than the page")
    return problems


@pytest.mark.check
@pytest.mark.skipif(CHROMIUM is None, reason=_NO_BROWSER)
def test_browser_check_sees_missing_images_and_broken_tables(tmp_path):
    """The check itself: a report with a corrupt image and a ragged table is flagged, a blank page too."""
    path, _ = _report(tmp_path)
    html = path.read_text()
    html = re.sub(
        r'src="data:image/png;base64,[^"]{20}', 'src="data:image/png;base64,AAAAAAAAAAAAAAAAAAAA', html
    )
    html = html.replace("</tbody>", "<tr><td>1</td></tr></tbody>", 1)
    bad = tmp_path / "bad.html"
    bad.write_text(html)
    problems = browser_check(bad, tmp_path)
    assert any("image 0 did not load" in p for p in problems), problems
    assert any("rows with different numbers of cells" in p for p in problems), problems
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    assert any("blank page" in p for p in browser_check(blank, tmp_path))


@pytest.mark.check
@pytest.mark.skipif(CHROMIUM is None, reason=_NO_BROWSER)
def test_experiment_report_renders_in_headless_chromium(tmp_path, smoke_report):
    """A real report (2024 Fig. 2 top, smoke size) as a reader's browser shows it: text, every figure loaded,
    tables whole and within the page; and a screenshot that is not blank."""
    from matplotlib.image import imread

    report = smoke_report("fig2-top")
    assert browser_check(report, tmp_path) == []
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile-shot'}",
            "--window-size=1280,1600",
            f"--screenshot={shot}",
            report.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    img = imread(shot)
    assert img.shape[:2] == (1600, 1280)
    assert img[..., :3].std() > 0.05  # not a blank page


def test_multi_panel_figures_get_the_page_width(tmp_path):
    from matplotlib.figure import Figure

    wide = Figure(figsize=(12, 3))
    wide.add_subplot(1, 4, 1)
    png_wide, _ = save_figure(wide, tmp_path, "wide")
    narrow, _ = plot_matrix(np.eye(3))
    png_narrow, _ = save_figure(narrow, tmp_path, "narrow")
    html = Report("r").add_figure(png_wide, "four panels").add_figure(png_narrow, "one panel").to_html()
    assert html.count('<figure class="wide">') == 1 and html.count("<figure>") == 1
    assert "max-width:540px" not in html


def test_smoke_report_says_what_was_run(smoke_report):
    html = smoke_report("fig2-top").read_text()
    assert "This report is the smoke variant. Actually run: fig2-top: K = 10, n = 5, L = 4" in html
    assert "steps = 300" in html and "2 seeds" in html
