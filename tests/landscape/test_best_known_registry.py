"""The best-known registry (issue 31): offers re-evaluated and kept only below the row, the merge is the
cell-wise minimum, concurrent writers lose no row, bad registry files are one line and change nothing.

Reference losses come from the explicit matrices of formulas.md's eq. (1) (MSE + ReLU, numpy, below), not from
the registry's own evaluation."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import numpy as np
import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.landscape.best_known import (
    FORMAT_VERSION,
    CellKey,
    Provenance,
    Registry,
    merge,
    open_registry,
    user_registry_dir,
)
from deepcollapse.landscape.solution_file import save_solution

K, L, N_PER, WIDTH, LAM = 3, 3, 2, 4, 0.01


def reference_loss(H1: np.ndarray, weights: list[np.ndarray], lam: float = LAM) -> float:
    """formulas.md eq. (1) with explicit matrices: 1/(2N)‖W_L H_L − Y‖² + λ/2 (‖H_1‖² + Σ‖W_l‖²)."""
    N = H1.shape[1]
    classes = weights[-1].shape[0]
    Y = np.kron(np.eye(classes), np.ones((1, N // classes)))
    H = H1
    for W in weights[:-1]:
        H = np.maximum(W @ H, 0.0)
    fit = np.sum((weights[-1] @ H - Y) ** 2) / (2 * N)
    return float(fit + lam / 2 * (np.sum(H1**2) + sum(np.sum(W**2) for W in weights)))


def point(seed: int, scale: float = 1.0, classes: int = K) -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    H1 = scale * rng.normal(size=(WIDTH, classes * N_PER))
    weights = [scale * rng.normal(size=(WIDTH, WIDTH)) for _ in range(L - 1)]
    weights.append(scale * rng.normal(size=(classes, WIDTH)))
    return H1, weights


def write(path: Path, seed: int, scale: float = 1.0, classes: int = K, claimed: float | None = None) -> float:
    H1, weights = point(seed, scale, classes)
    extra = {} if claimed is None else {"loss": claimed}
    save_solution(path, H1, weights, n=N_PER, lam_h=LAM, lam_w=[LAM] * L, extra=extra)
    return reference_loss(H1, weights)


def two_points(tmp_path: Path) -> tuple[Path, float, Path, float]:
    """Two points of the same cell; the first returned is the higher (by the reference)."""
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    fa, fb = write(a, 1, 1.0), write(b, 2, 0.3)
    return (a, fa, b, fb) if fa > fb else (b, fb, a, fa)


PROV = Provenance("pytest", "0", "2026-01-01T00:00:00+00:00")


def test_first_offer_kept_then_higher_refused_lower_kept(tmp_path):
    high, f_high, low, f_low = two_points(tmp_path)
    reg = Registry.load(tmp_path / "reg")
    assert not (tmp_path / "reg").exists()  # nothing written by reading
    first = reg.offer(low, PROV)
    assert first.kept and first.previous is None
    assert first.loss == pytest.approx(f_low, rel=1e-12)
    refused = reg.offer(high, PROV)
    assert not refused.kept and "not below" in refused.reason
    assert reg.get(refused.key).loss == pytest.approx(f_low, rel=1e-12)
    # a fresh registry: the higher point first, then the lower replaces it
    reg2 = Registry.load(tmp_path / "reg2")
    assert reg2.offer(high, PROV).kept
    kept = reg2.offer(low, PROV, verdict="local minimum", clarke_residual=1e-9)
    assert kept.kept and kept.previous == pytest.approx(f_high, rel=1e-12)
    row = Registry.load(tmp_path / "reg2").get(kept.key)  # read back from disk
    assert row is not None and row.loss == pytest.approx(f_low, rel=1e-12)
    assert row.verdict == "local minimum" and row.clarke_residual == 1e-9
    assert row.path is not None and row.path.read_bytes() == low.read_bytes()
    assert row.sha256.startswith("sha256:") and row.sha256[7:] in row.solution
    assert row.provenance == PROV


def test_offer_is_judged_by_the_re_evaluation_not_the_claim(tmp_path):
    high, f_high, low, f_low = two_points(tmp_path)
    seed, scale = (1, 1.0) if high.name == "a.npz" else (2, 0.3)
    liar = tmp_path / "liar.npz"
    assert write(liar, seed, scale, claimed=0.0) == f_high  # the higher point, claiming loss 0
    reg = Registry.load(tmp_path / "reg")
    reg.offer(low, PROV)
    offer = reg.offer(liar, PROV)
    assert not offer.kept
    assert offer.loss == pytest.approx(f_high, rel=1e-12)
    row = reg.get(offer.key)
    assert row is not None and row.check["claimed_loss"] is None  # the kept row is the honest one


def test_same_point_again_is_refused(tmp_path):
    _, _, low, _ = two_points(tmp_path)
    reg = Registry.load(tmp_path / "reg")
    assert reg.offer(low, PROV).kept
    again = reg.offer(low, PROV)
    assert not again.kept and "the same file" in again.reason


def test_the_rows_own_point_offered_with_a_verdict_records_it(tmp_path):
    """`dufm search` offers its point unjudged; `dufm landscape` judges the same file later: the row gets the
    verdict where it has none, or where the new one certifies the point and the row's does not (judged again
    with larger budgets); nothing else of it changes, and the file is not counted as kept."""
    high, f_high, low, _ = two_points(tmp_path)
    reg = Registry.load(tmp_path / "reg")
    first = reg.offer(high, PROV)
    assert first.kept and first.row is not None and first.row.verdict is None
    later = Provenance("later", "0", "2026-01-02T00:00:00+00:00")
    undecided = reg.offer(high, later, verdict="undecided at kinks", clarke_residual=3e-6)
    assert not undecided.kept and "verdict 'undecided at kinks' recorded" in undecided.reason
    judged = reg.offer(high, later, verdict="critical at a kink", clarke_residual=1e-9)
    assert not judged.kept and "verdict 'critical at a kink' recorded" in judged.reason
    (row,) = Registry.load(tmp_path / "reg").rows  # as written to disk
    assert (row.verdict, row.clarke_residual, row.loss) == ("critical at a kink", 1e-9, first.row.loss)
    assert row.provenance == PROV and row.sha256 == first.row.sha256  # the finder stays the provenance
    for verdict in ("local minimum", "undecided at kinks"):  # a certified row keeps its verdict
        again = reg.offer(high, PROV, verdict=verdict)
        assert not again.kept and Registry.load(tmp_path / "reg").rows[0].verdict == "critical at a kink"
    assert reg.offer(low, PROV, verdict="local minimum").kept  # a lower point still replaces the row


def test_a_certified_point_at_the_rows_loss_replaces_an_uncertified_row(tmp_path):
    """Another file at the row's loss to rounding (here the same arrays saved with another claimed loss, so
    another sha256; eq. (1) by the reference) replaces an uncertified row where its verdict certifies the
    point; an uncertified one, or any once the row is certified, is refused."""
    a, b, c = tmp_path / "a.npz", tmp_path / "b.npz", tmp_path / "c.npz"
    f = write(a, 1)
    assert write(b, 1, claimed=f) == f == write(c, 1, claimed=f * (1 + 1e-15))
    reg = Registry.load(tmp_path / "reg")
    assert reg.offer(a, PROV, verdict="undecided at kinks").kept
    assert not reg.offer(c, PROV, verdict="not critical").kept  # not certifying
    kept = reg.offer(b, PROV, verdict="critical at a kink", clarke_residual=1e-9)
    assert kept.kept and "certified (critical at a kink) at the row's loss" in kept.reason
    (row,) = Registry.load(tmp_path / "reg").rows
    assert row.verdict == "critical at a kink" and row.loss == pytest.approx(f, rel=1e-12)
    assert kept.row is not None and row.sha256 == kept.row.sha256
    assert not reg.offer(c, PROV, verdict="local minimum").kept  # the row is certified already


def test_merge_prefers_a_certified_row_at_the_same_loss(tmp_path):
    """Among rows at the same loss to rounding the merge takes the certified one, in either order; a row
    lower beyond rounding still wins uncertified."""
    from deepcollapse.landscape.best_known import merge

    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    f = write(a, 1)
    assert write(b, 1, claimed=f) == f  # the same arrays, another file
    plain, certified = Registry.load(tmp_path / "r1"), Registry.load(tmp_path / "r2")
    assert plain.offer(a, PROV, verdict="undecided at kinks").kept
    assert certified.offer(b, PROV, verdict="critical at a kink").kept
    for order in ((plain, certified), (certified, plain)):
        (row,) = merge(*order).values()
        assert row.verdict == "critical at a kink"
    c = tmp_path / "c.npz"
    f_c = write(c, 2, 0.3)  # another point of the cell, its loss apart from f beyond rounding
    other = Registry.load(tmp_path / "r3")
    assert other.offer(c, PROV, verdict="undecided at kinks").kept
    (row,) = merge(certified, other).values()
    assert row.loss == pytest.approx(min(f, f_c), rel=1e-12)
    assert row.verdict == ("undecided at kinks" if f_c < f else "critical at a kink")


def test_merge_is_the_cellwise_minimum(tmp_path):
    high, f_high, low, f_low = two_points(tmp_path)
    other = tmp_path / "k4.npz"
    f_other = write(other, 5, classes=4)
    a, b = Registry.load(tmp_path / "a"), Registry.load(tmp_path / "b")
    a.offer(high, PROV)
    a.offer(other, PROV)
    b.offer(low, PROV)
    key3 = next(r.key for r in a.rows if r.key.classes == 3)
    key4 = next(r.key for r in a.rows if r.key.classes == 4)
    merged = merge(a, b)
    assert set(merged) == {key3, key4}
    assert merged[key3].loss == pytest.approx(f_low, rel=1e-12)
    assert merged[key4].loss == pytest.approx(f_other, rel=1e-12)
    assert merge(b, a)[key3].loss == merged[key3].loss  # symmetric in the losses
    # merged on disk: every row of a offered to b (re-evaluated), each cell the lower
    offers = b.merge_from(a)
    assert sorted(o.kept for o in offers) == [False, True]
    back = Registry.load(tmp_path / "b")
    assert {k: r.loss for k, r in merge(back).items()} == {k: r.loss for k, r in merged.items()}


def _offer_many(args: tuple[str, list[str]]) -> int:
    reg_dir, files = args
    reg = Registry.load(reg_dir)
    return sum(reg.offer(f, Provenance.now("worker")).kept for f in files)


def test_two_processes_writing_at_once_lose_no_row(tmp_path):
    files = []
    for i, classes in enumerate(range(3, 9)):  # six cells
        f = tmp_path / f"p{i}.npz"
        write(f, 10 + i, classes=classes)
        files.append(str(f))
    reg_dir = str(tmp_path / "reg")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        kept = pool.map(_offer_many, [(reg_dir, files[0::2]), (reg_dir, files[1::2])])
    assert sum(kept) == 6
    reg = Registry.load(reg_dir)
    assert sorted(r.key.classes for r in reg.rows) == list(range(3, 9))


def _index(reg_dir: Path) -> Path:
    return reg_dir / "best_known.json"


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def _filled(tmp_path: Path) -> Path:
    _, _, low, _ = two_points(tmp_path)
    reg = Registry.load(tmp_path / "reg")
    reg.offer(low, PROV)
    return tmp_path / "reg"


def test_damaged_index_is_one_line_and_nothing_changes(tmp_path):
    reg_dir = _filled(tmp_path)
    _index(reg_dir).write_text('{"format": "deepcollapse.best_known", "format_version": 1, "rows": [')
    before = _index(reg_dir).read_bytes()
    with pytest.raises(ConfigError) as exc:
        Registry.load(reg_dir)
    assert str(_index(reg_dir)) in _one_line(exc)
    assert _index(reg_dir).read_bytes() == before


def test_damaged_row_names_the_row(tmp_path):
    reg_dir = _filled(tmp_path)
    data = json.loads(_index(reg_dir).read_text())
    data["rows"].append({"family": "mse+relu"})
    _index(reg_dir).write_text(json.dumps(data))
    with pytest.raises(ConfigError) as exc:
        Registry.load(reg_dir)
    assert "row 2 is damaged" in _one_line(exc)


def test_newer_version_is_refused(tmp_path):
    reg_dir = _filled(tmp_path)
    data = json.loads(_index(reg_dir).read_text())
    data["format_version"] = FORMAT_VERSION + 1
    _index(reg_dir).write_text(json.dumps(data))
    with pytest.raises(ConfigError) as exc:
        Registry.load(reg_dir)
    assert "newer deepcollapse" in _one_line(exc) and str(_index(reg_dir)) in str(exc.value)


def test_missing_solution_file_names_file_and_row(tmp_path):
    reg_dir = _filled(tmp_path)
    before = _index(reg_dir).read_bytes()
    for f in (reg_dir / "solutions").glob("*.npz"):
        f.unlink()
    with pytest.raises(ConfigError) as exc:
        Registry.load(reg_dir)
    msg = _one_line(exc)
    assert "row 1" in msg and "missing" in msg and str(_index(reg_dir)) in msg
    assert _index(reg_dir).read_bytes() == before


def test_bad_point_file_writes_nothing(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, H1=np.ones((2, 2)))
    reg = Registry.load(tmp_path / "reg")
    with pytest.raises(ConfigError):
        reg.offer(bad, PROV)
    assert not (tmp_path / "reg").exists()


def test_shipped_registry_is_read_only_and_readable(tmp_path):
    from deepcollapse.landscape.best_known import shipped_registry

    shipped = shipped_registry()
    for row in shipped.rows:  # every shipped row's file is there and re-evaluates to its loss
        from deepcollapse.landscape.solution_file import check_solution

        assert row.path is not None
        assert check_solution(row.path)["loss"] == pytest.approx(row.loss, rel=1e-12)
    # the package carries no file of a replaced row (a user registry keeps them; the shipped one need not)
    files = {p.name for p in (shipped.path / "solutions").glob("*.npz")}
    assert files == {row.path.name for row in shipped.rows if row.path is not None}
    # a row's command that names a settings file names one the repository ships (as typed from its root)
    root = Path(__file__).resolve().parents[2]
    for row in shipped.rows:
        words = row.provenance.command.split()
        if "--config" in words:
            config = words[words.index("--config") + 1]
            assert not Path(config).is_absolute() and (root / config).is_file(), row.provenance.command
    # issue 45: no row names this or another machine's absolute folders (`--out /work/runs/...`)
    import shlex

    for row in shipped.rows:
        words = shlex.split(row.provenance.command.replace(" && ", " "))
        absolute = [w for w in words if Path(w.partition("=")[2] if w.startswith("--") else w).is_absolute()]
        assert not absolute, row.provenance.command
    _, _, low, _ = two_points(tmp_path)
    with pytest.raises(ConfigError, match="read-only"):
        shipped.offer(low, PROV)


def test_user_registry_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPCOLLAPSE_REGISTRY", str(tmp_path / "mine"))
    assert user_registry_dir() == tmp_path / "mine"
    reg = open_registry(None)
    assert reg is not None and reg.path == tmp_path / "mine"
    assert open_registry("off") is None
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        open_registry(tmp_path / "file")


def test_cell_key_text_names_the_cell():
    key = CellKey("ce+relu", 10, 4, 50, (30, 30, 30, 30), 0.004, (0.004,) * 4)
    assert key.text() == "ce+relu K=10 L=4 n=50 width 30 λ_H1 0.004 λ_W 0.004"


def test_a_table_row_takes_the_registry_point_when_lower(tmp_path):
    """``reproduce best-known``'s row: the search's point is offered; a lower registry row replaces it."""
    from deepcollapse.experiments.search_experiments import _registry_columns, registry_minimum

    high, f_high, low, f_low = two_points(tmp_path)
    reg = Registry.load(tmp_path / "reg")
    folder = tmp_path / "point"
    (folder / "solutions").mkdir(parents=True)
    (folder / "solutions" / "rank01.npz").write_bytes(high.read_bytes())
    row = {"solution": "solutions/rank01.npz", "best_loss": f_high}
    assert registry_minimum(folder, row, reg, "test") is None  # the search's point is the only one: kept
    assert reg.get(next(iter(merge(reg)))).loss == pytest.approx(f_high, rel=1e-12)
    reg.offer(low, PROV)  # found elsewhere, lower
    best = registry_minimum(folder, row, reg, "test")
    assert best is not None and best.loss == pytest.approx(f_low, rel=1e-12)
    new = _registry_columns(best)
    assert new["best_loss"] == pytest.approx(f_low, rel=1e-12)
    assert Path(new["solution"]).read_bytes() == low.read_bytes()
    assert new["best_from"].startswith(f"registry {reg.name}: pytest")
