"""GraphER's GAT ranker: GATv2 against torch_geometric, batching, ablation, saving, learning."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

import hopgraph.models.gat as gat_module  # noqa: E402
from hopgraph.errors import ConfigError  # noqa: E402
from hopgraph.models.gat import (  # noqa: E402
    CONFIG_FILE,
    WEIGHTS_FILE,
    DenseGATv2,
    GATRanker,
    load_ranker,
    node_features,
    save_ranker,
)


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread: these tensors are tiny, and on a busy 2-core machine OpenMP's
    second thread makes every op many times slower, not faster."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def random_adj(n: int, p: float, gen: torch.Generator) -> torch.Tensor:
    """A random directed boolean adjacency, no self loops."""
    adj = torch.rand(n, n, generator=gen) < p
    adj.fill_diagonal_(False)
    return adj


# -- numerical equivalence with torch_geometric ----------------------------------------------


def copy_from_pyg(ref, heads: int, out: int, concat: bool) -> DenseGATv2:
    layer = DenseGATv2(ref.in_channels, out, heads=heads, concat=concat)
    with torch.no_grad():
        layer.lin_l.weight.copy_(ref.lin_l.weight)
        layer.lin_l.bias.copy_(ref.lin_l.bias)
        layer.lin_r.weight.copy_(ref.lin_r.weight)
        layer.lin_r.bias.copy_(ref.lin_r.bias)
        layer.att.copy_(ref.att.view(heads, out))
        layer.bias.copy_(ref.bias)
    return layer


@pytest.mark.parametrize("concat", [True, False])
@pytest.mark.parametrize("heads,out", [(1, 8), (3, 5), (4, 16)])
def test_matches_torch_geometric_gatv2conv(concat: bool, heads: int, out: int, monkeypatch) -> None:
    pytest.importorskip("torch_geometric")
    from torch_geometric.nn import GATv2Conv

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(heads * 10 + out)
    in_dim = 7
    ref = GATv2Conv(
        in_dim, out, heads=heads, concat=concat, add_self_loops=True, share_weights=False
    )
    with torch.no_grad():  # non-zero biases, so that they are checked too
        for b in (ref.lin_l.bias, ref.lin_r.bias, ref.bias):
            b.normal_(generator=gen)
    layer = copy_from_pyg(ref, heads, out, concat)
    for n, p in [(1, 0.0), (2, 1.0), (13, 0.3), (40, 0.1), (60, 0.5)]:
        x = torch.randn(n, in_dim, generator=gen) * 2
        adj = random_adj(n, p, gen)
        if n > 2:
            adj[n // 2, :] = False  # a node with no neighbours ...
            adj[:, n // 2] = False  # ... that nobody hears from either
        edge_index = adj.nonzero().t().flip(0)  # rows: (target i, source j) -> (j, i)
        want = ref(x, edge_index)
        # Pairs are built a block of receivers at a time: one block (plain autograd when
        # training), blocks of 7 rows with a shorter last one, and one row per block.
        for block in (1 << 30, 7 * heads * out * n, 1):
            monkeypatch.setattr(gat_module, "_BLOCK_ELEMENTS", block)
            for grad in (True, False):
                with torch.set_grad_enabled(grad):
                    got = layer(x, adj)
                assert got.shape == want.shape == (n, heads * out if concat else out)
                torch.testing.assert_close(got, want.detach(), atol=1e-5, rtol=1e-5)
        monkeypatch.undo()
        # Self loops already in adj count once, as GATv2Conv removes and re-adds them.
        with_loops = adj.clone()
        with_loops.fill_diagonal_(True)
        torch.testing.assert_close(layer(x, with_loops), want, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(
            ref(x, with_loops.nonzero().t().flip(0)), want, atol=1e-5, rtol=1e-5
        )


def test_blocked_backward_matches_autograd(monkeypatch) -> None:
    """Past one block, training uses a hand-written backward: same values, same gradients."""
    torch.manual_seed(9)
    layer = DenseGATv2(6, 5, heads=3, negative_slope=0.3)
    with torch.no_grad():
        for b in (layer.lin_l.bias, layer.lin_r.bias, layer.bias):
            b.normal_()
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(2, 23, 6, generator=gen)
    adj = torch.rand(2, 23, 23, generator=gen) < 0.3
    mask = torch.ones(2, 23, dtype=torch.bool)
    mask[1, 17:] = False
    weight = torch.randn(2, 23, 15, generator=gen)

    def run(block: int):
        monkeypatch.setattr(gat_module, "_BLOCK_ELEMENTS", block)
        layer.zero_grad()
        xg = x.clone().requires_grad_()
        out = layer(xg, adj, mask)
        (out * weight).sum().backward()
        grads = {k: p.grad.clone() for k, p in layer.named_parameters()}
        return out.detach(), xg.grad, grads

    want = run(1 << 30)  # one block: plain autograd
    for block in (4 * 3 * 5 * 23, 1):  # several blocks, then one receiver per block
        got = run(block)
        torch.testing.assert_close(got[0], want[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got[1], want[1], atol=1e-5, rtol=1e-5)
        for k in want[2]:
            torch.testing.assert_close(got[2][k], want[2][k], atol=1e-5, rtol=1e-5, msg=k)


def test_blocked_logits_gradcheck(monkeypatch) -> None:
    monkeypatch.setattr(gat_module, "_BLOCK_ELEMENTS", 50)
    gen = torch.Generator().manual_seed(10)
    xr, xl = (torch.randn(2, 3, 4, 7, generator=gen, dtype=torch.double) for _ in range(2))
    att = torch.randn(3, 4, generator=gen, dtype=torch.double)
    args = tuple(t.requires_grad_() for t in (xr, xl, att))
    assert torch.autograd.gradcheck(
        lambda a, b, c: gat_module._PairLogits.apply(a, b, c, 0.2), args
    )


def test_isolated_node_only_sees_itself() -> None:
    torch.manual_seed(1)
    layer = DenseGATv2(5, 4, heads=2)
    x = torch.randn(6, 5)
    adj = torch.ones(6, 6, dtype=torch.bool)
    adj[2, :] = False
    out = layer(x, adj)
    alone = layer(x[2:3], torch.zeros(1, 1, dtype=torch.bool))
    torch.testing.assert_close(out[2], alone[0])
    # And its output is lin_l(x) + bias: attention over a single sender is 1.
    torch.testing.assert_close(out[2], layer.lin_l(x[2]) + layer.bias)


def test_edge_direction_is_j_to_i() -> None:
    torch.manual_seed(2)
    layer = DenseGATv2(3, 4, heads=2)
    x = torch.randn(2, 3)
    adj = torch.tensor([[False, True], [False, False]])  # 1 -> 0 only
    out = layer(x, adj)
    x2 = x.clone()
    x2[0] += 5.0
    out2 = layer(x2, adj)
    torch.testing.assert_close(out[1], out2[1])  # node 1 hears nothing from node 0
    assert not torch.allclose(layer(x, adj)[0], layer(x, torch.zeros(2, 2, dtype=torch.bool))[0])


def test_adj_none_equals_identity_and_nonbool_adj() -> None:
    torch.manual_seed(3)
    layer = DenseGATv2(4, 3, heads=3, concat=False)
    x = torch.randn(9, 4)
    torch.testing.assert_close(layer(x, None), layer(x, torch.eye(9, dtype=torch.bool)))
    adj = random_adj(9, 0.4, torch.Generator().manual_seed(0))
    torch.testing.assert_close(layer(x, adj.float()), layer(x, adj))


def test_shape_errors() -> None:
    layer = DenseGATv2(4, 3, heads=2)
    with pytest.raises(ValueError):
        layer(torch.randn(5, 3), torch.zeros(5, 5, dtype=torch.bool))
    with pytest.raises(ValueError):
        layer(torch.randn(5, 4), torch.zeros(4, 4, dtype=torch.bool))
    with pytest.raises(ValueError):
        layer(torch.randn(2, 5, 4), torch.zeros(2, 5, 5, dtype=torch.bool), torch.ones(2, 4))
    with pytest.raises(ValueError, match="negative_slope"):
        DenseGATv2(4, 3, negative_slope=-0.1)
    with pytest.raises(ValueError, match="needs an adjacency"):
        GATRanker(4, hidden=8, heads=2)(torch.randn(5, 4))


# -- batching with padding -------------------------------------------------------------------


def padded_batch(sizes: list[int], d: int, gen: torch.Generator):
    n = max(sizes)
    xs = [torch.randn(s, d, generator=gen) for s in sizes]
    adjs = [random_adj(s, 0.3, gen) for s in sizes]
    # Padding full of garbage: huge values, nan, and edges to and from padded nodes.
    x = torch.full((len(sizes), n, d), float("nan"))
    x[:, :, 0] = 1e6
    adj = torch.ones(len(sizes), n, n, dtype=torch.bool)
    mask = torch.zeros(len(sizes), n, dtype=torch.bool)
    for k, s in enumerate(sizes):
        x[k, :s] = xs[k]
        adj[k, :s, :s] = adjs[k]
        mask[k, :s] = True
    return xs, adjs, x, adj, mask


@pytest.mark.parametrize("grad", [True, False])
def test_batched_padded_forward_equals_per_graph(grad: bool) -> None:
    torch.manual_seed(4)
    gen = torch.Generator().manual_seed(4)
    sizes = [7, 12, 1, 12, 3]
    xs, adjs, x, adj, mask = padded_batch(sizes, 6, gen)
    layer = DenseGATv2(6, 5, heads=3)
    model = GATRanker(6, hidden=12, heads=3, layers=3, fc_hidden=8)
    with torch.set_grad_enabled(grad):
        out = layer(x, adj, mask)
        scores = model(x, adj, mask)
        assert out.shape == (5, 12, 15) and scores.shape == (5, 12)
        assert torch.isfinite(out).all() and torch.isfinite(scores).all()
        for k, s in enumerate(sizes):
            torch.testing.assert_close(out[k, :s], layer(xs[k], adjs[k]), atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(out[k, s:], torch.zeros_like(out[k, s:]))
            torch.testing.assert_close(scores[k, :s], model(xs[k], adjs[k]), atol=1e-5, rtol=1e-5)
            assert (scores[k, s:] == 0).all()


def test_padded_rows_do_not_affect_real_nodes() -> None:
    torch.manual_seed(5)
    gen = torch.Generator().manual_seed(5)
    _, _, x, adj, mask = padded_batch([4, 9], 6, gen)
    model = GATRanker(6, hidden=8, heads=2, layers=2, fc_hidden=4)
    base = model(x, adj, mask)
    x2, adj2 = x.clone(), adj.clone()
    x2[0, 4:] = torch.randn(5, 6, generator=gen) * 100
    adj2[0, :, 4:] = torch.rand(9, 5, generator=gen) < 0.5
    adj2[0, 4:, :] = torch.rand(5, 9, generator=gen) < 0.5
    after = model(x2, adj2, mask)
    torch.testing.assert_close(after, base)
    # And gradients do not flow into padded inputs.
    xg = x2.clone().requires_grad_()
    model(xg, adj2, mask)[mask].sum().backward()
    assert (xg.grad[0, 4:] == 0).all() and (xg.grad[0, :4] != 0).any()


def test_batched_shared_adjacency() -> None:
    torch.manual_seed(6)
    layer = DenseGATv2(3, 2, heads=2)
    x = torch.randn(4, 8, 3)
    adj = random_adj(8, 0.4, torch.Generator().manual_seed(6))
    torch.testing.assert_close(layer(x, adj), layer(x, adj.expand(4, 8, 8)))


# -- GraphER-MLP ablation --------------------------------------------------------------------


def test_no_message_passing_ignores_the_graph() -> None:
    torch.manual_seed(7)
    gen = torch.Generator().manual_seed(7)
    mlp = GATRanker(10, hidden=16, heads=4, layers=5, fc_hidden=8, message_passing=False)
    gat = GATRanker(10, hidden=16, heads=4, layers=5, fc_hidden=8)
    # Same layers and parameters: the ablation changes only the adjacency.
    assert [(k, v.shape) for k, v in mlp.state_dict().items()] == [
        (k, v.shape) for k, v in gat.state_dict().items()
    ]
    x = torch.randn(20, 10, generator=gen)
    outs = [mlp(x, random_adj(20, p, gen)) for p in (0.0, 0.2, 0.9)]
    outs.append(mlp(x, None))
    for o in outs[1:]:
        torch.testing.assert_close(o, outs[0])
    # ... and equals the full model on a graph with no edges.
    gat.load_state_dict(mlp.state_dict())
    torch.testing.assert_close(gat(x, torch.zeros(20, 20, dtype=torch.bool)), outs[0])
    # Whereas the message-passing model does react to the graph.
    a, b = random_adj(20, 0.3, gen), random_adj(20, 0.3, gen)
    assert not torch.allclose(gat(x, a), gat(x, b))
    # A single node's score depends on itself only.
    torch.testing.assert_close(mlp(x[3:4], None)[0], outs[0][3])


# -- construction, features -------------------------------------------------------------------


def test_architecture_and_config() -> None:
    model = GATRanker(769)
    assert len(model.gat) == 5
    assert [layer.out_features for layer in model.gat] == [64] * 5
    assert model.gat[0].in_dim == 769 and model.gat[0].heads == 4 and model.gat[0].out_dim == 16
    assert (model.fc1.in_features, model.fc1.out_features) == (64, 32)
    assert (model.fc2.in_features, model.fc2.out_features) == (32, 1)
    again = GATRanker(**model.config)
    assert again.config == model.config
    assert model(torch.randn(3, 769), torch.zeros(3, 3, dtype=torch.bool)).shape == (3,)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"in_dim": 0},
        {"in_dim": 4, "hidden": 10, "heads": 4},
        {"in_dim": 4, "layers": 0},
        {"in_dim": 4, "dropout": 1.0},
        {"in_dim": 4, "message_passing": "yes"},
        {"in_dim": 4.5},
    ],
)
def test_bad_constructor_args(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        GATRanker(**kwargs)


def test_node_features() -> None:
    gcs = torch.tensor([0.5, 0.25])
    q = torch.tensor([1.0, 2.0, 3.0])
    objs = torch.arange(6.0).view(2, 3)
    feats = node_features(gcs, q, objs)
    assert feats.shape == (2, 7)
    torch.testing.assert_close(feats[1], torch.tensor([0.25, 1.0, 2.0, 3.0, 3.0, 4.0, 5.0]))
    with pytest.raises(ValueError):
        node_features(gcs, q, objs[:1])


# -- saving and loading ----------------------------------------------------------------------


def test_save_load_round_trip(tmp_path) -> None:
    torch.manual_seed(8)
    model = GATRanker(9, hidden=8, heads=2, layers=3, fc_hidden=4, dropout=0.1)
    extra = {"features": "gcs + query + object (MiniLM-L6, 384)", "epochs": 3, "loss": 0.25}
    folder = save_ranker(model, tmp_path / "ranker", extra)
    assert sorted(p.name for p in folder.iterdir()) == [CONFIG_FILE, WEIGHTS_FILE]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left
    config = json.loads((folder / CONFIG_FILE).read_text())
    assert config["model"] == model.config and config["extra"] == extra
    loaded, got_extra = load_ranker(folder)
    assert got_extra == extra and loaded.config == model.config
    assert not loaded.training
    model.eval()
    x = torch.randn(11, 9)
    adj = random_adj(11, 0.3, torch.Generator().manual_seed(8))
    assert torch.equal(loaded(x, adj), model(x, adj))


def test_save_refuses_non_empty_folder_unless_overwrite(tmp_path) -> None:
    a = GATRanker(4, hidden=4, heads=2, layers=1, fc_hidden=2)
    b = GATRanker(4, hidden=8, heads=2, layers=2, fc_hidden=2)
    (tmp_path / "empty").mkdir()
    save_ranker(a, tmp_path / "empty", {})  # an empty folder is fine
    with pytest.raises(ConfigError, match="not empty"):
        save_ranker(b, tmp_path / "empty", {"v": 2})
    assert load_ranker(tmp_path / "empty")[0].config == a.config  # untouched
    save_ranker(b, tmp_path / "empty", {"v": 2}, overwrite=True)
    model, extra = load_ranker(tmp_path / "empty")
    assert model.config == b.config and extra == {"v": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]
    with pytest.raises(ConfigError, match="JSON"):
        save_ranker(a, tmp_path / "bad", {"x": object()})
    assert not (tmp_path / "bad").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError):
        save_ranker(a, tmp_path / "file", {}, overwrite=True)


def _corrupt(folder, what: str) -> None:
    cfg = folder / CONFIG_FILE
    if what == "no config":
        cfg.unlink()
    elif what == "no weights":
        (folder / WEIGHTS_FILE).unlink()
    elif what == "bad json":
        cfg.write_text("{not json")
    elif what == "wrong format":
        cfg.write_text(json.dumps({"format": "something else"}))
    elif what == "newer format":
        data = json.loads(cfg.read_text())
        data["format_version"] = 99
        cfg.write_text(json.dumps(data))
    elif what in ("config mismatch", "bad arg", "unknown arg"):
        data = json.loads(cfg.read_text())
        if what == "config mismatch":
            data["model"]["hidden"] = 16
        elif what == "bad arg":
            data["model"]["heads"] = 3
        else:
            data["model"]["colour"] = "red"
        cfg.write_text(json.dumps(data))
    elif what == "truncated weights":
        w = folder / WEIGHTS_FILE
        w.write_bytes(w.read_bytes()[:100])
    elif what == "garbage weights":
        (folder / WEIGHTS_FILE).write_bytes(b"\x00garbage" * 50)
    elif what == "pickled object":
        torch.save({"lin": torch.nn.Linear(2, 2)}, folder / WEIGHTS_FILE)
    elif what == "missing key":
        state = torch.load(folder / WEIGHTS_FILE, weights_only=True)
        state.pop("fc2.bias")
        torch.save(state, folder / WEIGHTS_FILE)
    else:  # pragma: no cover
        raise AssertionError(what)


@pytest.mark.parametrize(
    "what",
    [
        "no config",
        "no weights",
        "bad json",
        "wrong format",
        "newer format",
        "config mismatch",
        "bad arg",
        "unknown arg",
        "truncated weights",
        "garbage weights",
        "pickled object",
        "missing key",
    ],
)
def test_load_corrupt_folder_raises_config_error(tmp_path, what: str) -> None:
    folder = save_ranker(GATRanker(4, hidden=8, heads=2, layers=2, fc_hidden=4), tmp_path / "m")
    _corrupt(folder, what)
    with pytest.raises(ConfigError) as info:
        load_ranker(folder)
    assert str(folder) in str(info.value)


def test_load_missing_folder(tmp_path) -> None:
    with pytest.raises(ConfigError, match="no GAT ranker folder"):
        load_ranker(tmp_path / "nope")


# -- it learns what needs the graph ----------------------------------------------------------


def neighbour_task(gen: torch.Generator, b: int, n: int = 16, d: int = 4, p: float = 0.09):
    """Padded random graphs; a node is positive iff a neighbour has feature[0] > 0.5."""
    x = torch.rand(b, n, d, generator=gen)
    upper = torch.triu(torch.rand(b, n, n, generator=gen) < p, diagonal=1)
    adj = upper | upper.transpose(1, 2)
    sizes = torch.randint(n // 2, n + 1, (b,), generator=gen)
    mask = torch.arange(n)[None] < sizes[:, None]
    adj &= mask[:, :, None] & mask[:, None, :]
    hot = (x[..., 0] > 0.5) & mask
    y = (adj & hot[:, None, :]).any(-1)
    return x, adj, mask, y.float()


def train_and_score(message_passing: bool) -> tuple[float, float]:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = GATRanker(
        4, hidden=32, heads=4, layers=3, fc_hidden=16, message_passing=message_passing
    )
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(300):
        x, adj, mask, y = neighbour_task(gen, 16)
        loss = F.binary_cross_entropy_with_logits(model(x, adj, mask)[mask], y[mask])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    x, adj, mask, y = neighbour_task(torch.Generator().manual_seed(2), 256)
    with torch.inference_mode():
        pred = model(x, adj, mask)[mask] > 0
    acc = (pred == y[mask].bool()).float().mean().item()
    base = max(y[mask].mean().item(), 1 - y[mask].mean().item())
    return acc, base


def test_message_passing_learns_a_neighbour_property() -> None:
    gat_acc, base = train_and_score(True)  # one thread (fixture): about 3 s
    mlp_acc, _ = train_and_score(False)
    # The label is not computable from the node alone: the MLP cannot beat the majority
    # class by much, the GAT must.
    assert mlp_acc < base + 0.05, (mlp_acc, base)
    assert gat_acc > 0.75, (gat_acc, mlp_acc, base)
    assert gat_acc > mlp_acc + 0.15, (gat_acc, mlp_acc, base)


def test_residual_adds_a_learnable_multiple_of_the_gcs_score(tmp_path):
    torch.manual_seed(0)
    m = GATRanker(6, hidden=8, heads=2, layers=2, fc_hidden=4, residual=3.0)
    with torch.no_grad():
        m.fc2.weight.zero_()
        m.fc2.bias.zero_()
    x = torch.randn(7, 6)
    adj = torch.rand(7, 7) < 0.3
    assert torch.allclose(m(x, adj), 3.0 * x[:, 0])
    assert m.skip.requires_grad
    save_ranker(m, tmp_path / "r")
    back, _ = load_ranker(tmp_path / "r")
    assert back.config["residual"] == 3.0 and torch.allclose(back(x, adj), m(x, adj))
    assert GATRanker(6, hidden=8, heads=2, layers=2).skip is None  # the paper's model
