"""Geometries of the constructions: the unit class-mean matrices ``X_l`` of DNC and SRG, their coefficients.

:class:`Geometry` holds ``X_mid`` (layers ``2 .. L-1``), ``X_last`` (layer ``L``) and the coefficients ``P``,
``q_l`` and ``e`` of the loss in the package docstring (:mod:`deepcollapse.theory.constructions`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_choice, check_int, rank_tolerance
from deepcollapse._core.results import Result
from deepcollapse.theory.graphs import (
    incidence_matrix,
    largest_r_at_most,
    r_from_classes,
    smallest_r_at_least,
    triangular_edges,
)

__all__ = [
    "SRG_CONSTRUCTIONS",
    "Geometry",
    "SRGCoefficients",
    "def11_2_kept_classes",
    "dnc_geometry",
    "srg_analytic",
    "srg_defined",
    "srg_geometry",
    "srg_last_unit",
]

SRG_CONSTRUCTIONS = ("def9", "def11.1", "def11.2")


@dataclass(frozen=True)
class Geometry:
    """Unit class-mean geometry of one block: ``X_mid`` (layers ``2 .. L-1``) and ``X_last`` (layer ``L``).

    Coefficients (see the package docstring): ``P_mid = ‖X_mid‖_*`` (first layer when ``L >= 3``), ``P_last =
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
        """``(P, [q_2 .. q_{L-1}])`` for ``L = layers >= 2`` (for ``L = 1``: ``(frob_last, [])``).

        Parameters
        ----------
        layers : int
            ``L >= 1``.

        Returns
        -------
        P : float
            The first layer's coefficient (``P_mid``, ``P_last`` for ``L = 2``, ``frob_last`` for ``L = 1``).
        q : list of float
            ``[q_2 .. q_{L-1}]``: ``q_mid`` repeated, ending with ``q_last`` (empty for ``L <= 2``).

        Examples
        --------
        >>> dnc_geometry(3).coefficients(3), dnc_geometry(3).coefficients(2)
        ((3.0, [3.0]), (3.0, []))
        """
        if layers == 1:
            return self.frob_last, []
        if layers == 2:
            return self.P_last, []
        return self.P_mid, [self.q_mid] * (layers - 3) + [self.q_last]

    def unit_means(self, layers: int) -> list[np.ndarray]:
        """``[X_2, ..., X_L]`` (for ``L = 1``: ``[X_1]``).

        Parameters
        ----------
        layers : int
            ``L >= 1``.

        Returns
        -------
        list of ndarray
            ``L - 1`` unit class-mean matrices (one for ``L = 1``), read-only views of ``X_mid`` / ``X_last``.

        Examples
        --------
        >>> [X.shape for X in dnc_geometry(3).unit_means(3)]
        [(3, 3), (3, 3)]
        """
        if layers == 1:
            return [self.X_last]
        return [self.X_mid] * (layers - 2) + [self.X_last]

    def ranks(self, layers: int) -> list[int]:
        """Ranks of the pre-ReLU class means ``M~_2 .. M~_L`` at positive scales.

        Parameters
        ----------
        layers : int
            ``L >= 1``.

        Returns
        -------
        list of int
            ``[rank M~_2, ..., rank M~_L]`` (one value for ``L = 1``).

        Examples
        --------
        >>> dnc_geometry(3).ranks(3)
        [3, 3]
        """
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

    Examples
    --------
    >>> g = dnc_geometry(3)
    >>> g.name, g.P_mid, g.e.tolist()
    ('dnc', 3.0, [1.0, 1.0, 1.0])
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
    ``+1/s`` at the ``C(r-2, 2)`` edges disjoint from it, 0 elsewhere; ``s² = C(r-2, 2) + 1``.

    Parameters
    ----------
    r : int
        The vertices of ``K_r``, ``r >= 4`` (``K = C(r, 2)``).

    Returns
    -------
    ndarray, (K, K)
        ``X_L``, unit rows, float64.

    Examples
    --------
    >>> X = srg_last_unit(4)  # K = 6, s² = 2: -1/√2 at the edge itself, +1/√2 at the disjoint edge
    >>> (X * np.sqrt(2)).round(6)[0]
    array([-1.,  0.,  0.,  0.,  0.,  1.])
    """
    edges = triangular_edges(r)
    A1 = np.ones((len(edges), r))  # (K, r)
    for i, (a, b) in enumerate(edges):
        A1[i, a] = A1[i, b] = -1.0
    Z = A1 @ incidence_matrix(r)  # (K, K)
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


@dataclass(frozen=True, eq=False)
class SRGCoefficients(Result):
    """Closed-form coefficients of the SRG geometry of Definition 9 (``K = C(r, 2)``, ``L >= 3``): the result
    of :func:`srg_analytic` (Lemmas 13–16), the names of :class:`Geometry`'s fields.

    Read-only key access (``c["q_mid"]``) works as for the dict of earlier releases; ``to_dict()`` holds the
    same keys, JSON-ready (``e`` as a list), and ``from_dict`` reads ``e`` back as an array.

    Attributes
    ----------
    P_mid : float
        ``‖X_mid‖_* = √2 + √((r − 1)(r − 2))``.
    q_mid : float
        ``‖X_mid X_mid^+‖² = r`` (Lemma 13).
    q_last : float
        ``‖X_last X_mid^+‖² = K r (r − 1) / (4 s²)``, ``s² = C(r − 2, 2) + 1`` (Lemma 14).
    e : ndarray, (K,)
        The eigenvalues of ``ReLU(X_last)^T ReLU(X_last)``, ascending (Lemma 16).
    """

    P_mid: float | None = None
    q_mid: float | None = None
    q_last: float | None = None
    e: np.ndarray | None = None

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        return np.asarray(value, dtype=np.float64) if name == "e" and value is not None else value


def srg_analytic(r: int) -> SRGCoefficients:
    """Closed-form SRG coefficients of Lemmas 13–16 (``L >= 3``) for ``K = C(r, 2)``: ``P_mid``, ``q_mid``,
    ``q_last``, ``e`` (they replace the numeric ones in the SRG geometry).

    Parameters
    ----------
    r : int
        The vertices of the triangular graph ``T_r``, ``r >= 4`` (``K = C(r, 2)`` classes).

    Returns
    -------
    SRGCoefficients
        ``P_mid``, ``q_mid``, ``q_last`` and the eigenvalues ``e`` (ascending).

    Examples
    --------
    >>> c = srg_analytic(5)  # K = 10
    >>> c.q_mid, c.q_last, c.e.shape
    (5.0, 12.5, (10,))
    """
    K = r * (r - 1) // 2
    c2 = (r - 2) * (r - 3) // 2
    s2 = c2 + 1.0
    e = np.concatenate([[c2**2], np.full(r - 1, (r - 3.0) ** 2), np.ones(r * (r - 3) // 2)]) / s2
    return SRGCoefficients(
        P_mid=math.sqrt(2.0) + math.sqrt((r - 1.0) * (r - 2.0)),
        q_mid=float(r),
        q_last=K * r * (r - 1.0) / (4.0 * s2),
        e=np.sort(e),
    )


@lru_cache(maxsize=256)
def _srg_geometry_cached(classes: int, construction: str) -> tuple[Geometry, Geometry | None]:
    K = classes
    if construction == "def9":
        r = r_from_classes(K)
        assert r is not None and r >= 4
        c = srg_analytic(r)  # the closed forms replace the numeric coefficients
        srg = _numeric(
            "def9",
            incidence_matrix(r),
            srg_last_unit(r),
            r=r,
            P_mid=c.P_mid,
            q_mid=c.q_mid,
            q_last=c.q_last,
            e=c.e,
        )
        return srg, None
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

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.

    Returns
    -------
    ndarray of int, (K,)
        The kept column indices of ``T_r`` (ascending), ``r`` the smallest with ``C(r, 2) >= K``.

    Examples
    --------
    >>> def11_2_kept_classes(8)  # r = 5: drops 2 of the 4 edges at vertex 4
    array([0, 1, 2, 4, 5, 7, 8, 9])
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

    Examples
    --------
    >>> srg_defined(6, 2), srg_defined(7, 3, "def9"), srg_defined(5, 3)
    (True, False, False)
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

    Examples
    --------
    >>> srg, dnc = srg_geometry(7, "def11.1")  # T_4 (K = 6) plus one identity class
    >>> srg.name, srg.classes, dnc.name, dnc.classes
    ('def9', 6, 'dnc', 1)
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
