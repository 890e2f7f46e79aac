"""PPR solvers against the exact solution of the linear system and against networkx."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from hopgraph.graph import ppr_exact, ppr_power, ppr_power_local, ppr_push, row_normalize
from hopgraph.graph.ppr import ppr_local


def random_graph(n: int, density: float, seed: int, dangling: bool = False) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    W = sp.random(n, n, density=density, random_state=rng, format="csr")
    W = W + sp.identity(n, format="csr") * 0  # keep CSR
    if not dangling:  # a ring guarantees every node an out-edge
        ring = sp.csr_matrix((np.full(n, 0.5), (np.arange(n), (np.arange(n) + 1) % n)), (n, n))
        W = W + ring
    return row_normalize(W)


def seed_vector(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = np.zeros(n)
    s[rng.choice(n, 3, replace=False)] = rng.random(3)
    return s / s.sum()


@pytest.mark.parametrize("dangling", [False, True])
@pytest.mark.parametrize("alpha", [0.15, 0.5])
def test_power_iteration_converges_to_exact(alpha, dangling):
    P = random_graph(60, 0.05, 1, dangling)
    s = seed_vector(60, 2)
    exact = ppr_exact(P, s, alpha)
    approx = ppr_power(sp.csr_matrix(P.T), s, alpha, max_iter=500, tol=1e-13)
    np.testing.assert_allclose(approx, exact, atol=1e-10)


def test_power_iteration_t_steps_is_the_truncated_series():
    # r_T = α Σ_{t<T} ((1-α)Pᵀ)^t s + ((1-α)Pᵀ)^T s, by hand with dense matrices
    P = random_graph(20, 0.2, 3).toarray()
    s = seed_vector(20, 4)
    a, T = 0.15, 5
    M = (1 - a) * P.T
    expected = sum(a * np.linalg.matrix_power(M, t) @ s for t in range(T))
    expected += np.linalg.matrix_power(M, T) @ s
    got = ppr_power(sp.csr_matrix(P.T), s, a, max_iter=T)
    np.testing.assert_allclose(got, expected, atol=1e-12)


@pytest.mark.parametrize("dangling", [False, True])
def test_push_approximates_exact(dangling):
    P = random_graph(80, 0.04, 5, dangling)
    s = seed_vector(80, 6)
    exact = ppr_exact(P, s, 0.15)
    for eps, tol in ((1e-4, 5e-3), (1e-8, 1e-6)):
        approx = ppr_push(P, s, 0.15, eps=eps)
        assert np.all(approx <= exact + 1e-12)  # push never overshoots
        assert np.abs(approx - exact).sum() < tol


def test_matches_networkx_pagerank():
    P = random_graph(40, 0.1, 7)
    s = seed_vector(40, 8)
    G = nx.DiGraph()
    coo = P.tocoo()
    G.add_weighted_edges_from(
        zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True)
    )
    pr = nx.pagerank(G, alpha=0.85, personalization=dict(enumerate(s)), tol=1e-14, max_iter=1000)
    ours = ppr_exact(P, s, 0.15)
    np.testing.assert_allclose([pr[i] for i in range(40)], ours / ours.sum(), atol=1e-8)


def test_row_normalize_handles_empty_rows():
    W = sp.csr_matrix(np.array([[1.0, 3.0], [0.0, 0.0]]))
    assert row_normalize(W).toarray().tolist() == [[0.25, 0.75], [0.0, 0.0]]


def hub_graph(n: int, seed: int) -> sp.csr_matrix:
    """A random graph plus one hub linked both ways with every node (the case the degree rule
    skips)."""
    rng = np.random.default_rng(seed)
    W = sp.random(n, n, density=0.03, random_state=rng, format="lil")
    W[0, :] = 1.0
    W[:, 0] = 1.0
    return row_normalize(sp.csr_matrix(W))


@pytest.mark.parametrize("dangling", [False, True])
def test_local_power_with_eps_zero_is_power_iteration(dangling):
    P = random_graph(70, 0.05, 7, dangling)
    s = seed_vector(70, 8)
    for T in (1, 2, 5):
        want = ppr_power(sp.csr_matrix(P.T), s, 0.15, max_iter=T)
        np.testing.assert_allclose(ppr_power_local(P, s, 0.15, T, eps=0.0), want, atol=1e-15)
    block = np.stack([s, seed_vector(70, 9)], axis=1)  # a (nodes, queries) block
    want = ppr_power(sp.csr_matrix(P.T), block, 0.15, max_iter=5)
    np.testing.assert_allclose(ppr_power_local(P, block, 0.15, 5, eps=0.0), want, atol=1e-15)


def test_local_power_loses_mass_only_by_skipping_and_converges_as_eps_shrinks():
    P = hub_graph(300, 11)
    s = seed_vector(300, 12)
    exact = ppr_power(sp.csr_matrix(P.T), s, 0.15, max_iter=5)
    errors = []
    for eps in (1e-2, 1e-3, 1e-4, 1e-6, 1e-9):
        got = ppr_power_local(P, s, 0.15, 5, eps=eps)
        assert np.all(got <= exact + 1e-15)  # skipping only ever removes mass
        errors.append(np.abs(exact - got).sum())
    assert errors[0] > 0.01  # the hub (degree ~300) is skipped at eps = 1e-2: mass is lost
    assert all(a >= b for a, b in zip(errors, errors[1:], strict=False))
    assert errors[-1] < 1e-9
    with pytest.raises(ValueError, match="eps must be >= 0"):
        ppr_power_local(P, s, 0.15, 5, eps=-1.0)


def test_local_from_seed_entries_is_the_dense_local_solver():
    P = hub_graph(300, 13)
    s = seed_vector(300, 14)
    want = ppr_power_local(P, s, 0.15, 5, eps=1e-4)
    idx = np.flatnonzero(s)
    sup, val, whole = ppr_local(P, idx, s[idx], 0.15, 5, eps=1e-4)
    np.testing.assert_array_equal(whole, want)  # to the last bit
    np.testing.assert_array_equal(whole[sup], val)
    assert len(set(sup.tolist())) == len(sup)
    outside = np.ones(300, bool)
    outside[sup] = False
    assert not whole[outside].any()  # the nodes the steps never touched stay zero
    with pytest.raises(ValueError, match="eps must be >= 0"):
        ppr_local(P, idx, s[idx], 0.15, 5, eps=-1.0)
