"""LightGBM's tree ensembles scored in numpy, without importing lightgbm (issue 62).

``import lightgbm`` costs about 0.9 s (it imports scikit-learn and pandas when they are
installed), more than the rest of a ``hopgraph search``. The rankers hopgraph ships are
LightGBM models saved as its text dump; :class:`TreeEnsemble` parses that dump into flat arrays
and gives the scores of ``Booster.predict`` (the raw score: the sum of the trees' leaf values,
summed tree after tree as LightGBM does) and its SHAP values (``pred_contrib=True``, the path
dependent TreeSHAP that LightGBM computes), for every row of a matrix at once.

Its decisions are LightGBM's (``include/LightGBM/tree.h``): a value is compared as
``x <= threshold`` (left); NaN is read as 0 unless the split's missing type is NaN; a split's
missing values (NaN for missing type NaN, |x| <= 1e-35 for missing type Zero) go to its default
side; a categorical split sends a row left when its value, cast to int, is in the split's bitset
(negative values and NaN right). Input values within 1e-35 of 0 are read as 0, as LightGBM's
predictor does. Linear trees and objectives whose ``predict`` transforms the raw score are
refused. lightgbm itself is needed to train (the ``train`` extra), never to score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

ZERO = float(np.float32(1e-35))
"""LightGBM's kZeroThreshold (a float32 1e-35, compared in double)."""
RAW_OBJECTIVES = ("lambdarank", "rank_xendcg", "regression", "huber", "fair", "quantile", "mape")
"""Objectives whose ``predict`` is the raw score (no sigmoid, softmax or exp)."""
_CATEGORICAL, _DEFAULT_LEFT = 1, 2
_MISSING_ZERO, _MISSING_NAN = 1, 2


@dataclass
class _Tree:
    num_leaves: int
    split_feature: list[int]
    threshold: list[float]
    decision_type: list[int]
    left: list[int]  # LightGBM's encoding: >= 0 an internal node, ~leaf for a leaf
    right: list[int]
    leaf_value: list[float]
    leaf_count: list[int]
    internal_count: list[int]
    cat_boundaries: list[int]
    cat_threshold: list[int]

    def expected_value(self) -> float:
        """LightGBM's ``Tree::ExpectedValue``: the leaf values weighted by their data counts."""
        if self.num_leaves == 1:
            return self.leaf_value[0]
        total = float(self.internal_count[0])
        out = 0.0
        for value, count in zip(self.leaf_value, self.leaf_count, strict=True):
            out += (count / total) * value
        return out


def _parse_tree(block: dict[str, str]) -> _Tree:
    def ints(key: str) -> list[int]:
        return [int(v) for v in block.get(key, "").split()]

    def floats(key: str) -> list[float]:
        return [float(v) for v in block.get(key, "").split()]

    if block.get("is_linear", "0").strip() != "0":
        raise ValueError("linear trees are not supported")
    n = int(block["num_leaves"])
    tree = _Tree(
        n, ints("split_feature"), floats("threshold"), ints("decision_type"),
        ints("left_child"), ints("right_child"), floats("leaf_value"), ints("leaf_count"),
        ints("internal_count"), ints("cat_boundaries"), ints("cat_threshold"),
    )  # fmt: skip
    if len(tree.leaf_value) != n or any(
        len(a) != n - 1
        for a in (tree.split_feature, tree.threshold, tree.decision_type, tree.left, tree.right)
    ):
        raise ValueError(f"a tree of {n} leaves has arrays of the wrong length")
    if n > 1 and (len(tree.leaf_count) != n or len(tree.internal_count) != n - 1):
        raise ValueError("a tree lacks its data counts (leaf_count, internal_count)")
    return tree


