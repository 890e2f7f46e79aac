"""The passage student: distilled from a teacher (a tiny one built here, and the bundled one),
saved and applied, chosen by large builds, recorded in the index and used again by updates."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hopgraph.config import make_options
from hopgraph.errors import ConfigError
from hopgraph.index import dense_options
from hopgraph.index.dense_options import DenseOptions
from hopgraph.models import load_embedder
from hopgraph.models.student import (
    BUNDLED_STUDENT,
    apply_student,
    check_teacher,
    cut_layers,
    save_student,
    student_meta,
)

torch = pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def tiny_teacher(tmp_path_factory) -> str:
    """A 4-layer, 32-wide BERT with MiniLM's tokenizer, as a sentence-transformers folder."""
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel

    from hopgraph.models.resolve import resolve_model

    root = tmp_path_factory.mktemp("teacher")
    tok = AutoTokenizer.from_pretrained(resolve_model("all-minilm-l6-v2"))
    config = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        initializer_range=0.5,  # large weights: each layer moves the vectors, cutting one costs
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(root / "hf")
    tok.save_pretrained(root / "hf")
    st = SentenceTransformer(
        modules=[
            models.Transformer(str(root / "hf")),
            models.Pooling(32, "mean"),
            models.Normalize(),
        ]  # fmt: skip
    )
    st.save(str(root / "st"))
    return str(root / "st")


def _distil(teacher: str, texts: list[str]):
    from hopgraph.training.student import StudentConfig, distil_student

    config = StudentConfig(teacher=teacher, layers=(0, 3), epochs=8, lr=1e-3, batch_size=8)
    return config, distil_student(texts[:32], texts[32:], config, progress=False)


def test_distilling_brings_the_student_to_its_teacher_and_repeats_bit_for_bit(
    tiny_teacher, demo_dataset, tmp_path
):
    from hopgraph.training.student import cosine_to_teacher, student_card

    texts = [p.content for p in demo_dataset.corpus]
    config, first = _distil(tiny_teacher, texts)
    _, again = _distil(tiny_teacher, texts)
    a, b = first.model.state_dict(), again.model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # before training: the teacher's layers 0 and 3 alone, against the teacher
    from transformers import AutoModel, AutoTokenizer

    teacher = AutoModel.from_pretrained(tiny_teacher).eval()
    tok = AutoTokenizer.from_pretrained(tiny_teacher)
    cut = AutoModel.from_pretrained(tiny_teacher).eval()
    cut_layers(cut, (0, 3))
    before = cosine_to_teacher(cut, teacher, tok, texts[32:], config).mean()
    after = first.validation["val_cos_mean"]
    assert after > before + 0.15, (before, after)
    assert len(first.model.encoder.layer) == 2
    # saved (bf16 layers + card), applied to the teacher through the Embedder
    folder = save_student(tmp_path / "student", first.model, student_card(first, config, []))
    assert student_meta(folder)["config"]["layers"] == [0, 3]
    emb = load_embedder(tiny_teacher, backend="torch", precision="fp32", student=str(folder))
    layers = emb._model[0].auto_model.encoder.layer
    assert len(layers) == 2
    for name, t in layers.state_dict().items():
        want = first.model.encoder.layer.state_dict()[name].to(torch.bfloat16).float()
        assert torch.equal(t, want), name
    full = load_embedder(tiny_teacher, backend="torch", precision="fp32")
    s, t = emb.encode(texts[32:]), full.encode(texts[32:])
    assert np.mean(np.sum(s * t, axis=1)) > before + 0.1 and not np.allclose(s, t)


