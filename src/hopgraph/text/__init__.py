"""Text processing: tokenisation for the sparse index (NER and triples come with later methods)."""

from hopgraph.text.tokenize import Tokenizer

__all__ = ["Tokenizer"]
