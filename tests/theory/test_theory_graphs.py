"""Triangular graphs T_r: strongly regular parameters, spectrum, incidence matrix."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deepcollapse.theory import (
    adjacency_matrix,
    incidence_matrix,
    r_from_classes,
    spectrum,
    triangular_spectrum,
)
from deepcollapse.theory.graphs import largest_r_at_most, smallest_r_at_least


@pytest.mark.parametrize("r", [4, 5, 6, 7, 9])
def test_triangular_graph_is_strongly_regular(r):
    G = adjacency_matrix(r)
    K = r * (r - 1) // 2
    edges = list(itertools.combinations(range(r), 2))
    # adjacency from the definition: edges of K_r sharing a vertex
    ref = np.array(
        [
            [1.0 if i != j and set(a) & set(b) else 0.0 for j, b in enumerate(edges)]
            for i, a in enumerate(edges)
        ]
    )
    assert np.array_equal(G, ref)
    assert G.shape == (K, K) and np.all(G.sum(1) == 2 * (r - 2))
    common = G @ G
    adjacent = G == 1
    off = ~np.eye(K, dtype=bool)
    assert np.all(common[adjacent] == r - 2)
    assert np.all(common[~adjacent & off] == 4)


@pytest.mark.parametrize("r", [4, 5, 6, 8, 10])
def test_spectrum_matches_closed_form(r):
    numeric = spectrum(adjacency_matrix(r))
    expected = np.sort(
        np.concatenate([[2.0 * (r - 2)], np.full(r - 1, r - 4.0), np.full(r * (r - 3) // 2, -2.0)])
    )
    assert np.allclose(numeric, expected, atol=1e-10)
    closed = triangular_spectrum(r)
    flat = np.sort(np.concatenate([np.full(m, v) for v, m in closed.items()]))
    assert np.allclose(flat, expected)


@pytest.mark.parametrize("r", [4, 5, 7])
def test_incidence_matrix(r):
    T = incidence_matrix(r)
    K = r * (r - 1) // 2
    assert T.shape == (r, K)
    assert np.allclose(np.unique(T), [0.0, 1.0 / math.sqrt(r - 1)])
    assert np.all((T > 0).sum(0) == 2) and np.all((T > 0).sum(1) == r - 1)
    assert np.allclose(T.T @ T, (2 * np.eye(K) + adjacency_matrix(r)) / (r - 1))
    assert np.linalg.matrix_rank(T) == r
    # nuclear norm p_0 = sqrt(2) + sqrt((r-1)(r-2))
    assert np.linalg.svd(T, compute_uv=False).sum() == pytest.approx(
        math.sqrt(2) + math.sqrt((r - 1) * (r - 2))
    )


def test_r_helpers():
    assert r_from_classes(10) == 5 and r_from_classes(6) == 4 and r_from_classes(11) is None
    assert largest_r_at_most(14) == 5 and smallest_r_at_least(11) == 6 and smallest_r_at_least(15) == 6
