"""DNC and SRG solutions of the L-DUFM as explicit matrices, their optimal scales and losses.

A *construction* fixes the class-mean geometry up to the scales ``α_2 .. α_L``: the pre-ReLU class means are
``M~_l = √α_l X_l`` with fixed unit matrices ``X_l`` (non-negative for ``l < L``, so ``M_l = M~_l``), and
every weight matrix is conditionally optimal (:mod:`deepcollapse.theory.layers`).  The loss is then (``n = 1``
reduction, ``c = √(λ_{W_1} nλ_{H_1})``)

    L(α) = c P √α_2  +  Σ_{l=2}^{L-1} (λ_{W_l}/2) q_l α_{l+1}/α_l  +  Σ_i λ_{W_L} / (2 (e_i α_L + K λ_{W_L}))

with ``P = ‖X_2‖_*``, ``q_l = ‖X_{l+1} X_l^+‖_F²`` and ``e_i`` the eigenvalues of ``ReLU(X_L)^T ReLU(X_L)``:

* DNC (Definitions 1/10): ``X_l = I_K``; ``P = q_l = K``, ``e_i = 1``.
* SRG (Definitions 4/9, ``K = C(r, 2)``, ``r >= 4``): ``X_l = 𝒯_r`` for ``2 <= l <= L-1``,
  ``X_L = normalise_rows(A^{(1)} 𝒯_r)`` (``A^{(1)}``: one row per pair ``{a, b}``, −1 at ``a, b``, +1
  elsewhere). For ``L >= 3``: ``P = p_0 = √2 + √((r-1)(r-2))``, ``q_l = r`` (Lemma 13), ``q_{L-1} = Q = K r
  (r-1) / (4 s²)`` (Lemma 14), ``s² = C(r-2, 2) + 1``, ``e ∈ {C(r-2,2)² ×1, (r-3)² ×(r-1), 1 ×r(r-3)/2} / s²``
  (Lemma 16).
* Definition 11.1 (any ``K >= 6``): block-diagonal SRG(``C(r,2)``, largest ``<= K``) ⊕ DNC(``K − C(r,2)``);
  the two blocks' losses add up (with the full-``K`` ridge constant ``K λ_{W_L}`` in both) and are optimised
  separately.
* Definition 11.2 (any ``K >= 6``): SRG(``C(r,2)``, smallest ``>= K``) with ``C(r,2) − K`` class columns
  removed (all columns tie in individual fit; see :func:`def11_2_kept_classes` for which) and the
  matching rows of ``W_L`` dropped; here the remaining layers are re-fitted conditionally optimally and the
  scales re-optimised.

Scales: by AM–GM the ``L`` "half terms" (H_1, W_1 .. W_{L-1}) are equal at the optimum, which reduces the
problem to one scalar ``α_L``: ``L(α_L) = L (G B α_L)^{1/L} + ridge(α_L)`` with ``B = nλ_{H_1} Π_{l<L}
λ_{W_l}`` and ``G = (P/2)² Π_l (q_l/2)``; the 1-D problem is solved on a log grid then by a root of the
derivative.  The all-zero point (loss 1/2) is always a candidate: where it is at least as good, the reported
optimum is the zero point with all scales 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol, TypeVar

import numpy as np
from scipy import optimize

from deepcollapse._core.checks import ConfigError, check_choice, check_int, rank_tolerance
from deepcollapse.theory.graphs import (
    incidence_matrix,
    largest_r_at_most,
    r_from_classes,
    smallest_r_at_least,
    triangular_edges,
)
from deepcollapse.theory.layers import (
    Solution,
    evaluated_solution,
    ridge_last_layer,
    solution_from_class_means,
)
from deepcollapse.theory.problem import Problem, problem_of


class _HasLoss(Protocol):
    loss: float


_C = TypeVar("_C", bound=_HasLoss)


__all__ = [
    "LOSS_ZERO",
    "SRG_CONSTRUCTIONS",
    "ClosedForm",
    "Geometry",
    "chain_loss",
    "dnc_geometry",
    "dnc_solution",
    "loss_dnc",
    "loss_srg",
    "loss_zero",
    "optimise_scales",
    "srg_defined",
    "srg_geometry",
    "srg_gram",
    "srg_intermediate_gram",
    "srg_solution",
    "theorem5_conditions",
    "zero_solution",
    "zero_threshold",
    "zero_threshold_equal_lambda",
]

LOSS_ZERO = 0.5
#: Loss of the all-zero point: exactly 1/2 (fit ``‖Y‖²/(2N) = 1/2``, no regularisation), for any λ.
loss_zero: float = LOSS_ZERO
SRG_CONSTRUCTIONS = ("def9", "def11.1", "def11.2")


# ----------------------------------------------------------------------------------------------------
# Geometries (unit class-mean matrices) and their coefficients
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Geometry:
    """Unit class-mean geometry of one block: ``X_mid`` (layers ``2 .. L-1``) and ``X_last`` (layer ``L``).

    Coefficients (see module docstring): ``P_mid = ‖X_mid‖_*`` (first layer when ``L >= 3``), ``P_last =
    ‖X_last‖_*`` (when ``L = 2``), ``q_mid = ‖X_mid X_mid^+‖²``, ``q_last = ‖X_last X_mid^+‖²``, ``frob_last =
    ‖X_last‖_F²`` (``L = 1``), ``e`` the eigenvalues of ``ReLU(X_last)^T ReLU(X_last)``.
    """

    name: str
    classes: int
    X_mid: np.ndarray
    X_last: np.ndarray
    P_mid: float
    P_last: float
    q_mid: float
    q_last: float
    frob_last: float
    e: np.ndarray
    rank_mid: int
    rank_last: int
    rank_last_post: int
    r: int | None = None

    def coefficients(self, layers: int) -> tuple[float, list[float]]:
        """``(P, [q_2 .. q_{L-1}])`` for ``L = layers >= 2`` (for ``L = 1``: ``(frob_last, [])``)."""
        if layers == 1:
            return self.frob_last, []
        if layers == 2:
            return self.P_last, []
        return self.P_mid, [self.q_mid] * (layers - 3) + [self.q_last]

    def unit_means(self, layers: int) -> list[np.ndarray]:
        """``[X_2, ..., X_L]`` (for ``L = 1``: ``[X_1]``)."""
        if layers == 1:
            return [self.X_last]
        return [self.X_mid] * (layers - 2) + [self.X_last]

    def ranks(self, layers: int) -> list[int]:
        """Ranks of the pre-ReLU class means ``M~_2 .. M~_L`` at positive scales."""
        if layers == 1:
            return [self.rank_last]
        return [self.rank_mid] * (layers - 2) + [self.rank_last]


def _rank_of(s: np.ndarray, shape: tuple[int, int]) -> int:
    """Numerical rank from singular values (``_core.checks.rank_tolerance`` convention)."""
    return int(np.sum(s > rank_tolerance(s[0], shape))) if s.size and s[0] > 0 else 0


def _numeric(
    name: str, X_mid: np.ndarray, X_last: np.ndarray, r: int | None = None, **analytic: Any
) -> Geometry:
    """Build a :class:`Geometry` with every coefficient computed numerically from the matrices (``analytic``
    values, when given, replace the numeric ones — tests check that both agree).  One SVD per matrix."""
    R = np.maximum(X_last, 0.0)
    U, s_mid, Vt = np.linalg.svd(X_mid, full_matrices=False)
    k = _rank_of(s_mid, X_mid.shape)
    pinv_mid = (Vt[:k].T / s_mid[:k]) @ U[:, :k].T  # X_mid^+
    s_last = np.linalg.svd(X_last, compute_uv=False)
    e = np.clip(np.linalg.eigvalsh(R.T @ R), 0.0, None)
    vals: dict[str, Any] = {
        "P_mid": float(np.sum(s_mid)),
        "P_last": float(np.sum(s_last)),
        "q_mid": float(np.sum((X_mid @ pinv_mid) ** 2)),
        "q_last": float(np.sum((X_last @ pinv_mid) ** 2)),
        "frob_last": float(np.sum(X_last**2)),
        "e": e,
    }
    vals.update(analytic)
    for v in (X_mid, X_last, vals["e"]):
        v.setflags(write=False)
    return Geometry(
        name=name,
        classes=X_last.shape[1],
        X_mid=X_mid,
        X_last=X_last,
        rank_mid=k,
        rank_last=_rank_of(s_last, X_last.shape),
        # eigenvalues of R^T R carry absolute errors ~eps * max(e): count those above 1e-10 * max(e)
        rank_last_post=int(np.sum(e > 1e-10 * e.max())),
        r=r,
        **vals,
    )


@lru_cache(maxsize=256)
def dnc_geometry(classes: int) -> Geometry:
    """DNC (Definition 10): ``X_l = I_K``; ``P = q = K``, ``e = 1`` (closed forms).

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.

    Returns
    -------
    Geometry
        ``X_mid = X_last = I_K`` with its coefficients.
    """
    K = check_int("classes", classes, min=1)
    eye = np.eye(K)
    return Geometry(
        name="dnc",
        classes=K,
        X_mid=eye,
        X_last=eye,
        P_mid=float(K),
        P_last=float(K),
        q_mid=float(K),
        q_last=float(K),
        frob_last=float(K),
        e=np.ones(K),
        rank_mid=K,
        rank_last=K,
        rank_last_post=K,
    )


def srg_last_unit(r: int) -> np.ndarray:
    """``X_L = normalise_rows(A^{(1)} 𝒯_r)`` (``K x K``): row ``{a, b}`` is ``−1/s`` at edge ``{a, b}``,
    ``+1/s`` at the ``C(r-2, 2)`` edges disjoint from it, 0 elsewhere; ``s² = C(r-2, 2) + 1``."""
    edges = triangular_edges(r)
    A1 = np.ones((len(edges), r))  # (K, r)
    for i, (a, b) in enumerate(edges):
        A1[i, a] = A1[i, b] = -1.0
    Z = A1 @ incidence_matrix(r)  # (K, K)
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def srg_analytic(r: int) -> dict[str, Any]:
    """Closed-form SRG coefficients of Lemmas 13–16 (``L >= 3``) for ``K = C(r, 2)``."""
    K = r * (r - 1) // 2
    c2 = (r - 2) * (r - 3) // 2
    s2 = c2 + 1.0
    e = np.concatenate([[c2**2], np.full(r - 1, (r - 3.0) ** 2), np.ones(r * (r - 3) // 2)]) / s2
    return {
        "P_mid": math.sqrt(2.0) + math.sqrt((r - 1.0) * (r - 2.0)),
        "q_mid": float(r),
        "q_last": K * r * (r - 1.0) / (4.0 * s2),
        "e": np.sort(e),
    }


@lru_cache(maxsize=256)
def _srg_geometry_cached(classes: int, construction: str) -> tuple[Geometry, Geometry | None]:
    K = classes
    if construction == "def9":
        r = r_from_classes(K)
        assert r is not None and r >= 4
        return _numeric("def9", incidence_matrix(r), srg_last_unit(r), r=r, **srg_analytic(r)), None
    if construction == "def11.1":
        r = largest_r_at_most(K)
        srg, _ = _srg_geometry_cached(r * (r - 1) // 2, "def9")
        rest = K - r * (r - 1) // 2
        return srg, (dnc_geometry(rest) if rest else None)
    # def11.2
    r = smallest_r_at_least(K)
    Kbar = r * (r - 1) // 2
    if Kbar == K:
        return _srg_geometry_cached(K, "def9")
    keep = def11_2_kept_classes(K)
    X_mid = incidence_matrix(r)[:, keep]
    X_last = srg_last_unit(r)[:, keep]
    return _numeric("def11.2", np.ascontiguousarray(X_mid), np.ascontiguousarray(X_last), r=r), None


def def11_2_kept_classes(classes: int) -> np.ndarray:
    """Columns (edges of ``K_r``, lexicographic index) kept by Definition 11.2 for ``K = classes``.

    All ``C(r, 2)`` columns of the SRG solution tie in individual fit loss, so the paper allows any choice;
    which ones are dropped slightly changes the re-optimised loss.  We drop the edges at vertex ``r-1`` first
    (a star), i.e. keep ``T_{r-1}`` plus the last ``K − C(r-1, 2)`` edges to vertex ``r-1``; for the ``K <=
    20`` we tried at the flagship λ this was never worse than dropping the lexicographically last edges, a
    matching or random subsets (differences ~1e-4 relative).
    """
    r = smallest_r_at_least(classes)
    edges = triangular_edges(r)
    # edges at the highest vertex first (stable sort)
    order = sorted(range(len(edges)), key=lambda j: -edges[j][1])
    dropped = set(order[: len(edges) - classes])
    return np.array([j for j in range(len(edges)) if j not in dropped])


def srg_defined(classes: int, layers: int, construction: str = "best") -> bool:
    """Whether an SRG solution exists: ``K >= 6`` and ``L >= 2`` (Definition 11), ``def9`` needs ``K = C(r,
    2)``.

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.
    layers : int
        ``L``, the number of weight matrices.
    construction : str, default "best"
        ``"best"``, ``"def9"``, ``"def11.1"`` or ``"def11.2"``.

    Returns
    -------
    bool
        True where the construction exists.
    """
    if classes < 6 or layers < 2:
        return False
    if construction == "def9":
        return r_from_classes(classes) is not None
    return True


def srg_geometry(classes: int, construction: str = "def9") -> tuple[Geometry, Geometry | None]:
    """Unit geometry of an SRG construction: ``(srg_block, dnc_block_or_None)`` (the second block only for
    ``def11.1`` with ``K != C(r, 2)``).  ``def11.1`` / ``def11.2`` equal ``def9`` when ``K = C(r, 2)``.

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.
    construction : str, default "def9"
        ``"def9"``, ``"def11.1"`` or ``"def11.2"``.

    Returns
    -------
    srg_block : Geometry
        The SRG block.
    dnc_block : Geometry or None
        The DNC (identity) block of ``def11.1`` when ``K != C(r, 2)``, else None.
    """
    K = check_int("classes", classes, min=2)
    check_choice("construction", construction, SRG_CONSTRUCTIONS)
    if K < 6:
        raise ConfigError(f"classes == {K}, must be >= 6 for an SRG solution (Definition 11).")
    if construction == "def9" and r_from_classes(K) is None:
        raise ConfigError(
            f"classes == {K}, must be C(r, 2) = r(r-1)/2 with r >= 4 for Definition 9 (6, 10, 15, ...)."
        )
    if r_from_classes(K) is not None:
        construction = "def9"
    return _srg_geometry_cached(K, construction)


# ----------------------------------------------------------------------------------------------------
# The loss as a function of the scales, and its minimisation
# ----------------------------------------------------------------------------------------------------
def chain_loss(
    geom: Geometry,
    layers: int,
    n: int,
    lam_h: float,
    lam_w: Sequence[float],
    scales: Sequence[float],
    classes: int | None = None,
) -> float:
    """``L(α)`` of the module docstring for one block at ``scales = [α_2 .. α_L]`` (``[α_1]`` for ``L = 1``,
    where the H_1 term is ``(nλ_{H_1}/2) ‖X_1‖_F² α_1``).  ``classes`` is the ridge constant's ``K`` (default
    the block's).  All scales 0 gives the zero point's share ``K_b / (2K)``.

    Parameters
    ----------
    geom : Geometry
        The unit class-mean geometry of the block (:func:`dnc_geometry`, :func:`srg_geometry`).
    layers : int
        ``L``, the number of weight matrices.
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1} > 0``.
    lam_w : sequence of float
        ``λ_{W_1} .. λ_{W_L}``.
    scales : sequence of float
        ``[α_2 .. α_L]`` (``[α_1]`` for ``L = 1``), ``>= 0``.
    classes : int, optional
        The ``K`` of the ridge constant (default the block's).

    Returns
    -------
    float
        The block's share of eq. (1) at these scales.
    """
    L = layers
    K = geom.classes if classes is None else classes
    lams = list(lam_w)
    a = np.asarray(scales, dtype=np.float64)
    lamL = lams[-1]
    ridge = float(np.sum(lamL / (2.0 * (geom.e * a[-1] + K * lamL))))
    if np.all(a == 0):
        return ridge
    P, q = geom.coefficients(L)
    if L == 1:
        return 0.5 * n * lam_h * P * a[0] + ridge
    value = math.sqrt(lams[0] * n * lam_h) * P * math.sqrt(a[0])
    for i in range(L - 2):
        value += 0.5 * lams[i + 1] * q[i] * a[i + 1] / a[i]
    return value + ridge


def _grouped(e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge (numerically) equal eigenvalues: ``(values, multiplicities)``, values averaged within a group."""
    scale = float(e.max()) if e.size and e.max() > 0 else 1.0
    keys = np.round(e / scale, 11)
    uniq, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    values = np.bincount(inverse, weights=e) / counts
    return values, counts.astype(np.float64)


def optimise_scales(
    geom: Geometry, layers: int, n: int, lam_h: float, lam_w: Sequence[float], classes: int | None = None
) -> tuple[float, list[float]]:
    """Minimise :func:`chain_loss` over ``α > 0`` (AM–GM one-scalar reduction) with the zero point as
    candidate.

    Returns ``(value, scales)``; scales are all 0 if the zero point is optimal (ties go to the zero point).

    Parameters
    ----------
    geom : Geometry
        The unit class-mean geometry of the block (:func:`dnc_geometry`, :func:`srg_geometry`).
    layers : int
        ``L``, the number of weight matrices.
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1} > 0``.
    lam_w : sequence of float
        ``λ_{W_1} .. λ_{W_L}``.
    classes : int, optional
        The ``K`` of the ridge constant (default the block's).

    Returns
    -------
    value : float
        The minimum of :func:`chain_loss`.
    scales : list of float
        The minimising ``[α_2 .. α_L]`` (all 0 at the zero point).
    """
    L = layers
    K = geom.classes if classes is None else classes
    lams = list(lam_w)
    lamL = lams[-1]
    P, q = geom.coefficients(L)
    e, counts = _grouped(geom.e)
    zero_value = geom.e.size / (2.0 * K)
    GB = half_terms_coefficient(geom, L, n, lam_h, lams)
    g = GB ** (1.0 / L)

    def phi(x: np.ndarray) -> np.ndarray:
        ex = np.exp(x)
        return L * g * np.exp(x / L) + np.sum(
            counts * lamL / (2.0 * (np.multiply.outer(ex, e) + K * lamL)), axis=-1
        )

    def dphi(x: float) -> float:
        ex = math.exp(x)
        return g * math.exp(x / L) - float(np.sum(counts * lamL * e * ex / (2.0 * (e * ex + K * lamL) ** 2)))

    emax = float(e.max())
    x_lo = math.log(K * lamL / emax) - 30.0
    x_hi = L * math.log(max(zero_value / (L * g), 1e-300))  # beyond: first term alone exceeds the zero value
    if x_hi <= x_lo:
        return zero_value, [0.0] * max(L - 1, 1)
    xs = np.linspace(x_lo, x_hi, 2001)
    vals = phi(xs)
    i = int(np.argmin(vals))
    if not vals[i] < zero_value:
        return zero_value, [0.0] * max(L - 1, 1)
    lo, hi = xs[max(i - 1, 0)], xs[min(i + 1, xs.size - 1)]
    if dphi(lo) < 0 < dphi(hi):
        x_star = optimize.brentq(dphi, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    else:
        x_star = optimize.minimize_scalar(
            lambda x: float(phi(np.array(x))), bounds=(lo, hi), method="bounded", options={"xatol": 1e-13}
        ).x
    value = float(phi(np.array(x_star)))
    if not value < zero_value:
        return zero_value, [0.0] * max(L - 1, 1)
    return value, scales_from_last(geom, L, n, lam_h, lams, math.exp(x_star))


def half_terms_coefficient(
    geom: Geometry, layers: int, n: int, lam_h: float, lam_w: Sequence[float]
) -> float:
    """``G B`` of the AM–GM reduction: for fixed ``α_L`` the minimum over ``α_2 .. α_{L-1}`` of the ``L`` half
    terms (``H_1``, ``W_1 .. W_{L-1}``) of :func:`chain_loss` is ``L (G B α_L)^{1/L}`` (``L >= 2``; for ``L =
    1`` the single term is ``G B α_1`` with ``G B = nλ_{H_1} ‖X_1‖_F² / 2``).  ``G = (P/2)² Π_l (q_l/2)``,
    ``B = nλ_{H_1} Π_{l<L} λ_{W_l}``.  Independent of the fit loss (the cross-entropy candidates reuse it)."""
    L = layers
    lams = list(lam_w)
    P, q = geom.coefficients(L)
    if L == 1:
        return 0.5 * P * n * lam_h
    return (P / 2.0) ** 2 * float(np.prod([qi / 2.0 for qi in q])) * n * lam_h * float(np.prod(lams[:-1]))


def scales_from_last(
    geom: Geometry, layers: int, n: int, lam_h: float, lam_w: Sequence[float], aL: float
) -> list[float]:
    """``[α_2 .. α_L]`` minimising the half terms of :func:`chain_loss` at fixed ``α_L = aL`` (all ``L`` half
    terms equal ``τ = (G B α_L)^{1/L}``): ``α_2 = (2τ / (c P))²``, ``α_{l+1} = α_l 2τ / (λ_{W_l} q_l)``; for
    ``L = 1`` just ``[α_1]``."""
    L = layers
    lams = list(lam_w)
    if L == 1:
        return [aL]
    if aL == 0:
        return [0.0] * (L - 1)
    P, q = geom.coefficients(L)
    tau = (half_terms_coefficient(geom, L, n, lam_h, lams) * aL) ** (1.0 / L)
    c = math.sqrt(lams[0] * n * lam_h)
    scales = [(2.0 * tau / (c * P)) ** 2]
    for i in range(L - 3):
        scales.append(scales[-1] * 2.0 * tau / (lams[i + 1] * q[i]))
    scales.append(aL)
    return scales


# ----------------------------------------------------------------------------------------------------
# Closed forms
# ----------------------------------------------------------------------------------------------------
@dataclass
class ClosedForm:
    """Optimal loss of a construction: ``loss``, ``scales`` (``α_2 .. α_L``; ``[α_1]`` for ``L = 1``; all 0
    when the zero point wins), ``rank`` (rank of the intermediate pre-ReLU class means ``M~_l``, ``2 <= l <=
    L-1``, or of ``M~_L`` when ``L <= 2``; 0 at the zero point), ``construction`` and details (``ranks`` per
    layer ``M~_2 .. M~_L``, ``rank_post`` of ``M_L = ReLU(M~_L)``, ``is_zero``, ``block_scales`` of the DNC
    block of Def. 11.1)."""

    loss: float
    scales: list[float]
    rank: int
    construction: str
    ranks: list[int] = field(default_factory=list)
    rank_post: int = 0
    is_zero: bool = False
    block_scales: list[float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "loss": self.loss,
            "scales": list(self.scales),
            "rank": self.rank,
            "construction": self.construction,
            "ranks": list(self.ranks),
            "rank_post": self.rank_post,
            "is_zero": self.is_zero,
            "block_scales": None if self.block_scales is None else list(self.block_scales),
        }


def _closed(
    geoms: Sequence[Geometry | None], name: str, K: int, L: int, n: int, lam_h: float, lams: list[float]
) -> ClosedForm:
    total = 0.0
    scales_list: list[list[float]] = []
    ranks = np.zeros(max(L - 1, 1), dtype=int)
    rank_post = 0
    for geom in geoms:
        if geom is None:
            scales_list.append([])
            continue
        value, scales = optimise_scales(geom, L, n, lam_h, lams, classes=K)
        total += value
        scales_list.append(scales)
        if scales[-1] > 0:
            ranks += np.asarray(geom.ranks(L))
            rank_post += geom.rank_last_post
    is_zero = all(not s or s[-1] == 0 for s in scales_list)
    if is_zero:
        total = LOSS_ZERO  # exactly (the blocks' zero shares add up to K/(2K))
    rank = int(ranks[0]) if L >= 3 else int(ranks[-1])
    return ClosedForm(
        loss=total,
        scales=scales_list[0],
        rank=rank,
        construction=name,
        ranks=[int(x) for x in ranks],
        rank_post=rank_post,
        is_zero=is_zero,
        block_scales=scales_list[1] if len(geoms) > 1 and geoms[1] else None,
    )


def loss_dnc(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    *,
    problem: Problem | None = None,
) -> ClosedForm:
    """Optimal DNC loss (Definitions 1/10), closed form in the scales:

        L_DNC(α) = √(λ_{W_1} nλ_{H_1}) K √α_2 + Σ_{l=2}^{L-1} (λ_{W_l}/2) K α_{l+1}/α_l
                   + K λ_{W_L} / (2 (α_L + K λ_{W_L}))

    minimised over ``α`` (or 1/2 at the zero point).  ``L = 1`` is the UFM: ``(nλ_H/2) K α_1 +
    Kλ_W/(2(α_1+Kλ_W))``.

    Parameters
    ----------
    classes : int or Problem
        ``K >= 2``, or the whole :class:`~deepcollapse.theory.problem.Problem` (then ``layers`` .. ``lam_w``
        are left out; ``problem=`` works too).
    layers, n, lam_h, lam_w
        ``L >= 1``, samples per class ``n >= 1``, ``λ_{H_1}``, ``λ_{W_1} .. λ_{W_L}`` (one value or ``L``).
    problem : Problem, optional
        The problem by keyword.

    Returns
    -------
    ClosedForm
        The optimal loss, scales and structure.
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised().parts()
    return _closed([dnc_geometry(K)], "dnc", K, L, n, lam_h, lams)


def loss_srg(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    construction: str = "best",
    *,
    problem: Problem | None = None,
) -> ClosedForm | None:
    """Optimal SRG loss (Definitions 4/9 for ``K = C(r, 2)``, 11.1 / 11.2 otherwise), ``None`` where undefined
    (``K < 6`` or ``L < 2``).  ``construction='best'`` returns the lower of ``def11.1`` and ``def11.2``
    (``def9`` when ``K = C(r, 2)``, where all three coincide).  For ``L >= 3`` and ``K = C(r, 2)`` (``s² =
    C(r-2,2)+1``):

        L_SRG(α) = √(λ_{W_1} nλ_{H_1}) p_0 √α_2 + Σ_{l=2}^{L-2} (λ_{W_l}/2) r α_{l+1}/α_l
                   + (λ_{W_{L-1}}/2) Q α_L/α_{L-1} + Σ_i λ_{W_L}/(2(σ_i² + Kλ_{W_L}))

    with ``p_0 = √2 + √((r-1)(r-2))``, ``Q = K r (r-1)/(4 s²)``, ``σ_i² = e_i α_L`` (Lemma 16).

    Parameters
    ----------
    classes : int or Problem
        ``K >= 2``, or the whole :class:`~deepcollapse.theory.problem.Problem` (then ``layers`` .. ``lam_w``
        are left out; ``problem=`` works too).
    layers, n, lam_h, lam_w
        ``L >= 1``, samples per class ``n >= 1``, ``λ_{H_1}``, ``λ_{W_1} .. λ_{W_L}`` (one value or ``L``).
    construction : {"best", "def9", "def11.1", "def11.2"}
        Which SRG construction.
    problem : Problem, optional
        The problem by keyword.

    Returns
    -------
    ClosedForm or None
        The optimal loss of that construction; ``None`` where undefined.
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised().parts()
    return srg_optimum(K, L, n, lam_h, lams, construction, _closed)


def best_srg_candidate(classes: int, construction: str, evaluate: Callable[[str], _C]) -> _C:
    """``evaluate(name)`` of the SRG construction asked for: Definition 9 when ``K = C(r, 2)``, else the one
    named, or for ``"best"`` the lower-loss of Definitions 11.1 and 11.2 (each candidate has ``.loss``).
    Shared by the MSE closed forms and the cross-entropy re-optimisation."""
    if r_from_classes(classes) is not None:
        return evaluate("def9")
    names = ("def11.1", "def11.2") if construction == "best" else (construction,)
    candidates = [evaluate(name) for name in names]
    return min(candidates, key=lambda c: c.loss)


def srg_optimum(
    classes: int,
    layers: int,
    n: int,
    lam_h: float,
    lam_w: float | Sequence[float],
    construction: str,
    evaluate: Callable[[Sequence[Geometry | None], str, int, int, int, float, list[float]], _C],
) -> _C | None:
    """``evaluate(geometries, name, K, L, n, lam_h, lams)`` of the SRG construction asked for (validated;
    chosen by :func:`best_srg_candidate`), ``None`` where the SRG solution is undefined (``K < 6`` or
    ``L < 2``).  Shared by :func:`loss_srg` (closed form) and ``cross_entropy.ce_srg`` (re-optimisation)."""
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w).regularised().parts()
    check_choice("construction", construction, ("best", *SRG_CONSTRUCTIONS))
    if not srg_defined(K, L, construction):
        return None
    return best_srg_candidate(
        K, construction, lambda name: evaluate(list(srg_geometry(K, name)), name, K, L, n, lam_h, lams)
    )


def theorem5_conditions(classes: int, layers: int) -> bool:
    """Theorem 5 (2024): ``L_SRG < L_DNC`` if ``K >= 6, L >= 4`` or ``K >= 10, L = 3`` (widths ``d_l >= K``;
    the strict inequality needs a non-trivial DNC optimum, ``L_DNC < 1/2``).

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.
    layers : int
        ``L``, the number of weight matrices.

    Returns
    -------
    bool
        Whether Theorem 5's conditions on ``(K, L)`` hold.
    """
    return (classes >= 6 and layers >= 4) or (classes >= 10 and layers == 3)


def zero_threshold(classes: int, layers: int) -> float:
    """``Λ* = nλ_{H_1} Π_l λ_{W_l}`` at and beyond which the DNC optimum is the all-zero point.

    Derived from ``L_DNC``: with ``t = u^{1/L}``, ``L_DNC = min_t A t + 1/(2(1+t^L))``,
    ``A = (L/2) K^{1+1/L} Λ^{1/L}``; ``L_DNC < 1/2`` iff ``A < max_t t^{L-1}/(2(1+t^L))``.  The maximum is
    found numerically here; the closed form is ``Λ* = (L-1)^{L-1} / (L^{2L} K^{L+1})`` (``1/128`` for ``K = L
    = 2``: the quadratic of the 2023 paper, not its printed ``1/256``).  For ``K = 2`` this is Theorem 3 of
    the 2023
    paper: for ``Λ < Λ*`` DNC is the unique global optimum, for ``Λ > Λ*`` the all-zero point.

    Parameters
    ----------
    classes : int
        ``K >= 2``.
    layers : int
        ``L >= 1``.

    Returns
    -------
    float
        ``Λ*``.
    """
    K = check_int("classes", classes, min=2)
    L = check_int("layers", layers, min=1)
    if L == 1:
        A_max = 0.5  # A t + 1/(2(1+t)) is convex; zero optimal iff derivative at 0, A - 1/2, is >= 0
    else:
        res = optimize.minimize_scalar(
            lambda x: -math.exp((L - 1) * x) / (2 * (1 + math.exp(L * x))),
            bounds=(-20.0, 20.0),
            method="bounded",
            options={"xatol": 1e-12},
        )
        A_max = -float(res.fun)
    return (2.0 * A_max / (L * K ** (1.0 + 1.0 / L))) ** L


def zero_threshold_equal_lambda(classes: int, layers: int, n: int) -> float:
    """The common ``λ = λ_{H_1} = λ_{W_1} = ... = λ_{W_L}`` at which the DNC optimum becomes the zero point:
    ``n λ^{L+1} = Λ*`` (:func:`zero_threshold`), i.e. ``λ* = (Λ*/n)^{1/(L+1)} ~ 1/(K L n^{1/(L+1)})`` for
    large ``L``.  For ``K = 2`` this is the threshold of Theorem 3 of the 2023 paper, whose text states the
    order ``L^{-1} n^{1/(L+1)}``: the sign of the ``n`` exponent depends on how ``λ_{H_1}`` is normalised;
    here it is eq. (1) of the 2024 paper (``(λ_{H_1}/2)‖H_1‖²`` next to a ``1/(2N)`` fit).

    Parameters
    ----------
    classes : int
        ``K >= 2``.
    layers : int
        ``L >= 1``.
    n : int
        Samples per class.

    Returns
    -------
    float
        ``λ* = (Λ*/n)^{1/(L+1)}``.
    """
    n = check_int("n", n, min=1)
    return (zero_threshold(classes, layers) / n) ** (1.0 / (layers + 1))


# ----------------------------------------------------------------------------------------------------
# Explicit solutions
# ----------------------------------------------------------------------------------------------------
def _spread(d: int, m: int) -> np.ndarray:
    """``(d, m)`` non-negative matrix with orthonormal columns, row ``i`` a multiple of ``e_{i mod m}``."""
    A = np.zeros((d, m))
    counts = np.bincount(np.arange(d) % m, minlength=m)
    A[np.arange(d), np.arange(d) % m] = 1.0 / np.sqrt(counts[np.arange(d) % m])
    return A


def _block_diag(blocks: Sequence[np.ndarray]) -> np.ndarray:
    rows = sum(b.shape[0] for b in blocks)
    cols = sum(b.shape[1] for b in blocks)
    out = np.zeros((rows, cols))
    i = j = 0
    for b in blocks:
        out[i : i + b.shape[0], j : j + b.shape[1]] = b
        i, j = i + b.shape[0], j + b.shape[1]
    return out


def _means_from(
    geoms: Sequence[Geometry | None], scales_list: Sequence[Sequence[float]], L: int, width: int | None
) -> list[np.ndarray]:
    per_layer: list[list[np.ndarray]] = [[] for _ in range(max(L - 1, 1))]
    for geom, scales in zip(geoms, scales_list):
        if geom is None:
            continue
        for i, X in enumerate(geom.unit_means(L)):
            per_layer[i].append(math.sqrt(scales[i]) * X)
    means = [_block_diag(blocks) for blocks in per_layer]
    if width is not None:
        out = []
        for M in means:
            if width < M.shape[0]:
                raise ConfigError(f"width == {width}, must be >= {M.shape[0]} for this construction.")
            out.append(_spread(width, M.shape[0]) @ M)
        means = out
    return means


def _solution(
    geoms: Sequence[Geometry | None],
    cf: ClosedForm,
    K: int,
    L: int,
    n: int,
    lam_h: float,
    lams: list[float],
    width: int | None,
) -> Solution:
    scales_list = [cf.scales, cf.block_scales or []]
    means = _means_from(geoms, scales_list, L, width)
    if L == 1:
        M1 = means[0]
        W1, _ = ridge_last_layer(M1, lams[0], K)
        H1 = np.repeat(M1, n, axis=1)
        sol = evaluated_solution(H1, [W1], n, lam_h, lams)
    else:
        sol = solution_from_class_means(means, n, lam_h, lams, d1=width)
    sol.scales = list(cf.scales)
    sol.construction = cf.construction
    sol.info = {"closed_form": cf.to_dict()}
    return sol


def dnc_solution(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    width: int | None = None,
    *,
    problem: Problem | None = None,
) -> Solution:
    """Explicit DNC solution (Definition 10) at the optimal scales: ``M~_l = √α_l I_K`` (rows spread over
    ``width`` if given), conditionally optimal weights, ``H1 = M_1 ⊗ 1_n^T``; ``loss`` evaluated on the
    matrices.

    Parameters
    ----------
    classes : int or Problem
        ``K >= 2``, or the whole :class:`~deepcollapse.theory.problem.Problem` (then ``layers`` .. ``lam_w``
        are left out; ``problem=`` works too).
    layers, n, lam_h, lam_w
        ``L >= 1``, samples per class ``n >= 1``, ``λ_{H_1}``, ``λ_{W_1} .. λ_{W_L}`` (one value or ``L``).
    problem : Problem, optional
        The problem by keyword.

    Returns
    -------
    Solution
        The explicit matrices and their loss.
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised().parts()
    cf = loss_dnc(K, L, n, lam_h, lams)
    return _solution([dnc_geometry(K)], cf, K, L, n, lam_h, lams, width)


def srg_solution(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    construction: str = "best",
    width: int | None = None,
    *,
    problem: Problem | None = None,
) -> Solution:
    """Explicit SRG solution (Definition 9, or 11.1 / 11.2) at its optimal scales; ``ConfigError`` where
    undefined.

    Parameters
    ----------
    classes : int or Problem
        ``K >= 2``, or the whole :class:`~deepcollapse.theory.problem.Problem` (then ``layers`` .. ``lam_w``
        are left out; ``problem=`` works too).
    layers, n, lam_h, lam_w
        ``L >= 1``, samples per class ``n >= 1``, ``λ_{H_1}``, ``λ_{W_1} .. λ_{W_L}`` (one value or ``L``).
    problem : Problem, optional
        The problem by keyword.

    Returns
    -------
    Solution
        The explicit matrices and their loss.
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised().parts()
    if L < 2:
        raise ConfigError(f"layers == {L}, must be >= 2 for an SRG solution.")
    cf = loss_srg(K, L, n, lam_h, lams, construction)
    if cf is None:
        srg_geometry(K, construction if construction != "best" else "def11.1")  # raises the right error
        raise ConfigError(f"classes == {K}, must allow an SRG solution.")  # pragma: no cover
    return _solution(list(srg_geometry(K, cf.construction)), cf, K, L, n, lam_h, lams, width)


def zero_solution(classes: int, layers: int, n: int, width: int | None = None) -> Solution:
    """The all-zero point (loss exactly 1/2 for any λ): ``H1`` and every ``W_l`` zero.

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.
    layers : int
        ``L``, the number of weight matrices.
    n : int
        Samples per class.
    width : int, optional
        Every ``d_l`` (default ``K``).

    Returns
    -------
    Solution
        The zero point, its loss (``1/2``) and parts.
    """
    K = check_int("classes", classes, min=2)
    L = check_int("layers", layers, min=1)
    n = check_int("n", n, min=1)
    d = K if width is None else check_int("width", width, min=1)
    weights = [np.zeros((d, d)) for _ in range(L - 1)] + [np.zeros((K, d))]
    H1 = np.zeros((d, K * n))
    return evaluated_solution(H1, weights, n, 1.0, 1.0, construction="zero")


# ----------------------------------------------------------------------------------------------------
# Gram matrices of the SRG solution (for classifying trained runs)
# ----------------------------------------------------------------------------------------------------
def _cosine(G: np.ndarray) -> np.ndarray:
    d = np.sqrt(np.clip(np.diag(G), 1e-300, None))
    return G / np.outer(d, d)


def _default_construction(K: int, construction: str | None) -> str:
    if construction is None:
        return "def9" if r_from_classes(K) is not None else "def11.1"
    return check_choice("construction", construction, SRG_CONSTRUCTIONS)


def srg_gram(classes: int, construction: str | None = None) -> np.ndarray:
    """Normalised (cosine) Gram matrix ``G_ij / √(G_ii G_jj)`` of the SRG class means after the last ReLU,
    ``G = M_L^T M_L``; scale-free.  For ``K = C(r, 2)`` (Definition 9): 1 on the diagonal,
    ``C(r-3,2)/C(r-2,2)`` for classes (edges) sharing a vertex, ``C(r-4,2)/C(r-2,2)`` for disjoint ones.
    Other ``K >= 6``: ``construction`` ``'def11.1'`` (default; block diagonal with an identity block) or
    ``'def11.2'``.

    Parameters
    ----------
    classes : int
        ``K >= 6``.
    construction : {"def9", "def11.1", "def11.2"}, optional
        The SRG construction for ``K ≠ C(r, 2)`` (default ``def11.1``).

    Returns
    -------
    ndarray, (K, K)
        The cosine-normalised Gram matrix (unit diagonal), float64.
    """
    K = check_int("classes", classes, min=2)
    srg, dnc = srg_geometry(K, _default_construction(K, construction))
    R = np.maximum(srg.X_last, 0.0)
    blocks = [_cosine(R.T @ R)] + ([np.eye(dnc.classes)] if dnc is not None else [])
    return _block_diag(blocks)


def srg_intermediate_gram(classes: int, construction: str | None = None) -> np.ndarray:
    """Normalised (cosine) Gram matrix of the SRG class means in the middle layers ``2 <= l <= L-1`` (defined
    for ``L >= 3``): ``M_l^T M_l ∝ 2I + G_r``, i.e. ``I + G_r/2`` for ``K = C(r, 2)``.

    Parameters
    ----------
    classes : int
        ``K >= 6``.
    construction : {"def9", "def11.1", "def11.2"}, optional
        The SRG construction for ``K ≠ C(r, 2)`` (default ``def11.1``).

    Returns
    -------
    ndarray, (K, K)
        The cosine-normalised Gram matrix (unit diagonal), float64.
    """
    K = check_int("classes", classes, min=2)
    srg, dnc = srg_geometry(K, _default_construction(K, construction))
    blocks = [_cosine(srg.X_mid.T @ srg.X_mid)] + ([np.eye(dnc.classes)] if dnc is not None else [])
    return _block_diag(blocks)