def test_a_student_reading_fewer_tokens_learns_the_teachers_vector_of_the_whole_text(
    tiny_teacher, demo_dataset
):
    """The hop encoder's student (issue 63): it reads a text's first 16 tokens and is trained
    towards the vector its teacher gives for the first 128."""
    from transformers import AutoModel, AutoTokenizer

    from hopgraph.training.hop_encoder import distil_hop_student
    from hopgraph.training.student import StudentConfig, cosine_to_teacher

    texts = [f"{p.title} [SEP] {p.content}" for p in demo_dataset.corpus]
    teacher = AutoModel.from_pretrained(tiny_teacher).eval()
    tok = AutoTokenizer.from_pretrained(tiny_teacher)
    assert max(len(tok(t)["input_ids"]) for t in texts) > 40  # the cut loses words
    config = StudentConfig(teacher=tiny_teacher, layers=(0, 3), max_seq_length=16,
                           teacher_max_seq_length=128)  # fmt: skip
    cut = AutoModel.from_pretrained(tiny_teacher).eval()
    cut_layers(cut, (0, 3))
    val = texts[::20]
    before = cosine_to_teacher(cut, teacher, tok, val, config).mean()
    st, record = distil_hop_student(
        texts * 3, tiny_teacher, layers=(0, 3), max_len=16, teacher_len=128, epochs=4,
        progress=False,
    )  # fmt: skip
    assert st.max_seq_length == 16 and len(st[0].auto_model.encoder.layer) == 2
    assert record["train_texts"] + record["validation_texts"] == 3 * len(texts)
    whole = cosine_to_teacher(st[0].auto_model, teacher, tok, val, config)
    assert whole.mean() > before + 0.1, (before, whole.mean())
    # against the teacher reading the whole text, not the student's 16 tokens
    same = cosine_to_teacher(st[0].auto_model, teacher, tok, val,
                             StudentConfig(teacher=tiny_teacher, max_seq_length=16))  # fmt: skip
    assert not np.allclose(whole, same)
    with pytest.raises(ConfigError):
        StudentConfig(max_seq_length=64, teacher_max_seq_length=32).validate()


def test_a_student_refuses_another_teacher_and_malformed_folders(tiny_teacher, tmp_path):
    with pytest.raises(ConfigError, match="distilled from"):
        check_teacher(BUNDLED_STUDENT, tiny_teacher)
    with pytest.raises(ConfigError, match="not a passage student folder"):
        student_meta(tmp_path)
    with pytest.raises(ConfigError, match="distilled from"):
        load_embedder(tiny_teacher, backend="onnx", student=str(BUNDLED_STUDENT))
    from transformers import AutoModel

    from hopgraph.models.resolve import resolve_model

    model = AutoModel.from_pretrained(tiny_teacher)
    with pytest.raises(ConfigError, match="no layer"):
        cut_layers(model, (0, 7))
    with pytest.raises(ConfigError, match=r"no layer \[5\]"):  # the bundled one: 6 layers
        apply_student(model, BUNDLED_STUDENT)
    cut_layers(model, (0, 3))
    card = {"config": {"layers": [0, 1], "teacher": tiny_teacher}}
    tiny_student = save_student(tmp_path / "tiny", model, card)
    minilm = AutoModel.from_pretrained(resolve_model("all-minilm-l6-v2"))
    with pytest.raises(ConfigError, match="does not fit"):  # 32-wide layers into 384-wide
        apply_student(minilm, tiny_student)


