"""Named presets: tuned method parameters and index options saved as JSON.

A preset is ``{"description", "entities": {...index options...}, "graph": {...method params...},
"seed_k": {method: k}}``. Built-in presets live next to this file; ``save_preset`` writes a
user's tuned settings (by default to ``~/.config/hopgraph/presets``) and ``load_preset`` reads
either, user presets first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hopgraph.errors import ConfigError

BUILTIN = Path(__file__).parent


def user_dir() -> Path:
    env = os.environ.get("HOPGRAPH_PRESETS")
    return Path(env) if env else Path.home() / ".config" / "hopgraph" / "presets"


def list_presets() -> list[str]:
    names = {p.stem for p in BUILTIN.glob("*.json")}
    if user_dir().exists():
        names |= {p.stem for p in user_dir().glob("*.json")}
    return sorted(names)


def load_preset(name: str) -> dict[str, Any]:
    for folder in (user_dir(), BUILTIN):
        path = folder / f"{name}.json"
        if path.exists():
            try:
                return json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}: invalid preset JSON ({exc})") from None
    raise ConfigError(f"unknown preset {name!r}; available: {', '.join(list_presets())}")


def save_preset(name: str, preset: dict[str, Any], folder: Path | None = None) -> Path:
    folder = folder or user_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(preset, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def index_assignments(preset: dict[str, Any] | None) -> list[str]:
    """A preset's index options as ``part.option=value`` strings (its ``index`` options, then its
    ``entities`` ones): what ``hopgraph eval --preset`` builds with, before ``--index-set``."""
    if not preset:
        return []
    sets = [f"{p}.{k}={v}" for p, o in preset.get("index", {}).items() for k, v in o.items()]
    return sets + [f"entities.{k}={v}" for k, v in preset.get("entities", {}).items()]
