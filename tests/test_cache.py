"""The index cache key follows the corpus bytes, not where or when the files were written."""

from __future__ import annotations

import os
import shutil

from hopgraph.cache import index_cache_dir


def test_key_follows_content_not_path_or_mtime(tmp_path):
    a = tmp_path / "a" / "set"
    a.mkdir(parents=True)
    (a / "corpus.jsonl").write_text('{"idx": 0, "title": "t", "text": "x"}\n')
    b = tmp_path / "b" / "set"
    shutil.copytree(a, b)
    os.utime(b / "corpus.jsonl", (1, 1))
    root = tmp_path / "cache"
    assert index_cache_dir(a, "set", root=root) == index_cache_dir(b, "set", root=root)
    assert index_cache_dir(a, "set", {"chunk_words": 50}, root=root) != index_cache_dir(
        a, "set", root=root
    )
    (b / "corpus.jsonl").write_text('{"idx": 0, "title": "t", "text": "y"}\n')
    assert index_cache_dir(a, "set", root=root) != index_cache_dir(b, "set", root=root)