def test_a_student_of_another_teacher_runs_in_onnx_runtime_as_in_pytorch(
    tiny_teacher, demo_dataset, tmp_path
):
    """The composed export of a 2-of-4-layer student of a 32-wide teacher (its export made
    from PyTorch here): the last two layers cut, the student's weights in the first two."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(tiny_teacher)
    cut_layers(model, (1, 3))
    for p in model.encoder.layer.parameters():  # not the teacher's layers 1 and 3 any more
        p.data.add_(0.05 * torch.randn_like(p))
    card = {"config": {"layers": [1, 3], "teacher": tiny_teacher, "max_seq_length": 64}}
    folder = str(save_student(tmp_path / "tiny", model, card))
    texts = [p.content for p in demo_dataset.corpus][:16]
    onnx = load_embedder(tiny_teacher, backend="onnx", precision="fp32", student=folder)
    ref = load_embedder(tiny_teacher, backend="torch", precision="fp32", student=folder)
    teacher = load_embedder(tiny_teacher, backend="onnx", precision="fp32")
    a, b, t = onnx.encode(texts), ref.encode(texts), teacher.encode(texts)
    assert np.sum(a * b, axis=1).min() > 0.99999
    assert np.sum(a * t, axis=1).mean() < 0.99


def test_the_bundled_student_gives_the_teachers_vectors(demo_dataset):
    meta = student_meta(BUNDLED_STUDENT)
    assert meta["config"]["layers"] == [0, 3, 5] and meta["validation"]["val_cos_mean"] > 0.95
    student = load_embedder(backend="torch", student=str(BUNDLED_STUDENT))
    teacher = load_embedder()  # the ONNX fp32 query encoder
    texts = [p.content for p in demo_dataset.corpus]
    s, t = student.encode(texts, batch_size=16), teacher.encode(texts, batch_size=16)
    np.testing.assert_allclose(np.linalg.norm(s, axis=1), 1.0, atol=1e-5)
    cos = np.sum(s * t, axis=1)
    # 0.93 / 0.88 here; the teacher's layers 0, 3 and 5 untrained give ~0.5
    assert cos.mean() > 0.9 and cos.min() > 0.8, (cos.mean(), cos.min())
    # a passage's own question finds it among the student's vectors as among the teacher's
    q = teacher.encode([q.text for q in demo_dataset.questions])
    rows = {p.id: i for i, p in enumerate(demo_dataset.corpus)}
    gold = [[rows[g] for g in question.gold] for question in demo_dataset.questions]
    hit = [np.isin(np.argsort(-(s @ v))[:5], g).any() for v, g in zip(q, gold, strict=True)]
    ref = [np.isin(np.argsort(-(t @ v))[:5], g).any() for v, g in zip(q, gold, strict=True)]
    assert sum(hit) >= sum(ref) - 1


def test_large_builds_choose_the_student_where_it_fits_the_query_encoder(monkeypatch, tmp_path):
    import hopgraph.index.dense_options as dense_mod

    o = make_options(DenseOptions, {"fast_encode_min_passages": 100})
    assert o.passage_encoder_for(99) == "same"
    for bf16 in (True, False):  # the student runs in fp32 where the CPU has no bf16
        monkeypatch.setattr(dense_mod, "cpu_has_bf16", lambda bf16=bf16: bf16)
        assert o.passage_encoder_for(100) == "student"
    other = make_options(DenseOptions, {"fast_encode_min_passages": 100,
                                        "student": str(tmp_path)})  # fmt: skip
    assert not other.student_fits()
    monkeypatch.setattr(dense_mod, "cpu_has_bf16", lambda: True)
    assert other.passage_encoder_for(100) == "torch-bf16"  # no student for it: as before
    with pytest.raises(ConfigError, match="student needs a transformer"):
        make_options(DenseOptions, {"passage_encoder": "student", "backend": "static"})
    assert dense_mod.passage_encoder_note(o, 100).startswith("dense: passages encoded by the")


def test_a_student_built_index_records_it_and_updates_with_it(tmp_path):
    from hopgraph import build_index
    from hopgraph.corpus import load_corpus
    from hopgraph.data import demo_dataset_path
    from hopgraph.retrieve import get_retriever

    path = demo_dataset_path()
    settings = {"dense": {"fast_encode_min_passages": 1}}
    ix = build_index(path, tmp_path / "ix", ["dense"], settings, batch_size=7, progress=False)
    dense = ix.part("dense")
    assert dense.passage_encoder == "student"
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["parts"]["dense"]["stats"]["passage_encoder"] == "student"
    corpus = load_corpus(path)
    texts = [p.content for p in corpus]
    student = load_embedder(backend="torch", student=str(BUNDLED_STUDENT), max_seq_length=160)
    cos = np.sum(np.asarray(dense.embeddings) * student.encode(texts), axis=1)
    assert cos.min() > 0.999  # the student's vectors (bf16: batch padding moves the last bits)
    teacher = load_embedder().encode(texts)
    assert np.sum(np.asarray(dense.embeddings) * teacher, axis=1).mean() < 0.99  # not the teacher
    assert dense.embedder.backend == "onnx"  # queries: the ONNX encoder
    added = [type(p)(id=p.id + "-copy", title=p.title, text=p.text) for p in corpus[:2]]
    ix.add(added)
    new = np.asarray(ix.part("dense").embeddings[-2:])
    np.testing.assert_allclose(new, np.asarray(dense.embeddings[:2]), atol=1e-6)
    hits = get_retriever(ix, "dense").search(texts[3], k=1)
    assert hits.ids[0] == corpus[3].id


def test_the_student_reads_the_first_student_max_seq_length_tokens_of_a_passage():
    """A passage past 160 tokens gets the student's vector of its first 160 (its own limit,
    not the query encoder's 256); the limit is an option, capped by max_seq_length."""
    text = "Orrendale was a steamship built on the Clyde for the Orient line. " * 30  # ~500
    o = make_options(DenseOptions, {})
    assert (o.student_length(), o.max_seq_length) == (160, 256)
    backend, precision = dense_options.student_backend()
    at = {n: load_embedder(backend=backend, precision=precision, student=str(BUNDLED_STUDENT),
                           max_seq_length=n).encode([text])[0] for n in (160, 256)}  # fmt: skip
    got = o.embedder_for("student").encode([text])[0]
    assert float(got @ at[160]) > 0.9999 and float(at[160] @ at[256]) < 0.999
    wide = make_options(DenseOptions, {"student_max_seq_length": 512})
    assert wide.student_length() == 256
    assert float(wide.embedder_for("student").encode([text])[0] @ at[256]) > 0.9999
    with pytest.raises(ConfigError, match="student_max_seq_length"):
        make_options(DenseOptions, {"student_max_seq_length": 0})


