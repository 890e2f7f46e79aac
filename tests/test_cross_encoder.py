"""Cross-encoders: the encoder/head split of each supported family equals the model's own
logits, on tiny models built here (no pretrained cross-encoder exists offline)."""

from __future__ import annotations

import numpy as np
import pytest

from hopgraph.errors import ConfigError
from hopgraph.models.cross_encoder import CrossEncoder

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

QUERY = "Who founded the city on the Velmora river?"
PASSAGES = [
    "Quellhaven lies on the Velmora river.",
    "Ada Vell was born in Quellhaven, a city she later governed for twenty years.",
    "short",
    "A much longer passage " * 20,
]


def _tokenizer(tmp_path, *, with_types: bool = True):
    from transformers import AutoTokenizer

    from hopgraph.models.embedder import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("all-MiniLM-L6-v2"))
    if not with_types:
        tok.model_input_names = ["input_ids", "attention_mask"]
    return tok


def _tiny(kind: str, num_labels: int = 1):
    from transformers import AutoConfig, AutoModelForSequenceClassification

    common = dict(vocab_size=30522, num_labels=num_labels)
    if kind == "distilbert":
        cfg = AutoConfig.for_model(kind, dim=32, hidden_dim=64, n_layers=2, n_heads=2, **common)
    else:
        cfg = AutoConfig.for_model(
            kind,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=520,
            type_vocab_size=2,
            pad_token_id=0,
            **({"embedding_size": 32} if kind == "electra" else {}),
            **common,
        )
    torch.manual_seed(0)
    return AutoModelForSequenceClassification.from_config(cfg).eval()


def _save(tmp_path, kind: str, num_labels: int = 1):
    folder = tmp_path / f"{kind}-{num_labels}"
    _tiny(kind, num_labels).save_pretrained(folder)
    _tokenizer(tmp_path, with_types=kind != "distilbert").save_pretrained(folder)
    return folder


@pytest.mark.parametrize("kind", ["bert", "roberta", "electra", "deberta-v2", "distilbert"])
def test_split_equals_the_models_logits(tmp_path, kind):
    ce = CrossEncoder(str(_save(tmp_path, kind)), max_length=64, batch_size=3)
    h = ce.represent(QUERY, PASSAGES)
    assert h.shape == (len(PASSAGES), ce.dim)
    np.testing.assert_allclose(ce.head(h), ce.full_scores(QUERY, PASSAGES), atol=1e-4)
    # length-sorted batches come back in input order: each pair alone gives the same vector
    for i, p in enumerate(PASSAGES):
        np.testing.assert_allclose(ce.represent(QUERY, [p])[0], h[i], atol=1e-4)


def test_two_label_models_score_the_log_odds(tmp_path):
    folder = _save(tmp_path, "bert", num_labels=2)
    ce = CrossEncoder(str(folder), max_length=64)
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    enc = AutoTokenizer.from_pretrained(folder)(
        [QUERY] * 2, PASSAGES[:2], truncation=True, max_length=64, padding=True,
        return_tensors="pt",
    )  # fmt: skip
    with torch.inference_mode():
        logits = model(**enc).logits.numpy()
    # a difference of two nearly equal float32 logits: compare absolutely (padding to other
    # lengths moves it by ~1e-6), well below the logits' own size
    want = logits[:, 1] - logits[:, 0]
    np.testing.assert_allclose(ce.score(QUERY, PASSAGES[:2]), want, rtol=0, atol=1e-5)


def test_load_errors_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="cannot load cross-encoder"):
        CrossEncoder(str(tmp_path / "missing"))
    from transformers import GPT2Config, GPT2ForSequenceClassification

    folder = tmp_path / "gpt2"
    cfg = GPT2Config(n_embd=32, n_layer=1, n_head=2, num_labels=1, pad_token_id=0)
    GPT2ForSequenceClassification(cfg).save_pretrained(folder)
    _tokenizer(tmp_path).save_pretrained(folder)
    with pytest.raises(ConfigError, match="not supported"):
        CrossEncoder(str(folder))


def test_empty_and_max_length(tmp_path):
    ce = CrossEncoder(str(_save(tmp_path, "bert")), max_length=16)
    assert ce.represent(QUERY, []).shape == (0, ce.dim)
    assert ce.head(np.zeros((0, ce.dim))).shape == (0,)
    assert ce.max_length == 16
    enc = ce.tokenizer([QUERY], [PASSAGES[3]], truncation=True, max_length=ce.max_length)
    assert len(enc["input_ids"][0]) == 16
