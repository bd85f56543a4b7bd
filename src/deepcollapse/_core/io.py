"""Run-folder I/O shared by every trainer: atomic writes, JSON lines, and the "never overwrite" rule.

Nothing here is lost on a crash: every file is written to a temporary name beside its target, flushed,
synced and moved into place with ``os.replace`` (atomic on POSIX), so a run folder holds either the old or the
new version of a file, never half of one.  ``metrics.jsonl`` is append-only; on resume, records written after
the last checkpoint (and a torn last line from a killed writer) are dropped with :func:`truncate_jsonl`, so a
resumed run's log equals an uninterrupted one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.results import to_jsonable

__all__ = [
    "append_jsonl",
    "atomic_torch_save",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "finite_or_none",
    "prepare_run_folder",
    "read_jsonl",
    "truncate_jsonl",
]


def _tmp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, ``os.replace``)."""
    path = Path(path)
    tmp = _tmp_path(path)
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_write_json(path: str | Path, obj: Any) -> None:
    """Strict JSON (``NaN``/``inf`` refused: convert them with :func:`finite_or_none` first), indented."""
    atomic_write_bytes(path, (json.dumps(obj, indent=2, allow_nan=False) + "\n").encode())


def atomic_torch_save(obj: Any, path: str | Path) -> None:
    """``torch.save`` to ``path`` atomically."""
    import torch  # only trainers save tensors; keep this module importable without torch

    path = Path(path)
    tmp = _tmp_path(path)
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def finite_or_none(x: Any) -> Any:
    """Strict JSON of ``x``: results, mappings, tuples, arrays and numpy scalars converted recursively
    (:func:`~deepcollapse._core.results.to_jsonable`), non-finite floats mapped to ``None``."""
    return to_jsonable(x, strict=True)


def append_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    """Append one strict-JSON line per record and sync (a crash loses at most a torn last line)."""
    lines = [json.dumps(r, allow_nan=False) for r in records]
    if not lines:
        return
    with open(path, "a") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """All JSON objects of a ``.jsonl`` file, skipping unreadable lines (a killed writer's torn last line)."""
    p = Path(path)
    if not p.is_file():
        return []
    out = []
    for line in p.read_text().splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def truncate_jsonl(path: str | Path, key: str, last: int) -> None:
    """Keep the records whose ``key`` (``"step"``, ``"epoch"``) is ``<= last``; drop unreadable lines."""
    p = Path(path)
    if not p.is_file():
        return
    keep = [json.dumps(r, allow_nan=False) for r in read_jsonl(p) if int(r.get(key, -1)) <= last]
    atomic_write_text(p, "".join(line + "\n" for line in keep))


def prepare_run_folder(out_dir: str | Path, run_files: Sequence[str], force: bool, resume_hint: str) -> Path:
    """Create ``out_dir`` for a new run; refuse to overwrite a non-empty folder unless ``force``.

    With ``force`` only the trainer's own ``run_files`` are removed; anything else in the folder is kept.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out == {str(out)!r}, must be a folder (it is a file).")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise ConfigError(
                f"out == {str(out)!r}, must be a new or empty folder (pass force=True / --force to overwrite "
                f"it, or {resume_hint} to continue it)."
            )
        for name in run_files:
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    return out