def test_auto_takes_the_student_only_where_it_agrees_with_the_query_encoder(
    monkeypatch, demo_dataset, tmp_path
):
    import hopgraph.index.dense_options as dense_mod
    from hopgraph import build_index
    from hopgraph.data import demo_dataset_path

    o = make_options(DenseOptions, {"fast_encode_min_passages": 1})
    corpus = demo_dataset.corpus
    agreement = o.student_agreement(corpus)
    assert 0.9 < agreement < 0.99  # 0.93 on these Wikipedia-like passages
    assert o.passage_encoder_for(len(corpus), corpus) == "student"
    assert f"cosine {agreement:.3f} to it here" in dense_mod.passage_encoder_note(
        o, len(corpus), corpus
    )
    monkeypatch.setattr(dense_mod, "STUDENT_MIN_COSINE", 0.99)  # a corpus it does not fit
    fallback = "torch-bf16" if dense_mod.cpu_has_bf16() else "same"
    assert o.passage_encoder_for(len(corpus), corpus) == fallback
    assert o.passage_encoder_for(len(corpus)) == "student"  # (no corpus: size alone)
    note = dense_mod.passage_encoder_note(o, len(corpus), corpus)
    assert f"agrees with the query encoder to cosine {agreement:.3f}" in note
    settings = {"dense": {"fast_encode_min_passages": 1}}
    ix = build_index(demo_dataset_path(), tmp_path / "ix", ["dense"], settings, progress=False)
    assert ix.part("dense").passage_encoder == fallback
    forced = make_options(DenseOptions, {"passage_encoder": "student"})
    assert forced.passage_encoder_for(len(corpus), corpus) == "student"  # asked for: used


@pytest.mark.data
def test_the_student_agrees_on_wikipedia_passages_and_not_on_text_it_never_saw(data_dir):
    """The gate's two sides on real corpora: English Wikipedia passages (a kind the student
    learned from) pass it, German ones (never seen; MiniLM is an English encoder) do not."""
    from hopgraph.corpus import load_dataset

    o = make_options(DenseOptions, {})
    found = {n: data_dir / n for n in ("2wikimultihopqa", "xquad_de") if (data_dir / n).is_dir()}
    if len(found) < 2:
        pytest.skip("2wikimultihopqa or xquad_de not in the data folder")
    wiki = o.student_agreement(load_dataset(found["2wikimultihopqa"]).corpus)
    german = o.student_agreement(load_dataset(found["xquad_de"]).corpus)
    # measured on whole corpora: 0.933 and 0.772 (docs/notes/encoding.md, "The shipped student")
    assert wiki > 0.9 > german, (wiki, german)


def test_a_staged_build_decides_its_passage_encoder_when_the_vectors_start(tmp_path):
    """Deciding on the student encodes a sample with both encoders: a staged build does it
    after stage 1 (whose merges set its peak RSS), and says so in its log there."""
    import hopgraph.models.embedder as embedder_mod
    from hopgraph import build_index
    from hopgraph.data import demo_dataset_path

    lines: list[str] = []
    loaded_at_searchable: list[int] = []

    def log(line: str) -> None:
        lines.append(line)
        if line.startswith("searchable: "):
            loaded_at_searchable.append(len(embedder_mod._CACHE))

    embedder_mod._CACHE.clear()
    settings = {"dense": {"fast_encode_min_passages": 1}}
    ix = build_index(demo_dataset_path(), tmp_path / "ix", ["sparse", "entities", "dense"],
                     settings, batch_size=20, progress=False, staged="on", log=log)  # fmt: skip
    assert ix.part("dense").passage_encoder == "student"
    note = next(i for i, line in enumerate(lines) if line.startswith("dense: passages encoded"))
    searchable = next(i for i, line in enumerate(lines) if line.startswith("searchable: "))
    assert searchable < note and "to it here" in lines[note]
    assert loaded_at_searchable == [0]  # no encoder loaded during stage 1
