"""The kink manifold of eq. (1) and a Newton–KKT (SQP) solver on it, for :mod:`~deepcollapse.landscape.kinks`.

For an active set ``A`` of pre-activations (``l = 2..L``) the problem is

    min f_A(θ)  s.t.  c_A(θ) = H~_l[A] = 0,

``f_A`` the smooth piece of eq. (1) (2024 paper) with the units of ``A`` off and ReLU elsewhere (on the
manifold it is the true ``f``; a released unit asking for the on side, ``on``, is on at ``H~ = 0``).
:class:`Manifold` gives ``f_A``, ``c_A``, the gradient, ``J_A v`` (forward mode: ``δH~ = δW H + W δH``, masked
by the pattern) and ``J_A^T μ`` (back-propagation with ``μ`` injected at ``A``) in numpy float64, and the
Hessian of the Lagrangian ``ℓ = f_A + μ·c_A`` by torch float64 double back-propagation (pattern held fixed;
``c_A`` is bilinear in consecutive layers, so ``μ·∇²c_A`` is not zero).

:func:`newton_kkt`, one SQP iteration: solve the KKT system

    [[∇²ℓ, J^T], [J, 0]] [d; μ⁺] = −[∇f_A; c_A]

by MINRES (scipy, a ``LinearOperator``: one Hessian-vector product and one ``J``, ``J^T`` product per
iteration), then backtrack ``x + α d`` (``α = 1, 1/2, ..``) until the KKT residual
``‖∇f_A + J^T μ‖ + ‖c_A‖`` or the true eq. (1) plus ``ν‖c_A‖_1`` (``ν = 2 max|μ⁺|``) decreases.  It stops
at ``‖∇f_A + J^T μ‖ <= grad_tol / 10`` with ``|c_A|`` within
:func:`~deepcollapse.landscape.piecewise.zero_tolerance` (or not halving any more: the rounding floor), when
no step is accepted, or at the iteration / time limit.  Near a non-degenerate KKT point the step is Newton's
and the convergence quadratic; where ``J_A`` is rank-deficient (a dead unit) it is linear.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import numpy as np

from deepcollapse.landscape.piecewise import (
    Problem,
    flatten,
    preactivations,
    unflatten,
    value,
    zero_tolerance,
)
from deepcollapse.theory.objective import objective_from_output

__all__ = ["Manifold", "clarke_certificate", "multiplier_certificate", "newton_kkt", "witness_residual"]

log = logging.getLogger(__name__)


class Manifold:
    """``f_A`` (eq. (1) with the units of ``A`` off, ReLU elsewhere), the constraints ``c_A = H~_l[A]`` and
    their derivatives (``pattern``: the masks of the last forward pass)."""

    def __init__(
        self,
        problem: Problem,
        shapes: list[tuple[int, ...]],
        A: list[np.ndarray],
        on: list[np.ndarray] | None = None,
    ):
        self.problem, self.shapes, self.A = problem, shapes, A
        self.on = on if on is not None else [np.zeros(a.shape, dtype=bool) for a in A]
        self.pattern: list[np.ndarray] = []
        self.Y = problem.targets()
        self.size = sum(int(np.prod(s)) for s in shapes)
        self.m = int(sum(a.sum() for a in A))

    def forward(self, x: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], Any]:
        """``(params, [H_1 .. H_L], [H~_2 .. H~_L], W_L H_L)`` with the units of ``A`` off and ReLU elsewhere
        (so the value equals the true ``f`` on the manifold); the masks used go to ``self.pattern``.

        Parameters
        ----------
        x : ndarray, (P,)
            The flat point ``[H_1, W_1 .. W_L]``.

        Returns
        -------
        params : list of ndarray
            ``x`` unflattened.
        posts : list of ndarray
            ``[H_1 .. H_L]``.
        pres : list of ndarray
            ``[H~_2 .. H~_L]``.
        out : ndarray, (K, N)
            ``W_L H_L``.

        Examples
        --------
        >>> from deepcollapse.landscape.piecewise import flatten
        >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
        >>> problem = Problem(2, 2, 1, 0.1, 0.1)
        >>> A = [np.array([[False, False], [True, False]])]
        >>> man, x = Manifold(problem, [p.shape for p in params], A), flatten(params)
        >>> _, posts, pres, out = man.forward(x)
        >>> len(posts), len(pres), out.shape, man.pattern[0].tolist()
        (2, 1, (2, 2), [[True, False], [False, True]])
        """
        p = unflatten(x, self.shapes)
        Hs, pres, masks = [p[0]], [], []
        for W, a, on in zip(p[1:-1], self.A, self.on):
            Ht = W @ Hs[-1]  # (d_{l+1}, N): H~_{l+1}
            D = ((Ht > 0) | (on & (Ht >= -zero_tolerance(Ht)))) & ~a  # a released unit: its side at 0
            pres.append(Ht)
            masks.append(D)
            Hs.append(Ht * D)
        self.pattern = masks
        return p, Hs, pres, p[-1] @ Hs[-1]  # out: (K, N)

    def constraints(self, x: np.ndarray) -> np.ndarray:
        """``c_A = [H~_l[A]]``: the pre-activations of the active set at ``x`` (0 on the manifold).

        Parameters
        ----------
        x : ndarray, (P,)
            The flat point ``[H_1, W_1 .. W_L]``.

        Returns
        -------
        ndarray, (m,)
            One value per entry of ``A``, layer by layer.

        Examples
        --------
        >>> from deepcollapse.landscape.piecewise import flatten
        >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
        >>> problem = Problem(2, 2, 1, 0.1, 0.1)
        >>> A = [np.array([[False, False], [True, False]])]
        >>> man, x = Manifold(problem, [p.shape for p in params], A), flatten(params)
        >>> man.constraints(x)
        array([0.])
        """
        return np.concatenate([Ht[a] for Ht, a in zip(self.forward(x)[2], self.A)])

    def backward(
        self, p: list[np.ndarray], Hs: list[np.ndarray], G: np.ndarray, inject: np.ndarray | None, reg: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Flat gradient for the output signal ``G = ∂/∂(W_L H_L)`` plus ``inject`` (per A entry) added to
        ``∂/∂H~_l`` at ``A``, with or without the ``λ`` terms; and ``∂f/∂H_l`` at ``A`` (before the mask).

        Parameters
        ----------
        p : list of ndarray
            The parameters (:meth:`forward`'s first value).
        Hs : list of ndarray
            ``[H_1 .. H_L]`` of the same pass.
        G : ndarray, (K, N)
            The output signal.
        inject : ndarray or None
            One value per entry of ``A`` (``None``: nothing injected).
        reg : bool
            Add the regularisation terms.

        Returns
        -------
        gradient : ndarray, (P,)
            Flat, the parameters' order.
        G_at_A : ndarray, (m,)
            ``∂f/∂H_l`` at the entries of ``A``.

        Examples
        --------
        >>> from deepcollapse.landscape.piecewise import flatten
        >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
        >>> problem = Problem(2, 2, 1, 0.1, 0.1)
        >>> A = [np.array([[False, False], [True, False]])]
        >>> man, x = Manifold(problem, [p.shape for p in params], A), flatten(params)
        >>> p, Hs, _, out = man.forward(x)
        >>> g, G_at_A = man.backward(p, Hs, np.zeros_like(out), None, True)  # the λ terms alone
        >>> bool(np.allclose(g, 0.1 * x)), G_at_A.tolist()
        (True, [0.0])
        """
        Ws, prob = p[1:], self.problem
        grads: list[np.ndarray] = [np.empty(0)] * len(Ws)
        offsets = np.cumsum([0, *[int(a.sum()) for a in self.A]])
        G_at_A = np.zeros(self.m)
        for l in range(len(Ws) - 1, -1, -1):
            grads[l] = G @ Hs[l].T + (prob.lam_w[l] * Ws[l] if reg else 0.0)
            G = Ws[l].T @ G
            if l > 0:
                a, sl = self.A[l - 1], slice(offsets[l - 1], offsets[l])
                G_at_A[sl] = G[a]
                G = G * self.pattern[l - 1]
                if inject is not None:
                    G[a] += inject[sl]
        gH = G + (prob.lam_h * p[0] if reg else 0.0)
        return flatten([gH, *grads]), G_at_A

    def gradient(self, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """``(f_A, ∇f_A, c_A, ∂f/∂H~ at A)`` at ``x`` (the forward pass stays in ``self``'s pattern).

        Parameters
        ----------
        x : ndarray, (P,)
            The flat point ``[H_1, W_1 .. W_L]``.

        Returns
        -------
        f : float
            ``f_A`` (the true eq. (1) on the manifold).
        gradient : ndarray, (P,)
            ``∇f_A``.
        c : ndarray, (m,)
            ``c_A``.
        G_at_A : ndarray, (m,)
            ``∂f/∂H~`` at ``A``.

        Examples
        --------
        >>> from deepcollapse.landscape.piecewise import flatten
        >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
        >>> problem = Problem(2, 2, 1, 0.1, 0.1)
        >>> A = [np.array([[False, False], [True, False]])]
        >>> man, x = Manifold(problem, [p.shape for p in params], A), flatten(params)
        >>> f, g, c, _ = man.gradient(x)
        >>> round(f, 12), g.shape, c.tolist()
        (0.35, (12,), [0.0])
        """
        p, Hs, pres, out = self.forward(x)
        loss, prob = self.problem.family.loss, self.problem
        f = objective_from_output(out, self.Y, p[0], p[1:], prob.lam_h, prob.lam_w, loss).total
        g, G_at_A = self.backward(p, Hs, loss.residual(out, self.Y) / prob.N, None, reg=True)
        c = np.concatenate([Ht[a] for Ht, a in zip(pres, self.A)]) if self.m else np.zeros(0)
        return float(f), g, c, G_at_A

    def jt(self, x: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """``J_A^T μ`` at ``x``.

        Parameters
        ----------
        x : ndarray, (P,)
            The flat point ``[H_1, W_1 .. W_L]``.
        mu : ndarray, (m,)
            One multiplier per constraint.

        Returns
        -------
        ndarray, (P,)
            ``J_A^T μ``, flat.

        Examples
        --------
        >>> from deepcollapse.landscape.piecewise import flatten
        >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
        >>> problem = Problem(2, 2, 1, 0.1, 0.1)
        >>> A = [np.array([[False, False], [True, False]])]
        >>> man, x = Manifold(problem, [p.shape for p in params], A), flatten(params)
        >>> man.jt(x, np.zeros(1)).shape
        (12,)
        """
        p, Hs, _, out = self.forward(x)
        return self.backward(p, Hs, np.zeros_like(out), np.asarray(mu, dtype=np.float64).ravel(), False)[0]

    def products(self, x: np.ndarray) -> tuple[Any, Any]:
        """``(v ↦ J_A v, μ ↦ J_A^T μ)`` at ``x`` (one forward pass, reused).

        Parameters
        ----------
        x : ndarray, (P,)
            The flat point ``[H_1, W_1 .. W_L]``.

        Returns
        -------
        jv : callable
            ``v (P,) ↦ J_A v (m,)``.
        jt : callable
            ``μ (m,) ↦ J_A^T μ (P,)``.

        Examples
        --------
        >>> from deepcollapse.landscape.piecewise import flatten
        >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
        >>> problem = Problem(2, 2, 1, 0.1, 0.1)
        >>> A = [np.array([[False, False], [True, False]])]
        >>> man, x = Manifold(problem, [p.shape for p in params], A), flatten(params)
        >>> jv, jt = man.products(x)
        >>> jv(np.ones(12)).tolist(), jt(np.ones(1)).shape
        ([2.0], (12,))
        """
        p, Hs, _, out = self.forward(x)
        pattern, zero = list(self.pattern), np.zeros_like(out)

        def jt(mu: np.ndarray) -> np.ndarray:  # J_A^T μ
            self.pattern = pattern
            return self.backward(p, Hs, zero, np.asarray(mu, dtype=np.float64).ravel(), reg=False)[0]

        def jv(v: np.ndarray) -> np.ndarray:  # J_A v (forward mode: δH~ = δW H + W δH)
            dp = unflatten(np.asarray(v, dtype=np.float64).ravel(), self.shapes)
            dH, rows = dp[0], []
            for W, dW, H, D, a in zip(p[1:-1], dp[1:-1], Hs[:-1], pattern, self.A):
                dHt = dW @ H + W @ dH
                rows.append(dHt[a])
                dH = dHt * D
            return np.concatenate(rows) if rows else np.zeros(0)

        return jv, jt

    def multipliers(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """Least-squares ``μ = argmin ‖∇f_A + J_A^T μ‖`` (LSQR), the signal ``Ĝ`` at ``A`` (back-propagated
        with the injections ``μ`` of the layers above, :func:`clarke_certificate`), and that residual.

        Parameters
        ----------
        x : ndarray, (P,)
            The flat point ``[H_1, W_1 .. W_L]``.

        Returns
        -------
        mu : ndarray, (m,)
            The multipliers.
        G_hat : ndarray, (m,)
            The signal ``Ĝ`` at ``A``.
        residual : float
            ``‖∇f_A + J_A^T μ‖``.

        Examples
        --------
        >>> from deepcollapse.landscape.piecewise import flatten
        >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
        >>> problem = Problem(2, 2, 1, 0.1, 0.1)
        >>> A = [np.array([[False, False], [True, False]])]
        >>> man, x = Manifold(problem, [p.shape for p in params], A), flatten(params)
        >>> mu, G_hat, residual = man.multipliers(x)
        >>> mu.shape, round(residual, 6)
        ((1,), 0.264575)
        """
        from scipy.sparse.linalg import LinearOperator, lsqr

        _, g, _, G_at_A = self.gradient(x)
        if self.m == 0:
            return np.zeros(0), G_at_A, float(np.linalg.norm(g))
        jv, jt = self.products(x)
        op = LinearOperator((self.size, self.m), matvec=jt, rmatvec=jv, dtype=np.float64)
        mu = lsqr(op, -g, atol=1e-15, btol=1e-15, iter_lim=20 * self.m)[0]
        p, Hs, _, out = self.forward(x)
        G_out = self.problem.family.loss.residual(out, self.Y) / self.problem.N
        r, G_hat = self.backward(p, Hs, G_out, mu, reg=True)  # Ĝ: with the injections of the layers above
        return mu, G_hat, float(np.linalg.norm(r))

    def lagrangian_hessian(self, x: np.ndarray, mu: np.ndarray) -> Any:
        """``v ↦ ∇²(f_A + μ·c_A) v`` at ``x`` (torch float64, the pattern of ``x`` held fixed).

        Parameters
        ----------
        x : ndarray, (P,)
            The flat point ``[H_1, W_1 .. W_L]``.
        mu : ndarray, (m,)
            The multipliers.

        Returns
        -------
        callable
            ``v (P,) ↦ ∇²ℓ v (P,)``, float64.

        Examples
        --------
        >>> from deepcollapse.landscape.piecewise import flatten
        >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
        >>> problem = Problem(2, 2, 1, 0.1, 0.1)
        >>> A = [np.array([[False, False], [True, False]])]
        >>> man, x = Manifold(problem, [p.shape for p in params], A), flatten(params)
        >>> hvp = man.lagrangian_hessian(x, np.zeros(1))
        >>> hvp(np.ones(12)).shape
        (12,)
        """
        import torch

        from deepcollapse.landscape.piecewise import piece_objective

        p = unflatten(x, self.shapes)
        ts = [torch.tensor(np.array(q), requires_grad=True) for q in p]
        self.forward(x)
        masks = [torch.tensor(D, dtype=torch.float64) for D in self.pattern]
        ell = piece_objective(ts, masks, torch.tensor(self.Y), self.problem)
        H, i = ts[0], 0
        for W, D, a in zip(ts[1:-1], masks, self.A):
            Ht = W @ H  # (d_{l+1}, N)
            k = int(a.sum())
            if k:
                ell = ell + (torch.tensor(mu[i : i + k]) * Ht[torch.tensor(a)]).sum()
            i += k
            H = Ht * D
        grads = torch.autograd.grad(ell, ts, create_graph=True)

        def hvp(v: np.ndarray) -> np.ndarray:
            vs = [torch.from_numpy(np.ascontiguousarray(z)) for z in unflatten(np.asarray(v), self.shapes)]
            gv = torch.stack([(g * z).sum() for g, z in zip(grads, vs)]).sum()
            hv = torch.autograd.grad(gv, ts, retain_graph=True)
            return np.concatenate([h.detach().numpy().ravel() for h in hv])

        return hvp


def clarke_certificate(
    man: Manifold, x: np.ndarray, mu: np.ndarray, kink_rtol: float
) -> tuple[float, list[np.ndarray] | None]:
    """A Clarke element read off the multipliers: ``‖∇f_D‖`` with ``D_k = clip(μ_k / Ĝ_k, 0, 1)`` at ``A``.

    ``Ĝ_k`` is the back-propagated signal at ``H~_l[k]`` *with the injections ``μ`` of the layers above*
    (:meth:`Manifold.backward`): going down from the top, the chain rule with these ``D`` reproduces
    ``∇f_A + J^T μ`` layer by layer, so a KKT point whose implied ``D`` lie in ``[0, 1]`` is Clarke-critical
    even where ``J_A`` is rank-deficient and the multi-linear minimisation over ``D`` stalls.  The gradient is
    computed by a separate torch graph (:func:`~deepcollapse.landscape.piecewise.piece_objective` with the
    fractional masks), so the number is an upper bound of the Clarke residual whatever ``μ`` is.

    Parameters
    ----------
    man : Manifold
        The manifold of the active set ``A``.
    x : ndarray
        Flat point ``[H_1, W_1 .. W_L]``.
    mu : ndarray
        Multipliers, one per entry of ``A``.
    kink_rtol : float
        The near-kink rule ``|H~_l| <= kink_rtol · max|H~_l|``: an entry of ``A`` outside it is not at a kink
        and the certificate is ``inf``.

    Returns
    -------
    residual : float
        ``‖∇f_D‖`` (``inf`` when ``A`` is not at the kinks).
    masks : list of ndarray or None
        The witness ``D_2 .. D_L`` (the ReLU pattern, ``D_k`` at ``A``); None with ``inf``.

    Examples
    --------
    >>> from deepcollapse.landscape.piecewise import flatten
    >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
    >>> problem = Problem(2, 2, 1, 0.1, 0.1)
    >>> A = [np.array([[False, False], [True, False]])]
    >>> man, x = Manifold(problem, [p.shape for p in params], A), flatten(params)
    >>> residual, masks = clarke_certificate(man, x, man.multipliers(x)[0], 1e-9)
    >>> round(residual, 6), masks[0].tolist()
    (0.264575, [[1.0, 0.0], [0.0, 1.0]])
    """
    p, Hs, pres, out = man.forward(x)
    if any(
        a.any() and float(np.abs(Ht[a]).max()) > kink_rtol * float(np.abs(Ht).max())
        for Ht, a in zip(pres, man.A)
    ):
        return float("inf"), None
    G_out = man.problem.family.loss.residual(out, man.Y) / man.problem.N
    _, G_hat = man.backward(p, Hs, G_out, np.asarray(mu, dtype=np.float64), reg=True)
    safe = np.where(np.abs(G_hat) > 0, G_hat, 1.0)
    d = np.where(np.abs(G_hat) > 0, np.clip(mu / safe, 0.0, 1.0), 0.0)
    masks, i = [], 0
    for D, a in zip(man.pattern, man.A):
        m = D.astype(np.float64)
        m[a] = d[i : i + int(a.sum())]
        masks.append(m)
        i += int(a.sum())
    return float(np.linalg.norm(_masked_gradient(p, man.problem, masks))), masks


def _masked_gradient(params: list[np.ndarray], problem: Problem, masks: list[np.ndarray]) -> np.ndarray:
    """``∇f_D`` (flat, the parameters' order) for the fixed derivative values ``D = masks`` of the hidden
    layers (:func:`~deepcollapse.landscape.piecewise.piece_objective`, a torch graph of its own)."""
    import torch

    from deepcollapse.landscape.piecewise import piece_objective

    ts = [torch.tensor(np.array(q, dtype=np.float64), requires_grad=True) for q in params]
    f = piece_objective(ts, [torch.tensor(m) for m in masks], torch.tensor(problem.targets()), problem)
    grads = torch.autograd.grad(f, ts)
    return np.concatenate([g.detach().numpy().ravel() for g in grads])


def witness_residual(
    params: list[np.ndarray], problem: Problem, masks: list[np.ndarray], kink_rtol: float
) -> tuple[float, np.ndarray | None]:
    """``‖∇f_D‖`` for a Clarke element ``D`` known from elsewhere (the kink refinement's ``clarke_masks``).

    An upper bound of the verdicts' Clarke residual (the minimum of ``‖∇f_D‖`` over ``D ∈ [0, 1]`` at the
    near-kinks, ``D`` the ReLU pattern elsewhere) when ``D`` is one of its candidates: every entry in
    ``[0, 1]``, and equal to the pattern ``H~_l > 0`` wherever ``|H~_l| > kink_rtol · max|H~_l|``.  A
    refinement's witness is built on its own active set, which can differ from the verdict's near-kinks (a
    unit released from the kink but still within ``kink_rtol`` of it); checking it here keeps one rule.

    Parameters
    ----------
    params : list of ndarray
        ``[H_1, W_1 .. W_L]`` (float64).
    problem : Problem
        The instance of eq. (1) (the shapes of ``masks`` follow its ``n``).
    masks : list of ndarray
        ``D_2 .. D_L``, the shapes of ``H~_2 .. H~_L``.
    kink_rtol : float
        The near-kink rule.

    Returns
    -------
    residual : float
        ``‖∇f_D‖``, or ``inf`` where ``D`` is not a candidate (wrong shapes included).
    gradient : ndarray or None
        ``∇f_D`` (flat); None with ``inf``.

    Examples
    --------
    >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
    >>> problem = Problem(2, 2, 1, 0.1, 0.1)
    >>> round(witness_residual(params, problem, [np.eye(2)], 1e-9)[0], 6)
    0.264575
    >>> witness_residual(params, problem, [np.ones((2, 2))], 1e-9)  # on at H~_2[0, 1] = -1: not a candidate
    (inf, None)
    """
    pres = preactivations(params)
    Ds = [np.asarray(D, dtype=np.float64) for D in masks]
    if len(Ds) != len(pres):
        return math.inf, None
    for D, Ht in zip(Ds, pres):
        if D.shape != Ht.shape or not np.all((D >= 0.0) & (D <= 1.0)):
            return math.inf, None
        off = np.abs(Ht) > kink_rtol * float(np.max(np.abs(Ht), initial=0.0))
        if np.any(D[off] != (Ht[off] > 0)):
            return math.inf, None
    g = _masked_gradient(params, problem, Ds)
    return float(np.linalg.norm(g)), g


def _kkt_residual(man: Manifold, x: np.ndarray, mu: np.ndarray) -> tuple[float, float, np.ndarray]:
    """``(‖∇f_A + J^T μ‖, ‖c_A‖, c_A)`` at ``x``."""
    _, g, c, _ = man.gradient(x)
    r = g + man.jt(x, mu) if man.m else g
    return float(np.linalg.norm(r)), float(np.linalg.norm(c)), c


def newton_kkt(
    man: Manifold,
    x: np.ndarray,
    grad_tol: float,
    deadline: float,
    *,
    max_iter: int = 30,
    minres_iter: int = 4000,
) -> tuple[np.ndarray, dict[str, Any]]:
    """SQP / Newton–KKT on the manifold ``c_A = 0`` (module docstring), warm-started at ``x``.

    Parameters
    ----------
    man : Manifold
        ``f_A``, ``c_A`` and their derivatives.
    x : ndarray
        Flat start ``[H_1, W_1 .. W_L]``.
    grad_tol : float
        Stop when ``‖∇f_A + J^T μ‖ <= grad_tol / 10`` and ``|c_A| <=`` the zero tolerance of each layer.
    deadline : float
        ``time.monotonic()`` after which no new iteration starts.
    max_iter : int
        SQP iterations at most.
    minres_iter : int
        MINRES iterations per KKT solve at most.

    Returns
    -------
    x : ndarray
        The last accepted point.
    info : dict
        ``iterations``, ``residual`` (``‖∇f_A + J^T μ‖``), ``feasible`` and ``mu`` (the last multipliers).

    Examples
    --------
    >>> from deepcollapse.landscape.piecewise import flatten
    >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
    >>> problem = Problem(2, 2, 1, 0.1, 0.1)
    >>> A = [np.array([[False, False], [True, False]])]
    >>> man, x = Manifold(problem, [p.shape for p in params], A), flatten(params)
    >>> y, info = newton_kkt(man, x, 1e-9, time.monotonic() + 10)
    >>> info["feasible"], bool(info["residual"] < 1e-10)
    (True, True)
    """
    from scipy.sparse.linalg import LinearOperator, minres

    n, m = man.size, man.m
    mu = man.multipliers(x)[0]
    tols = [zero_tolerance(Ht) for Ht in preactivations(unflatten(x, man.shapes))]
    shapes = man.shapes

    def feasible(z: np.ndarray) -> bool:
        pre = man.forward(z)[2]
        return all(not a.any() or float(np.abs(Ht[a]).max()) <= t for Ht, a, t in zip(pre, man.A, tols))

    def merit(z: np.ndarray, c: np.ndarray, nu: float) -> float:
        return value(unflatten(z, shapes), man.problem) + nu * float(np.abs(c).sum())

    r, cn, c = _kkt_residual(man, x, mu)
    it, last = 0, math.inf
    for it in range(1, max_iter + 1):  # noqa: B007  (the count is reported)
        # done: stationary and on the manifold, or stationary and at the rounding floor (no halving)
        if (r <= grad_tol / 10 and (feasible(x) or r + cn > 0.5 * last)) or time.monotonic() > deadline:
            it -= 1
            break
        last = r + cn
        _, g, c, _ = man.gradient(x)
        hvp = man.lagrangian_hessian(x, mu)
        jv, jt = man.products(x)

        def kkt(v: np.ndarray, hvp: Any = hvp, jv: Any = jv, jt: Any = jt) -> np.ndarray:
            d, y = v[:n], v[n:]
            return np.concatenate([hvp(d) + (jt(y) if m else 0.0), jv(d)])

        op = LinearOperator((n + m, n + m), matvec=kkt, rmatvec=kkt, dtype=np.float64)
        sol, flag = minres(op, -np.concatenate([g, c]), rtol=1e-12, maxiter=minres_iter)
        d, y = sol[:n], sol[n:]
        nu = 2.0 * float(np.max(np.abs(y), initial=0.0))
        phi0, score0 = merit(x, c, nu), r + cn
        for alpha in (1.0, 0.5, 0.25, 0.125, 1 / 16, 1 / 64, 1 / 256):
            z, mu_z = x + alpha * d, mu + alpha * (y - mu)
            if not np.all(np.isfinite(z)):
                continue
            rz, cz_n, cz = _kkt_residual(man, z, mu_z)
            if rz + cz_n < (1 - 1e-4 * alpha) * score0 or merit(z, cz, nu) < phi0 - 1e-15 * abs(phi0):
                x, mu, r, cn = z, mu_z, rz, cz_n
                log.debug("SQP %d: α %g, residual %.3g, ‖c‖ %.3g, MINRES %d", it, alpha, r, cn, flag)
                break
        else:
            log.debug("SQP %d: no step accepted (residual %.3g, MINRES %d)", it, r, flag)
            break
    return x, {"iterations": it, "residual": r, "feasible": feasible(x), "mu": mu}


def multiplier_certificate(
    params: list[np.ndarray], problem: Problem, masks: list[np.ndarray], kink_rtol: float
) -> tuple[float, list[np.ndarray] | None]:
    """:func:`clarke_certificate` at a point with its least-squares multipliers for the kinks ``masks``.

    The verdicts' second estimate of the Clarke residual (:func:`~deepcollapse.landscape.verdicts.landscape`):
    at a point on its kink manifold the minimisation over ``D`` from ``D = 1/2`` can stall (multi-linear in
    ``D``) where the multipliers give a Clarke element directly; both are upper bounds, the smaller counts.

    Parameters
    ----------
    params : list of ndarray
        ``[H_1, W_1 .. W_L]`` (float64).
    problem : Problem
        The instance of eq. (1).
    masks : list of ndarray
        Per hidden layer, the kinks (booleans, the shapes of ``H~_l``), e.g. the near-kinks of
        :func:`~deepcollapse.landscape.probes.kink_masks`.
    kink_rtol : float
        The near-kink rule of :func:`clarke_certificate`.

    Returns
    -------
    residual : float
        ``‖∇f_D‖`` for the multipliers' ``D`` (``inf`` where there is no kink or ``A`` is not at the kinks).
    masks : list of ndarray or None
        The witness ``D_2 .. D_L``.

    Examples
    --------
    >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
    >>> A = [np.array([[False, False], [True, False]])]
    >>> residual, masks = multiplier_certificate(params, Problem(2, 2, 1, 0.1, 0.1), A, 1e-9)
    >>> round(residual, 6), masks[0].tolist()
    (0.264575, [[1.0, 0.0], [0.0, 1.0]])
    """
    if not sum(int(np.sum(a)) for a in masks):
        return math.inf, None
    shapes = [np.shape(p) for p in params]
    man = Manifold(problem, shapes, [np.asarray(a, dtype=bool) for a in masks])
    x = flatten(params)
    mu = man.multipliers(x)[0]
    return clarke_certificate(man, x, mu, kink_rtol)