def _parse(text: str) -> tuple[dict[str, str], list[_Tree]]:
    head: dict[str, str] = {}
    trees: list[_Tree] = []
    block: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("Tree="):
            if block is not None:
                trees.append(_parse_tree(block))
            block = {}
            continue
        if line.startswith("end of trees"):
            break
        if "=" not in line:
            continue
        key, value = line.split("=", 1)
        (head if block is None else block)[key] = value
    if block is not None:
        trees.append(_parse_tree(block))
    return head, trees


class TreeEnsemble:
    """A LightGBM model (its text dump, ``Booster.model_to_string()``) as numpy arrays.

    ``predict`` and ``contributions`` take a float matrix with one column per feature."""

    def __init__(self, model_str: str):
        if not isinstance(model_str, str) or not model_str.startswith("tree"):
            raise ValueError("not a LightGBM model (its text starts with 'tree')")
        head, trees = _parse(model_str)
        try:
            n_class = int(head.get("num_class", "1"))
            per_iter = int(head.get("num_tree_per_iteration", "1"))
            self.n_features = int(head["max_feature_idx"]) + 1
        except (KeyError, ValueError) as exc:
            raise ValueError(f"not a LightGBM model header ({exc})") from None
        objective = head.get("objective", "").split(" ")[0]
        if n_class != 1 or per_iter != 1:
            raise ValueError("only models of one tree per iteration are supported")
        if objective not in RAW_OBJECTIVES or "average_output" in head:
            raise ValueError(f"objective {objective!r}: only raw-score models are supported")
        if not trees:
            raise ValueError("the model has no trees")
        self._text = model_str
        self._trees = trees
        self._build(trees)
        self._shap: _ShapTables | None = None

    def model_to_string(self) -> str:
        """The model's text, as LightGBM wrote it."""
        return self._text

    def num_feature(self) -> int:
        return self.n_features

    def num_trees(self) -> int:
        return len(self._trees)

    def _build(self, trees: list[_Tree]) -> None:
        """Every tree's nodes in one set of arrays: internal nodes first (tree after tree),
        then the leaves; a leaf's children are itself, so a walk that reached it stays."""
        n_int = sum(t.num_leaves - 1 for t in trees)
        n_leaf = sum(t.num_leaves for t in trees)
        feat = np.zeros(n_int + n_leaf, np.intp)
        thr = np.full(n_int + n_leaf, np.inf)
        left = np.arange(n_int + n_leaf, dtype=np.intp)
        right = left.copy()
        dtype = np.zeros(n_int + n_leaf, np.int64)
        cat_bits: list[np.ndarray] = []  # per categorical node: its bitset as a bool array
        cat_node: list[int] = []
        roots, leaf_value = [], []
        i0, l0 = 0, n_int
        for t in trees:
            m = t.num_leaves - 1
            roots.append(i0 if m else l0)
            leaf_value.extend(t.leaf_value)
            for j in range(m):
                g = i0 + j
                feat[g], dtype[g] = t.split_feature[j], t.decision_type[j]
                left[g] = i0 + t.left[j] if t.left[j] >= 0 else l0 + ~t.left[j]
                right[g] = i0 + t.right[j] if t.right[j] >= 0 else l0 + ~t.right[j]
                if t.decision_type[j] & _CATEGORICAL:
                    k = int(t.threshold[j])
                    words = t.cat_threshold[t.cat_boundaries[k] : t.cat_boundaries[k + 1]]
                    bits = [(w >> b) & 1 for w in words for b in range(32)]
                    cat_bits.append(np.array(bits, bool))
                    cat_node.append(g)
                else:
                    thr[g] = t.threshold[j]
            i0 += m
            l0 += t.num_leaves
        if feat.max(initial=0) >= self.n_features:
            raise ValueError("a split names a feature past max_feature_idx")
        self.n_internal = n_int
        self.feature, self.threshold, self.left, self.right = feat, thr, left, right
        self.default_left = (dtype & _DEFAULT_LEFT) > 0
        self.missing = (dtype >> 2) & 3
        self.categorical = (dtype & _CATEGORICAL) > 0
        self.roots = np.asarray(roots, np.intp)
        self.leaf_value = np.asarray(leaf_value, np.float64)
        self.depth = max(_depth(t) for t in trees)
        self._cat_node = np.asarray(cat_node, np.intp)
        self._cat_bits = cat_bits
        self._simple = not (self.missing[:n_int].any() or self.categorical.any())
        self._child = np.stack([left, right], axis=1).ravel()  # node i: 2i left, 2i + 1 right

    def _matrix(self, X: Any) -> np.ndarray:
        X = np.array(X, dtype=np.float64, ndmin=2)  # a copy: it is changed below
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected {self.n_features} columns, got shape {X.shape}")
        X[np.abs(X) <= ZERO] = 0.0  # LightGBM's predictor reads these as 0 (NaN stays)
        return X

    def _go_left(self, X: np.ndarray, rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Whether row ``rows[i]`` goes left at internal node ``nodes[i]`` (same shapes)."""
        x = X[rows, self.feature[nodes]]
        if self._simple:  # numerical splits without missing types: NaN reads as 0
            return np.where(np.isnan(x), 0.0, x) <= self.threshold[nodes]
        mt = self.missing[nodes]
        nan = np.isnan(x)
        x0 = np.where(nan & (mt != _MISSING_NAN), 0.0, x)
        is_missing = ((mt == _MISSING_ZERO) & (np.abs(x0) <= ZERO)) | ((mt == _MISSING_NAN) & nan)
        out = np.where(is_missing, self.default_left[nodes], x0 <= self.threshold[nodes])
        cat = self.categorical[nodes]
        if cat.any():
            out[cat] = self._categorical_left(x[cat], nodes[cat])
        return out

    def _categorical_left(self, x: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """LightGBM's CategoricalDecision: the value cast to int in the split's bitset (NaN,
        negative values and values past int32 go right, as the cast gives INT_MIN there)."""
        out = np.zeros(len(x), bool)
        ok = np.isfinite(x) & (x > -1.0) & (x < 2.0**31)
        which = np.searchsorted(self._cat_node, nodes)
        for i in np.flatnonzero(ok):
            bits = self._cat_bits[which[i]]
            v = int(x[i])  # truncation toward 0, as C's cast
            out[i] = v < len(bits) and bool(bits[v])
        return out

    def leaves(self, X: Any) -> np.ndarray:
        """The leaf each row reaches in each tree: global leaf positions, shape (rows, trees)."""
        X = self._matrix(X)
        return self._leaves(X)

    def _leaves(self, X: np.ndarray) -> np.ndarray:
        if self._simple:
            return self._leaves_simple(X)
        n = len(X)
        node = np.broadcast_to(self.roots, (n, len(self.roots))).copy()
        rows = np.broadcast_to(np.arange(n)[:, None], node.shape)
        active = np.flatnonzero(node.ravel() < self.n_internal)
        flat, flat_rows = node.ravel(), rows.ravel()
        while len(active):  # one level of every unfinished walk at a time
            at = flat[active]
            nxt = np.where(self._go_left(X, flat_rows[active], at), self.left[at], self.right[at])
            flat[active] = nxt
            active = active[nxt < self.n_internal]
        return node - self.n_internal

    def _leaves_simple(self, X: np.ndarray) -> np.ndarray:
        """:meth:`_leaves` for numerical splits without missing types (NaN reads as 0): every
        walk takes ``depth`` steps (a leaf is its own child), each a few flat gathers."""
        n, F = X.shape
        Xf = np.where(np.isnan(X), 0.0, X).ravel()
        shape = (n, len(self.roots))
        base = np.broadcast_to((np.arange(n, dtype=np.intp) * F)[:, None], shape).ravel()
        node = np.broadcast_to(self.roots, shape).ravel()
        feat, thr, child = self.feature, self.threshold, self._child
        for _ in range(self.depth):  # np.take on flat arrays: 1-D gathers, the cheapest kind
            right = np.take(Xf, base + np.take(feat, node)) > np.take(thr, node)
            node = np.take(child, 2 * node + right)
        return (node - self.n_internal).reshape(shape)

    def predict(self, X: Any) -> np.ndarray:
        """``Booster.predict(X)``: each row's sum of leaf values, tree after tree."""
        X = self._matrix(X)
        if len(X) == 0:
            return np.zeros(0)
        values = self.leaf_value[self._leaves(X)]  # (rows, trees)
        # summed over axis 0 of the transposed copy: numpy adds the trees one after another,
        # in LightGBM's order, so the sums are LightGBM's to the last bit
        return np.ascontiguousarray(values.T).sum(axis=0)

    def contributions(self, X: Any) -> np.ndarray:
        """``Booster.predict(X, pred_contrib=True)``: each feature's SHAP value for each row
        (path dependent TreeSHAP), and in the last column the expected score."""
        X = self._matrix(X)
        if self._shap is None:
            self._shap = _ShapTables(self)
        return self._shap.values(self, X)


def _depth(t: _Tree) -> int:
    if t.num_leaves == 1:
        return 0
    best, stack = 0, [(0, 1)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        for child in (t.left[node], t.right[node]):
            if child >= 0:
                stack.append((child, d + 1))
    return best


class _ShapTables:
    """Each leaf's path as arrays, for TreeSHAP over all leaves at once.

    A leaf's share of a row's SHAP values depends on the distinct features ``D`` on its path:
    for each, ``z`` (the product of the data fractions of its splits on the path: how often
    the path is taken when the feature is unknown) and ``o`` (1 if the row follows all its
    splits on the path, else 0). The leaf's game is ``f(S) = v * prod(o_j, j in S) *
    prod(z_j, j not in S)``, and feature ``i``'s Shapley value in it is ``v * (o_i - z_i) *
    sum_s s!(d-1-s)!/d! * e_s``, ``e_s`` the coefficient of ``t**s`` in
    ``prod_{j != i}(z_j + o_j t)``: the value LightGBM's recursive TreeSHAP computes."""

    def __init__(self, model: TreeEnsemble):
        steps: list[list[tuple[int, bool, int]]] = []  # per leaf: (global node, left?, slot)
        slots: list[list[tuple[int, float]]] = []  # per leaf: (feature, z)
        i0 = 0
        expected = 0.0
        for t in model._trees:
            expected += t.expected_value()
            if t.num_leaves == 1:
                steps.append([])
                slots.append([])
            else:
                for path in _leaf_paths(t):
                    feats: dict[int, int] = {}
                    z: list[float] = []
                    leaf_steps = []
                    for node, went_left in path:
                        f = t.split_feature[node]
                        w = float(t.internal_count[node])
                        child = t.left[node] if went_left else t.right[node]
                        c = t.internal_count[child] if child >= 0 else t.leaf_count[~child]
                        if f not in feats:
                            feats[f] = len(z)
                            z.append(1.0)
                        z[feats[f]] *= c / w
                        leaf_steps.append((i0 + node, went_left, feats[f]))
                    steps.append(leaf_steps)
                    slots.append([(f, z[k]) for f, k in feats.items()])
            i0 += t.num_leaves - 1
        self.expected = expected
        n = len(steps)
        P = max((len(s) for s in steps), default=0)
        U = max((len(s) for s in slots), default=0)
        self.step_node = np.zeros((n, P), np.intp)
        self.step_left = np.ones((n, P), bool)
        self.step_slot = np.full((n, P), U, np.intp)  # slot U: the padding, dropped
        self.slot_feat = np.full((n, U), model.n_features, np.intp)  # column F: dropped
        self.slot_z = np.ones((n, U))
        self.d = np.zeros(n, np.intp)
        for i, (leaf_steps, leaf_slots) in enumerate(zip(steps, slots, strict=True)):
            for p, (node, went_left, slot) in enumerate(leaf_steps):
                self.step_node[i, p], self.step_left[i, p], self.step_slot[i, p] = (
                    node, went_left, slot,
                )  # fmt: skip
            for u, (f, z) in enumerate(leaf_slots):
                self.slot_feat[i, u], self.slot_z[i, u] = f, z
            self.d[i] = len(leaf_slots)
        self.U = U
        # W[i, s]: the Shapley weight of a coalition of s among leaf i's d - 1 other features
        self.W = np.zeros((n, max(U, 1)))
        for i, d in enumerate(self.d.tolist()):
            for s in range(d):
                self.W[i, s] = math.factorial(s) * math.factorial(d - 1 - s) / math.factorial(d)
        self.has_steps = self.step_node.shape[1] > 0

    def values(self, model: TreeEnsemble, X: np.ndarray) -> np.ndarray:
        R, F, U = len(X), model.n_features, self.U
        out = np.zeros((R, F + 1))
        if R == 0:
            return out
        out[:, F] = self.expected
        if U == 0:
            return out
        n = len(self.d)
        # o[r, i, u]: row r follows every split of leaf i's feature u on its path
        o = np.ones((R, n, U + 1), bool)
        if self.has_steps:
            nodes = np.arange(model.n_internal)
            rows = np.repeat(np.arange(R), len(nodes))
            go = model._go_left(X, rows, np.tile(nodes, R)).reshape(R, len(nodes))
            leaf_ix = np.arange(n)
            for p in range(self.step_node.shape[1]):
                ok = go[:, self.step_node[:, p]] == self.step_left[:, p]
                o[:, leaf_ix, self.step_slot[:, p]] &= ok
        # padding slots (feature column F) read o = 0, z = 1: a factor of 1
        o = o[:, :, :U] & (self.slot_feat < F)
        o = o.astype(np.float64)
        z = self.slot_z
        # C[s]: the coefficient of t**s in prod_u (z_u + o_u t), for each row and leaf
        C = np.zeros((U + 1, R, n))
        C[0] = 1.0
        for u in range(U):
            new = C[: u + 2] * z[:, u]
            new[1:] += C[: u + 1] * o[:, :, u]
            C[: u + 2] = new
        # sum_s W[s] * C[s]: what the features other than u weigh where o_u = 0 (then divided
        # by z_u); where o_u = 1, C is divided by (z_u + t) first (synthetic division)
        s_all = np.einsum("ns,srn->rn", self.W[:, :U], C[:U])
        phi = np.zeros((R, n, U))
        for u in range(U):
            zu, ou = z[:, u], o[:, :, u]
            q = C[U]  # the coefficient of t**(k-1) of the quotient, k from U down
            s_div = np.zeros((R, n))
            for k in range(U, 0, -1):
                s_div += self.W[:, k - 1] * q
                q = C[k - 1] - zu * q
            s_scale = np.divide(s_all, zu, out=np.zeros_like(s_all), where=zu > 0)
            phi[:, :, u] = (ou - zu) * np.where(ou > 0, s_div, s_scale)
        phi *= model.leaf_value[:, None]
        cols = self.slot_feat.ravel()
        flat = phi.reshape(R, n * U)
        for r in range(R):
            out[r, :F] += np.bincount(cols, weights=flat[r], minlength=F + 1)[:F]
        return out


def _leaf_paths(t: _Tree) -> list[list[tuple[int, bool]]]:
    """Each leaf's path from the root, in leaf order: (node, went left) per split."""
    paths: list[list[tuple[int, bool]]] = [[] for _ in range(t.num_leaves)]
    stack: list[tuple[int, list[tuple[int, bool]]]] = [(0, [])]
    while stack:
        node, path = stack.pop()
        for child, went_left in ((t.left[node], True), (t.right[node], False)):
            step = [*path, (node, went_left)]
            if child >= 0:
                stack.append((child, step))
            else:
                paths[~child] = step
    return paths
