"""Register-blocked small GEMMs for the compiled DUFM step, and the choice between them and BLAS.

The flagship step is 16 GEMMs of shapes like 30×30 · 30×500 and 30×500 · 500×30: too small for a BLAS
library's large-GEMM blocking.  OpenBLAS's AVX-512 (``SkylakeX``) kernels still come close to their large-GEMM
speed there; its AVX2 kernels (``Haswell``, also used on AMD Zen 1-3) reach about half of it, and much less
for the K × N output shapes.  These kernels, compiled by numba for the host CPU (LLVM vectorises the
loops named below), do better there (``benchmarks/dufm_profile.py`` times each GEMM of the step both ways):

* :func:`mm_nn` ``C = A B`` and :func:`mm_tn` ``C = Aᵀ B`` (forward ``W_l H_l``; backward ``W_lᵀ G``): three
  rows of ``C`` at a time, ``k`` unrolled by four (the first five terms in one pass), the loop over the N
  columns innermost (vectorised); each ``C[i, j]`` is ``A[i, 0] B[0, j] + A[i, 1] B[1, j] + …`` in that order
  (fused multiply-adds); :func:`mm_nn_relu` and :func:`mm_tn_relu_d` apply σ = ReLU, resp. ``⊙ σ'``, to each
  block of three rows while it is in L1 (the same values as the step's separate passes, one pass less each);
* :func:`mm_nt` ``C = A Bᵀ`` (backward ``∂W_l = G H_lᵀ``, a reduction over N): a 5 × 3 block of dot products
  in registers, vectorised along N (LLVM may reassociate this sum: ``fastmath={"reassoc"}``);
* the thin last layer of K ≤ 4 classes: ``W_Lᵀ G`` (``k = K ≤ 4``) in one pass per row of ``C`` with its
  ``⊙ σ'`` (instead of ``k`` passes and a mask pass), and ``∂W_L = G H_Lᵀ`` (``m = K < 5``) with its blocks of
  five dot products along the rows of ``H_L`` (instead of one entry at a time).

Bit-identity: each kernel's arithmetic for an entry depends only on the operands' values and shapes, never
on which runs are stepped together, so a run's trajectory stays identical whatever ``runs`` or ``sub_batch``;
which GEMM uses which path (:func:`micro_layers`: by the BLAS kernel, ``$DEEPCOLLAPSE_GEMM`` and the layer's
shape) depends on the machine and the environment only (no timing), so it is the same in worker processes
and in a resumed run.  Against BLAS (and the numpy path) the results
agree to float rounding.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from deepcollapse.family.activations import ReLU

__all__ = [
    "GEMM_PATHS",
    "MICRO_BLAS_KERNELS",
    "gemm_path",
    "micro_layers",
    "mm_nn",
    "mm_nn_relu",
    "mm_nt",
    "mm_tn",
    "mm_tn_relu_d",
]

GEMM_PATHS = ("auto", "blas", "micro")
# OpenBLAS kernels (threadpoolctl "architecture") on which the micro-kernels beat its small GEMMs: the AVX2
# kernels.  Measured on an AVX-512 Xeon with OPENBLAS_CORETYPE=Haswell and numba compiling for haswell
# (benchmarks/dufm_profile.py); on SkylakeX kernels BLAS is faster (LLVM uses 256-bit vectors there).
MICRO_BLAS_KERNELS = ("Haswell", "Zen")


def gemm_path(path: str | None = None) -> str:
    """``"blas"`` or ``"micro"``: the GEMMs of the compiled step.

    Parameters
    ----------
    path : str, optional
        ``"blas"``, ``"micro"`` or ``"auto"``; default ``$DEEPCOLLAPSE_GEMM``, else ``"auto"``: ``"micro"``
        when the OpenBLAS that numba's ``np.dot`` calls (scipy's) runs one of :data:`MICRO_BLAS_KERNELS`.

    Returns
    -------
    str
        ``"blas"`` or ``"micro"``; ``ConfigError`` for another name.

    Examples
    --------
    >>> gemm_path("blas"), gemm_path("micro")
    ('blas', 'micro')
    >>> gemm_path() in ("blas", "micro")
    True
    """
    from deepcollapse._core.checks import check_choice

    name = path or os.environ.get("DEEPCOLLAPSE_GEMM") or "auto"
    check_choice("gemm" if path else "DEEPCOLLAPSE_GEMM", name, GEMM_PATHS)
    if name != "auto":
        return name
    return "micro" if scipy_blas_kernel() in MICRO_BLAS_KERNELS else "blas"


def micro_layers(widths: list[int], path: str | None = None) -> list[tuple[bool, bool, bool]]:
    """Per layer ``l``, which GEMMs of the compiled step use the micro-kernels: ``(W_l H_l, ∂W_l = G H_lᵀ,
    W_lᵀ G)``.

    Parameters
    ----------
    widths : list of int
        ``[d_1, ..., d_{L+1}]`` (``d_{L+1} = K``); ``W_l`` is ``d_{l+1} × d_l``.
    path : str, optional
        As in :func:`gemm_path`: ``"blas"`` none, ``"micro"`` all; ``"auto"`` on the AVX2 kernels: by shape,
        where they were faster than OpenBLAS's ``Haswell`` kernels (``benchmarks/dufm_profile.py``): the
        products with ``W_l`` (forward and ``W_lᵀ G``) when ``d_{l+1} d_l ≤ 32²`` or one side ≤ 16, the
        reduction ``∂W_l`` when ``d_{l+1} d_l ≤ 64²`` or one side ≤ 16.

    Returns
    -------
    list of (bool, bool, bool)
        One triple per layer; a function of the widths and the path only (so of the machine, never of R).

    Examples
    --------
    >>> micro_layers([4, 4, 2], "micro")
    [(True, True, True), (True, True, True)]
    >>> micro_layers([4, 4, 2], "blas")
    [(False, False, False), (False, False, False)]
    """
    name = gemm_path(path)
    auto = (path or os.environ.get("DEEPCOLLAPSE_GEMM") or "auto") == "auto"
    out = []
    for a, b in zip(widths[1:], widths[:-1]):  # W_l: (a, b)
        if name == "blas" or not auto:
            out.append((name == "micro",) * 3)
            continue
        thin = min(a, b) <= 16
        product, reduction = thin or a * b <= 32 * 32, thin or a * b <= 64 * 64
        out.append((product, reduction, product))
    return out


@functools.cache  # the kernel is chosen when the library loads: fixed for the process
def scipy_blas_kernel() -> str | None:
    """The kernel name (threadpoolctl ``architecture``) of scipy's OpenBLAS, or ``None`` (another BLAS).

    Returns
    -------
    str or None
        E.g. ``"Haswell"``, ``"SkylakeX"``, ``"Zen"``; None when scipy's BLAS is not its own OpenBLAS (or
        threadpoolctl is missing).  Cached for the process.

    Examples
    --------
    >>> kernel = scipy_blas_kernel()
    >>> kernel is None or isinstance(kernel, str)
    True
    """
    import scipy.linalg.cython_blas  # noqa: F401 - loaded, so that threadpoolctl sees it

    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - scikit-learn depends on it
        return None
    for info in threadpool_info():
        if info.get("internal_api") == "openblas" and "scipy_openblas-" in os.path.basename(info["filepath"]):
            return info.get("architecture")
    return None


try:  # optional dependency, as in deepcollapse.dufm.compiled
    import numba

    _jit_contract = numba.njit(cache=True, nogil=True, fastmath={"contract"})
    _jit_reassoc = numba.njit(cache=True, nogil=True, fastmath={"contract", "reassoc"})
    _relu = numba.njit(cache=True, nogil=True)(ReLU.scalar)  # as in deepcollapse.dufm.compiled
    AVAILABLE = True
except ImportError:  # pragma: no cover
    AVAILABLE = False

if AVAILABLE:
    # The bodies below are written out (not generated at import) so that numba can cache them on disk.

    @_jit_contract
    def _mm_nn(A: Any, B: Any, C: Any, relu: bool) -> None:  # C = A B, then C ← ReLU(C) if relu
        m, n = C.shape
        t = C.dtype.type
        k = B.shape[0]
        kb = 1 + (k - 1) - (k - 1) % 4
        i = 0
        while i < m:
            if i + 3 <= m:  # 3 rows of C; the k terms in the same order as the 1-row tail
                p1 = 1
                if k >= 5:  # the first product and the first block of 4 in one pass (same order)
                    p1 = 5
                    c00, c01, c02, c03, c04 = A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4]
                    c10, c11, c12, c13, c14 = A[i + 1, 0], A[i + 1, 1], A[i + 1, 2], A[i + 1, 3], A[i + 1, 4]
                    c20, c21, c22, c23, c24 = A[i + 2, 0], A[i + 2, 1], A[i + 2, 2], A[i + 2, 3], A[i + 2, 4]
                    for j in range(n):
                        b0, b1, b2, b3, b4 = B[0, j], B[1, j], B[2, j], B[3, j], B[4, j]
                        C[i, j] = c00 * b0 + c01 * b1 + c02 * b2 + c03 * b3 + c04 * b4
                        C[i + 1, j] = c10 * b0 + c11 * b1 + c12 * b2 + c13 * b3 + c14 * b4
                        C[i + 2, j] = c20 * b0 + c21 * b1 + c22 * b2 + c23 * b3 + c24 * b4
                else:
                    a0, a1, a2 = A[i, 0], A[i + 1, 0], A[i + 2, 0]
                    for j in range(n):
                        b0 = B[0, j]
                        C[i, j] = a0 * b0
                        C[i + 1, j] = a1 * b0
                        C[i + 2, j] = a2 * b0
                for p in range(p1, kb, 4):
                    a00, a01, a02, a03 = A[i, p], A[i, p + 1], A[i, p + 2], A[i, p + 3]
                    a10, a11, a12, a13 = A[i + 1, p], A[i + 1, p + 1], A[i + 1, p + 2], A[i + 1, p + 3]
                    a20, a21, a22, a23 = A[i + 2, p], A[i + 2, p + 1], A[i + 2, p + 2], A[i + 2, p + 3]
                    for j in range(n):
                        b0, b1, b2, b3 = B[p, j], B[p + 1, j], B[p + 2, j], B[p + 3, j]
                        C[i, j] = C[i, j] + a00 * b0 + a01 * b1 + a02 * b2 + a03 * b3
                        C[i + 1, j] = C[i + 1, j] + a10 * b0 + a11 * b1 + a12 * b2 + a13 * b3
                        C[i + 2, j] = C[i + 2, j] + a20 * b0 + a21 * b1 + a22 * b2 + a23 * b3
                for p in range(kb, k):
                    a0, a1, a2 = A[i, p], A[i + 1, p], A[i + 2, p]
                    for j in range(n):
                        b0 = B[p, j]
                        C[i, j] = C[i, j] + a0 * b0
                        C[i + 1, j] = C[i + 1, j] + a1 * b0
                        C[i + 2, j] = C[i + 2, j] + a2 * b0
                if relu:  # σ while the rows are in L1: the same values as the separate pass
                    for r in range(i, i + 3):
                        for j in range(n):
                            C[r, j] = t(_relu(C[r, j], 0.0, 0.0))
                i += 3
            else:
                p1 = 1
                if k >= 5:  # the first product and the first block of 4 in one pass (same order)
                    p1 = 5
                    c00, c01, c02, c03, c04 = A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4]
                    for j in range(n):
                        b0, b1, b2, b3, b4 = B[0, j], B[1, j], B[2, j], B[3, j], B[4, j]
                        C[i, j] = c00 * b0 + c01 * b1 + c02 * b2 + c03 * b3 + c04 * b4
                else:
                    a0 = A[i, 0]
                    for j in range(n):
                        b0 = B[0, j]
                        C[i, j] = a0 * b0
                for p in range(p1, kb, 4):
                    a00, a01, a02, a03 = A[i, p], A[i, p + 1], A[i, p + 2], A[i, p + 3]
                    for j in range(n):
                        b0, b1, b2, b3 = B[p, j], B[p + 1, j], B[p + 2, j], B[p + 3, j]
                        C[i, j] = C[i, j] + a00 * b0 + a01 * b1 + a02 * b2 + a03 * b3
                for p in range(kb, k):
                    a0 = A[i, p]
                    for j in range(n):
                        b0 = B[p, j]
                        C[i, j] = C[i, j] + a0 * b0
                if relu:  # σ while the rows are in L1: the same values as the separate pass
                    for r in range(i, i + 1):
                        for j in range(n):
                            C[r, j] = t(_relu(C[r, j], 0.0, 0.0))
                i += 1

    @_jit_contract
    def _mm_tn_thin(A: Any, B: Any, C: Any, P: Any, mask: bool) -> None:  # _mm_tn for k <= 4 (W_Lᵀ G, K <= 4)
        m, n = C.shape
        t = C.dtype.type
        k = B.shape[0]
        for i in range(m):  # one pass per row: all k terms (in order) and the ⊙ σ' of the separate pass
            if k == 1:
                a0 = A[0, i]
                for j in range(n):
                    v = a0 * B[0, j]
                    C[i, j] = v * (t(1) if P[i, j] > 0 else t(0)) if mask else v
            elif k == 2:
                a0, a1 = A[0, i], A[1, i]
                for j in range(n):
                    v = a0 * B[0, j] + a1 * B[1, j]
                    C[i, j] = v * (t(1) if P[i, j] > 0 else t(0)) if mask else v
            elif k == 3:
                a0, a1, a2 = A[0, i], A[1, i], A[2, i]
                for j in range(n):
                    v = a0 * B[0, j] + a1 * B[1, j] + a2 * B[2, j]
                    C[i, j] = v * (t(1) if P[i, j] > 0 else t(0)) if mask else v
            else:
                a0, a1, a2, a3 = A[0, i], A[1, i], A[2, i], A[3, i]
                for j in range(n):
                    v = a0 * B[0, j] + a1 * B[1, j] + a2 * B[2, j] + a3 * B[3, j]
                    C[i, j] = v * (t(1) if P[i, j] > 0 else t(0)) if mask else v

    @_jit_contract
    def _mm_tn(A: Any, B: Any, C: Any, P: Any, mask: bool) -> None:  # C = Aᵀ B, then C ⊙ ReLU'(P) if mask
        m, n = C.shape
        t = C.dtype.type
        k = B.shape[0]
        if k <= 4:  # a thin last layer (K <= 4 classes): one pass per row instead of k
            _mm_tn_thin(A, B, C, P, mask)
            return
        kb = 1 + (k - 1) - (k - 1) % 4
        i = 0
        while i < m:
            if i + 3 <= m:  # 3 rows of C; the k terms in the same order as the 1-row tail
                p1 = 1
                if k >= 5:  # the first product and the first block of 4 in one pass (same order)
                    p1 = 5
                    c00, c01, c02, c03, c04 = A[0, i], A[1, i], A[2, i], A[3, i], A[4, i]
                    c10, c11, c12, c13, c14 = A[0, i + 1], A[1, i + 1], A[2, i + 1], A[3, i + 1], A[4, i + 1]
                    c20, c21, c22, c23, c24 = A[0, i + 2], A[1, i + 2], A[2, i + 2], A[3, i + 2], A[4, i + 2]
                    for j in range(n):
                        b0, b1, b2, b3, b4 = B[0, j], B[1, j], B[2, j], B[3, j], B[4, j]
                        C[i, j] = c00 * b0 + c01 * b1 + c02 * b2 + c03 * b3 + c04 * b4
                        C[i + 1, j] = c10 * b0 + c11 * b1 + c12 * b2 + c13 * b3 + c14 * b4
                        C[i + 2, j] = c20 * b0 + c21 * b1 + c22 * b2 + c23 * b3 + c24 * b4
                else:
                    a0, a1, a2 = A[0, i], A[0, i + 1], A[0, i + 2]
                    for j in range(n):
                        b0 = B[0, j]
                        C[i, j] = a0 * b0
                        C[i + 1, j] = a1 * b0
                        C[i + 2, j] = a2 * b0
                for p in range(p1, kb, 4):
                    a00, a01, a02, a03 = A[p, i], A[p + 1, i], A[p + 2, i], A[p + 3, i]
                    a10, a11, a12, a13 = A[p, i + 1], A[p + 1, i + 1], A[p + 2, i + 1], A[p + 3, i + 1]
                    a20, a21, a22, a23 = A[p, i + 2], A[p + 1, i + 2], A[p + 2, i + 2], A[p + 3, i + 2]
                    for j in range(n):
                        b0, b1, b2, b3 = B[p, j], B[p + 1, j], B[p + 2, j], B[p + 3, j]
                        C[i, j] = C[i, j] + a00 * b0 + a01 * b1 + a02 * b2 + a03 * b3
                        C[i + 1, j] = C[i + 1, j] + a10 * b0 + a11 * b1 + a12 * b2 + a13 * b3
                        C[i + 2, j] = C[i + 2, j] + a20 * b0 + a21 * b1 + a22 * b2 + a23 * b3
                for p in range(kb, k):
                    a0, a1, a2 = A[p, i], A[p, i + 1], A[p, i + 2]
                    for j in range(n):
                        b0 = B[p, j]
                        C[i, j] = C[i, j] + a0 * b0
                        C[i + 1, j] = C[i + 1, j] + a1 * b0
                        C[i + 2, j] = C[i + 2, j] + a2 * b0
                if mask:  # ⊙ σ' while the rows are in L1: the same values as the separate pass
                    for r in range(i, i + 3):
                        for j in range(n):
                            C[r, j] = C[r, j] * (t(1) if P[r, j] > 0 else t(0))  # t(ReLU.scalar_derivative)
                i += 3
            else:
                p1 = 1
                if k >= 5:  # the first product and the first block of 4 in one pass (same order)
                    p1 = 5
                    c00, c01, c02, c03, c04 = A[0, i], A[1, i], A[2, i], A[3, i], A[4, i]
                    for j in range(n):
                        b0, b1, b2, b3, b4 = B[0, j], B[1, j], B[2, j], B[3, j], B[4, j]
                        C[i, j] = c00 * b0 + c01 * b1 + c02 * b2 + c03 * b3 + c04 * b4
                else:
                    a0 = A[0, i]
                    for j in range(n):
                        b0 = B[0, j]
                        C[i, j] = a0 * b0
                for p in range(p1, kb, 4):
                    a00, a01, a02, a03 = A[p, i], A[p + 1, i], A[p + 2, i], A[p + 3, i]
                    for j in range(n):
                        b0, b1, b2, b3 = B[p, j], B[p + 1, j], B[p + 2, j], B[p + 3, j]
                        C[i, j] = C[i, j] + a00 * b0 + a01 * b1 + a02 * b2 + a03 * b3
                for p in range(kb, k):
                    a0 = A[p, i]
                    for j in range(n):
                        b0 = B[p, j]
                        C[i, j] = C[i, j] + a0 * b0
                if mask:  # ⊙ σ' while the rows are in L1: the same values as the separate pass
                    for r in range(i, i + 1):
                        for j in range(n):
                            C[r, j] = C[r, j] * (t(1) if P[r, j] > 0 else t(0))  # t(ReLU.scalar_derivative)
                i += 1

    @_jit_contract
    def mm_nn(A: Any, B: Any, C: Any) -> None:  # C = A B  (A: (m, k), B: (k, n), C: (m, n))
        _mm_nn(A, B, C, False)

    @_jit_contract
    def mm_nn_relu(A: Any, B: Any, C: Any) -> None:  # C = ReLU(A B), σ fused (as compiled._sigma_)
        _mm_nn(A, B, C, True)

    @_jit_contract
    def mm_tn(A: Any, B: Any, C: Any) -> None:  # C = Aᵀ B  (A: (k, m), B: (k, n), C: (m, n))
        _mm_tn(A, B, C, C, False)

    @_jit_contract
    def mm_tn_relu_d(A: Any, B: Any, C: Any, P: Any) -> None:  # C = (Aᵀ B) ⊙ ReLU'(P), fused
        _mm_tn(A, B, C, P, True)

    @_jit_reassoc
    def _mm_nt_thin(A: Any, B: Any, C: Any) -> None:  # mm_nt for m < 5 <= k (∂W_L = G H_Lᵀ with K <= 4)
        m, k = C.shape
        n = A.shape[1]
        t = C.dtype.type
        kb = k - k % 5
        for i in range(m):  # per row of A: five dot products at a time in registers, vectorised along n
            for c in range(0, kb, 5):
                s0, s1, s2, s3, s4 = t(0), t(0), t(0), t(0), t(0)
                for q in range(n):
                    a = A[i, q]
                    s0 += a * B[c, q]
                    s1 += a * B[c + 1, q]
                    s2 += a * B[c + 2, q]
                    s3 += a * B[c + 3, q]
                    s4 += a * B[c + 4, q]
                C[i, c], C[i, c + 1], C[i, c + 2], C[i, c + 3], C[i, c + 4] = s0, s1, s2, s3, s4
            for c in range(kb, k):
                s = t(0)
                for q in range(n):
                    s += A[i, q] * B[c, q]
                C[i, c] = s

    @_jit_reassoc
    def mm_nt(A: Any, B: Any, C: Any) -> None:  # C = A Bᵀ  (A: (m, n), B: (k, n), C: (m, k))
        m, k = C.shape
        n = A.shape[1]
        t = C.dtype.type
        if m < 5 <= k:  # few rows of A (a last layer with K <= 4): the 5-blocks run along B's rows
            _mm_nt_thin(A, B, C)
            return
        mb, kb = m - m % 5, k - k % 3
        for i in range(0, mb, 5):
            for c in range(0, kb, 3):
                s00, s01, s02 = t(0), t(0), t(0)
                s10, s11, s12 = t(0), t(0), t(0)
                s20, s21, s22 = t(0), t(0), t(0)
                s30, s31, s32 = t(0), t(0), t(0)
                s40, s41, s42 = t(0), t(0), t(0)
                for q in range(n):
                    b0, b1, b2 = B[c, q], B[c + 1, q], B[c + 2, q]
                    a0, a1, a2, a3, a4 = A[i, q], A[i + 1, q], A[i + 2, q], A[i + 3, q], A[i + 4, q]
                    s00 += a0 * b0
                    s01 += a0 * b1
                    s02 += a0 * b2
                    s10 += a1 * b0
                    s11 += a1 * b1
                    s12 += a1 * b2
                    s20 += a2 * b0
                    s21 += a2 * b1
                    s22 += a2 * b2
                    s30 += a3 * b0
                    s31 += a3 * b1
                    s32 += a3 * b2
                    s40 += a4 * b0
                    s41 += a4 * b1
                    s42 += a4 * b2
                C[i, c], C[i, c + 1], C[i, c + 2] = s00, s01, s02
                C[i + 1, c], C[i + 1, c + 1], C[i + 1, c + 2] = s10, s11, s12
                C[i + 2, c], C[i + 2, c + 1], C[i + 2, c + 2] = s20, s21, s22
                C[i + 3, c], C[i + 3, c + 1], C[i + 3, c + 2] = s30, s31, s32
                C[i + 4, c], C[i + 4, c + 1], C[i + 4, c + 2] = s40, s41, s42
        for i in range(m):  # the edges: one entry at a time
            for c in range(kb if i < mb else 0, k):
                s = t(0)
                for q in range(n):
                    s += A[i, q] * B[c, q]
                C[i, c] = s
