"""`dufm landscape` a user can follow: the verdict in words, results saved by default (never over another
result without --force), progress on stderr, and a zoomed slice that holds the certified descent step."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.cli import main
from deepcollapse.landscape.explain import MEANINGS, explain, verdicts_epilog
from deepcollapse.landscape.output import claim_output, default_output, landscape_inputs
from deepcollapse.landscape.slices import descent_slice
from deepcollapse.landscape.solution_file import save_solution
from deepcollapse.landscape.verdicts import VERDICTS, landscape, load_point
from deepcollapse.theory import dnc_solution

# a minimal landscape dict per verdict (numbers made up, in the shape `landscape` returns)
_TOL = {"grad_tol": 1e-6, "eig_tol": 1e-6}
_BASE = {
    "grad_norm": 2e-2,
    "clarke_residual": 3e-10,
    "symmetry_dim": 3,
    "near_zero_modes": 0,
    "tolerances": _TOL,
}
_CASES = {
    "local minimum": {"grad_norm": 1e-14, "lowest_eigenvalues_off_symmetry": [4e-3, 5e-3]},
    "saddle": {"grad_norm": 1e-14, "lowest_eigenvalues_off_symmetry": [-4e-3, 5e-3]},
    "not critical": {
        "lowest_eigenvalues_off_symmetry": [4e-3],
        "certified_descent": {"along": "−∇f", "step": 7e-6, "delta": -2e-9},
    },
    "critical at a kink": {
        "lowest_eigenvalues_off_symmetry": [-3.9e-3, -3.5e-3, 1e-3],
        "curvature_probe": {"delta": 3.5e-12, "step": 6.3e-10, "direction": "+v_1"},
    },
    "undecided at kinks": {"lowest_eigenvalues_off_symmetry": [1e-3], "verdict_note": "12 near-kinks"},
}


def test_every_verdict_has_a_meaning_and_an_explanation_with_its_numbers():
    assert set(MEANINGS) == set(VERDICTS) == set(_CASES)
    epilog = verdicts_epilog()
    for verdict in VERDICTS:
        assert len(MEANINGS[verdict]) > 100 and f"{verdict}:" in epilog
        text = explain({**_BASE, **_CASES[verdict], "verdict": verdict})
        assert len(text) > 60 and "\n" not in text
    kink = explain({**_BASE, **_CASES["critical at a kink"], "verdict": "critical at a kink"})
    assert "Clarke subdifferential (residual 3.000e-10" in kink
    assert "2 negative eigenvalues" in kink and "-3.900e-03" in kink and "saddle" in kink
    assert "found no decrease" in kink and "3.5e-12" in kink
    found = {"along": "+v_1", "step": 6.3e-10, "delta": -1e-9}
    kink2 = explain(
        {**_BASE, **_CASES["critical at a kink"], "verdict": "critical at a kink", "certified_descent": found}
    )
    assert "found a decrease" in kink2
    assert "7e-06" in explain({**_BASE, **_CASES["not critical"], "verdict": "not critical"})


def test_default_output_is_next_to_the_input(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    npz = tmp_path / "best.npz"
    npz.write_bytes(b"")
    assert default_output(str(run), None, 2, 3, 3) == run / "landscape"
    assert default_output(str(npz), None, 2, 3, 3) == tmp_path / "best.landscape"
    assert str(default_output(None, "srg", 10, 4, 50)) == "landscape_srg_K10_L4_n50"


def _inputs(k: int = 6) -> dict:
    sol = dnc_solution(2, 3, 3, 0.01, 0.01, width=2)
    params, problem, _ = load_point(
        construction="dnc", classes=2, layers=3, n=3, lam_h=0.01, lam_w=0.01, width=2
    )
    assert np.array_equal(params[0], sol.H1)
    return landscape_inputs(params, problem, k=k, grad_tol=1e-6, eig_tol=1e-6)


def test_another_result_is_not_overwritten_without_force(tmp_path):
    out = tmp_path / "land"
    claim_output(out, _inputs(), force=False, option="--out")
    (out / "landscape.json").write_text(json.dumps({"verdict": "saddle", "inputs": _inputs()}))
    claim_output(out, _inputs(), force=False, option="--out")  # the same inputs: a re-run may replace it
    with pytest.raises(
        ConfigError, match=r"--out == '.*land' holds the landscape of another point .*k 6 -> 8.*--force"
    ):
        claim_output(out, _inputs(k=8), force=False, option="--out")
    with pytest.raises(ConfigError, match=r"the default output folder .* or --out to save elsewhere"):
        claim_output(out, _inputs(k=8), force=False, option=None)
    claim_output(out, _inputs(k=8), force=True, option="--out")


def test_zoomed_slice_holds_the_certified_descent_step():
    """SRG at K = 6 (L = 4) has a descent along −∇f (see test_dufm_landscape); the zoomed slice spans ±3t*
    and its value at t* is the decrease, checked against the theory engine's eq. (1) at θ + t* u.

    u is the landscape's unit direction; that it is (close to) −∇f/‖∇f‖ is checked with ∇f from float64
    autograd of an objective written here. SRG sits on ReLU kinks (pre-activations that are 0 in exact
    arithmetic): which side of a kink a rounded product lands on depends on the BLAS kernel (AVX-512 Intel vs
    AVX2 AMD), and autograd's one-sided derivative there with it, so the two directions agree only up to those
    entries (cosine > 0.9), while the step along u itself must reproduce the slice to 1e-6."""
    import torch

    from deepcollapse.theory import dufm_objective

    params, problem, _ = load_point(
        construction="srg", classes=6, layers=4, n=1, lam_h=0.004, lam_w=0.004, width=6
    )
    r = landscape(params, problem)
    d = r.certified_descent
    assert d is not None and d["along"] == "−∇f" and d["delta"] < 0
    u = r.descent_direction
    assert np.linalg.norm(u) == pytest.approx(1.0, rel=1e-12)
    zoom = descent_slice(params, problem, u, d["step"])
    t = d["step"]
    assert zoom["a"].min() == pytest.approx(-3 * t) and zoom["a"].max() == pytest.approx(3 * t)
    assert t in zoom["a"] and 0.0 in zoom["a"]
    at = zoom["f"][zoom["a"] == t][0] - zoom["loss"]
    assert at == pytest.approx(d["delta"], rel=1e-9)
    sizes = np.cumsum([p.size for p in params])[:-1]
    moved = [p + t * x.reshape(p.shape) for p, x in zip(params, np.split(u, sizes))]
    f0 = dufm_objective(params[0], params[1:], 0.004, [0.004] * 4).total
    assert dufm_objective(moved[0], moved[1:], 0.004, [0.004] * 4).total - f0 == pytest.approx(at, rel=1e-6)
    ts = [torch.tensor(p, requires_grad=True) for p in params]
    H = ts[0]
    for W in ts[1:-1]:
        H = torch.relu(W @ H)
    f = ((ts[-1] @ H - torch.eye(6)) ** 2).sum() / 12 + 0.002 * sum((x**2).sum() for x in ts)
    g = np.concatenate([x.numpy().ravel() for x in torch.autograd.grad(f, ts)])
    assert float(np.dot(u, -g)) / np.linalg.norm(g) > 0.9
    # the main slice (±0.05 ‖θ‖) is far wider than the step: without the zoom the descent is not visible
    assert 0.05 * np.linalg.norm(np.concatenate([p.ravel() for p in params])) > 10 * t


def test_landscape_progress_bars_go_to_stderr_only_when_asked(capsys):
    params, problem, _ = load_point(
        construction="dnc", classes=2, layers=3, n=3, lam_h=0.01, lam_w=0.01, width=2
    )
    quiet = landscape(params, problem)
    assert capsys.readouterr() == ("", "")
    loud = landscape(params, problem, progress=True)
    captured = capsys.readouterr()
    assert captured.out == "" and "Hessian (16 parameters): Hessian-vector products" in captured.err
    assert loud == quiet  # the numbers do not depend on the bars


_DNC = [
    "--construction",
    "dnc",
    "--classes",
    "2",
    "--layers",
    "3",
    "--n",
    "3",
    "--lam",
    "0.01",
    "--width",
    "2",
]


@pytest.fixture
def figures(monkeypatch):
    """The slice figure's data as the command hands it to the plot (drawing and saving it is stubbed out here:
    a figure costs ~1-2 s; the check-tier test below draws the real one)."""
    import deepcollapse.analysis.figures as figs
    import deepcollapse.analysis.landscape_plots as plots

    drawn: list[dict] = []

    def plot_slices(slices, result, title="", zoom=None):
        drawn.append({"slices": slices, "result": result, "zoom": zoom})
        return None, None

    def save_figure(fig, out, name):
        paths = (Path(out) / f"{name}.png", Path(out) / f"{name}.pdf")
        for p in paths:
            p.write_bytes(b"")
        return paths

    monkeypatch.setattr(plots, "plot_slices", plot_slices)
    monkeypatch.setattr(figs, "save_figure", save_figure)
    return drawn


def test_cli_saves_by_default_refuses_another_result_and_shows_progress_on_stderr(
    tmp_path, monkeypatch, capsys, figures
):
    monkeypatch.chdir(tmp_path)
    assert main(["dufm", "landscape", *_DNC]) == 0
    captured = capsys.readouterr()
    out = tmp_path / "landscape_dnc_K2_L3_n3"
    assert "Hessian-vector products" in captured.err and "loss slices" in captured.err  # tqdm bars
    assert "Hessian-vector products" not in captured.out
    assert f"saved in {out.name}" in captured.out and "local minimum of the smooth piece" in captured.out
    saved = json.loads((out / "landscape.json").read_text())
    assert saved["verdict"] == "local minimum" and saved["explanation"] and saved["inputs"]["k"] == 6
    assert saved["figure"] == str(out.relative_to(tmp_path) / "landscape_slices.png")
    assert (out / "landscape_slices.npz").is_file() and figures[0]["zoom"] is None  # nothing certified
    before = (out / "landscape.json").read_text()
    assert main(["dufm", "landscape", *_DNC, "--k", "4", "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "k 6 -> 4" in captured.err and "--force" in captured.err
    assert (out / "landscape.json").read_text() == before  # nothing written
    assert main(["dufm", "landscape", *_DNC, "--k", "4", "--no-progress", "--force", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # --no-progress: no bars
    assert json.loads(captured.out)["inputs"]["k"] == 4


def test_cli_zooms_on_the_certified_descent_next_to_a_solution_file(tmp_path, capsys, figures):
    params, problem, _ = load_point(
        construction="srg", classes=6, layers=4, n=1, lam_h=0.004, lam_w=0.004, width=6
    )
    path = save_solution(tmp_path / "srg6.npz", params[0], params[1:], n=1, lam_h=0.004, lam_w=[0.004] * 4)
    assert main(["dufm", "landscape", str(path), "--no-progress"]) == 0
    text = capsys.readouterr().out
    out = tmp_path / "srg6.landscape"
    assert "certified descent direction" in text and f"saved in {out}" in text
    saved = json.loads((out / "landscape.json").read_text())
    step = saved["certified_descent"]["step"]
    (drawn,) = figures
    zoom, slices = drawn["zoom"], drawn["slices"]
    assert step in zoom["a"] and zoom["a"].max() == pytest.approx(3 * step) and slices["t"].max() > 10 * step
    assert zoom["f"][zoom["a"] == step][0] - zoom["loss"] == pytest.approx(
        saved["certified_descent"]["delta"]
    )
    with np.load(out / "landscape_slices.npz") as z:  # the same data, saved beside the figure
        assert np.array_equal(z["zoom_a"], zoom["a"]) and float(z["zoom_step"]) == step


@pytest.mark.check
def test_cli_draws_the_zoomed_slice_figure(tmp_path, capsys):
    params, problem, _ = load_point(
        construction="srg", classes=6, layers=4, n=1, lam_h=0.004, lam_w=0.004, width=6
    )
    path = save_solution(tmp_path / "srg6.npz", params[0], params[1:], n=1, lam_h=0.004, lam_w=[0.004] * 4)
    assert main(["dufm", "landscape", str(path), "--no-progress", "--out", str(tmp_path / "o")]) == 0
    assert "saved in" in capsys.readouterr().out
    for name in ("landscape_slices.png", "landscape_slices.pdf", "landscape.json"):
        assert (tmp_path / "o" / name).stat().st_size > 0
