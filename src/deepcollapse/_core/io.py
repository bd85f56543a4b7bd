"""Run-folder I/O shared by every trainer: atomic writes, JSON lines, and the "never overwrite" rule.

Nothing here is lost on a crash: every file is written to a temporary name beside its target, flushed,
synced and moved into place with ``os.replace`` (atomic on POSIX), so a run folder holds either the old or the
new version of a file, never half of one.  ``metrics.jsonl`` is append-only; on resume, records written after
the last checkpoint (and a torn last line from a killed writer) are dropped with :func:`truncate_jsonl`, so a
resumed run's log equals an uninterrupted one.

Reading is equally guarded: :func:`read_yaml`, :func:`read_json`, :func:`read_npz` and :func:`load_checkpoint`
are the one place where a user's file is parsed, and answer an empty, truncated, random-bytes, wrong-kind or
unparsable file with a one-line :class:`~deepcollapse._core.checks.ConfigError` of the form
``<file as given>: <what is wrong>; <what to do>.`` (for YAML syntax errors the parser's message and line).

Checksums.  :func:`atomic_torch_save` adds a ``"checksum"`` entry to the dict it saves: the SHA-256 of its
*content* (:func:`content_checksum`: every key, every number, every tensor's dtype, shape and bytes), which
:func:`load_checkpoint` recomputes and compares, so damage that still unpickles (bytes changed inside a
tensor) is a one-line error naming the file instead of silently wrong numbers.  Files without a checksum (of
earlier releases) load as before.  With ``keep_previous=True`` the file it replaces stays as
``<name>.prev<suffix>`` (``checkpoint.prev.pt``, rotated atomically), and
:func:`load_checkpoint_or_previous` falls back to it, with a one-line warning, when the newest is damaged.

Output paths are checked like input paths, before anything is written: :func:`check_output_file` (a file a
command writes: a folder there, a suffix the writer cannot produce or none, an existing file without
``force``, a missing or non-folder parent) and :func:`check_output_folder` (a folder a command fills: a file
there or above it); each is a one-line ``ConfigError`` naming the option and the path as given.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.results import to_jsonable

__all__ = [
    "CHECKSUM_KEY",
    "append_jsonl",
    "atomic_torch_save",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_output_file",
    "check_output_folder",
    "content_checksum",
    "finite_or_none",
    "load_checkpoint",
    "load_checkpoint_or_previous",
    "previous_path",
    "parse_yaml",
    "check_run_folder",
    "prepare_run_folder",
    "read_json",
    "read_jsonl",
    "read_npz",
    "read_yaml",
    "truncate_jsonl",
]

log = logging.getLogger(__name__)

#: The key under which :func:`atomic_torch_save` stores a dict's :func:`content_checksum` (and the name of the
#: array that holds it in a solution ``.npz``).
CHECKSUM_KEY = "checksum"


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


def _feed(h: Any, x: Any) -> None:
    """Add a canonical encoding of ``x`` to the hash ``h`` (see :func:`content_checksum`)."""
    if isinstance(x, Mapping):
        h.update(b"{%d" % len(x))
        for k in sorted(x, key=lambda k: (type(k).__name__, repr(k))):
            _feed(h, k)
            _feed(h, x[k])
        h.update(b"}")
    elif isinstance(x, (list, tuple)):
        h.update(b"[%d" % len(x))
        for v in x:
            _feed(h, v)
        h.update(b"]")
    elif hasattr(x, "detach") and hasattr(x, "dtype") and hasattr(x, "shape"):  # a torch tensor
        import torch

        t = x.detach().cpu().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        if t.numel():
            flat = t.reshape(-1)
            h.update((flat if t.dtype == torch.uint8 else flat.view(torch.uint8)).numpy().tobytes())
    elif hasattr(x, "dtype") and hasattr(x, "tobytes") and hasattr(x, "shape"):  # a numpy array or scalar
        import numpy as np

        a = np.ascontiguousarray(x)
        h.update(f"A{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    elif isinstance(x, (bytes, bytearray)):
        h.update(b"B%d:" % len(x) + bytes(x))
    else:  # None, bool, int, float (repr is exact), str, and anything else by its type and repr
        h.update(f"{type(x).__name__}:{x!r};".encode())


def content_checksum(obj: Any) -> str:
    """``"sha256:<hex>"`` of the content of ``obj``: mappings (keys sorted), sequences, torch tensors and
    numpy arrays (dtype, shape and bytes) and plain values (type and ``repr``; a float's ``repr`` is exact).

    It depends on what the object holds, not on how a file stores it, so it is checked after loading (a
    tensor's bytes changed inside a file that still unpickles are caught) and survives ``map_location``.

    Parameters
    ----------
    obj : Any
        The checkpoint dict (or the arrays of a solution file), without its checksum entry.

    Returns
    -------
    str
        ``"sha256:"`` followed by 64 hex digits.
    """
    h = hashlib.sha256()
    _feed(h, obj)
    return "sha256:" + h.hexdigest()


def previous_path(path: str | Path) -> Path:
    """Where :func:`atomic_torch_save` keeps the file it replaces (``checkpoint.pt`` ->
    ``checkpoint.prev.pt``)."""
    p = Path(path)
    return p.with_name(f"{p.stem}.prev{p.suffix}")


def _replace_keeping_previous(tmp: Path, path: Path) -> None:
    """``os.replace(tmp, path)``, the file it replaces kept at :func:`previous_path` (hard-linked, else
    copied, under a temporary name and moved into place: ``path`` exists at every moment)."""
    if path.is_file():
        import shutil

        prev = previous_path(path)
        prev_tmp = _tmp_path(prev)
        prev_tmp.unlink(missing_ok=True)
        try:
            os.link(path, prev_tmp)
        except OSError:  # a file system without hard links
            shutil.copy2(path, prev_tmp)
        os.replace(prev_tmp, prev)
    os.replace(tmp, path)


def atomic_torch_save(obj: Any, path: str | Path, *, keep_previous: bool = False) -> None:
    """``torch.save`` to ``path`` atomically; a dict gets its :func:`content_checksum` under
    :data:`CHECKSUM_KEY` (checked by :func:`load_checkpoint`).

    Parameters
    ----------
    obj : Any
        What to save (a checkpoint dict).
    path : str or Path
        The file.
    keep_previous : bool
        Keep the file this one replaces as :func:`previous_path` (``checkpoint.prev.pt``), the checkpoint
        :func:`load_checkpoint_or_previous` falls back to.
    """
    import torch  # only trainers save tensors; keep this module importable without torch

    path = Path(path)
    if isinstance(obj, Mapping):
        body = {k: v for k, v in obj.items() if k != CHECKSUM_KEY}
        obj = {**body, CHECKSUM_KEY: content_checksum(body)}
    tmp = _tmp_path(path)
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    if keep_previous:
        _replace_keeping_previous(tmp, path)
    else:
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


def read_jsonl(path: str | Path, *, strict: bool = False) -> list[dict[str, Any]]:
    """All JSON objects of a ``.jsonl`` file (``[]`` if there is no file).

    Parameters
    ----------
    path : str or Path
        The file (``metrics.jsonl`` of a run folder).
    strict : bool
        ``False``: skip every unreadable line.  ``True`` (what a resume relies on): only a torn last line
        (a killed writer's, no final newline) is skipped; any other unreadable line, a line that is not a JSON
        object, or bytes that are not text raise a one-line ``ConfigError`` naming the file and the line.

    Returns
    -------
    list of dict
        The records, in file order.
    """
    p = Path(path)
    if not p.is_file():
        return []
    raw = _read_bytes(p, "JSON-lines file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if strict:
            raise _bad(p, f"not a JSON-lines file (byte {exc.start} is not text)", _DELETE_HINT) from None
        text = raw.decode("utf-8", errors="replace")
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            torn = i == len(lines) and not text.endswith("\n") and line.lstrip().startswith("{")
            if strict and not torn:
                raise _bad(p, f"line {i}: not JSON ({exc.msg})", _DELETE_HINT) from None
            continue
        if not isinstance(rec, dict):
            if strict:
                raise _bad(p, f"line {i}: a JSON {type(rec).__name__}, must be an object", _DELETE_HINT)
            continue
        out.append(rec)
    return out


def truncate_jsonl(path: str | Path, key: str, last: int) -> None:
    """Keep the records whose ``key`` (``"step"``, ``"epoch"``) is ``<= last``; drop a torn last line.

    A file with other damage is refused (``ConfigError``, see :func:`read_jsonl` with ``strict=True``) and
    left as it is.
    """
    p = Path(path)
    if not p.is_file():
        return
    records = read_jsonl(p, strict=True)
    for i, r in enumerate(records):
        if not isinstance(r.get(key, -1), (int, float)):
            raise _bad(p, f"record {i + 1}: {key} == {r[key]!r}, must be a number", _DELETE_HINT)
    keep = [json.dumps(r, allow_nan=False) for r in records if int(r.get(key, -1)) <= last]
    atomic_write_text(p, "".join(line + "\n" for line in keep))


def check_run_folder(out_dir: str | Path, force: bool, resume_hint: str, option: str = "out") -> Path:
    """The checks of :func:`prepare_run_folder`, writing nothing: ``out_dir`` is a folder path (no file there
    or above it) that is new or empty, or ``force`` is given.

    Parameters
    ----------
    out_dir : str or Path
        The run folder as the user gave it.
    force : bool
        Whether an existing run may be replaced.
    resume_hint : str
        How to continue the run that is there instead (named in the message).
    option : str
        The argument's name in the message (``out``; the CLI writes ``--out``).

    Returns
    -------
    Path
        ``out_dir``.
    """
    out = check_output_folder(out_dir, option=option)
    if out.is_dir() and any(out.iterdir()) and not force:
        held = sorted(p.name for p in out.iterdir())
        shown = ", ".join(held[:4]) + (", ..." if len(held) > 4 else "")
        raise ConfigError(
            f"{option} == {str(out)!r}, must be a new or empty folder (it holds {shown}): pass force=True to "
            f"replace the run there, or {resume_hint} to continue it."
        )
    return out


def prepare_run_folder(out_dir: str | Path, run_files: Sequence[str], force: bool, resume_hint: str) -> Path:
    """Create ``out_dir`` for a new run; refuse to overwrite a non-empty folder unless ``force``
    (:func:`check_run_folder`, called first, writes nothing).

    With ``force`` only the trainer's own ``run_files`` (and the previous and damaged checkpoints kept beside
    them) are removed; anything else in the folder is kept.
    """
    out = check_run_folder(out_dir, force, resume_hint)
    if out.is_dir():
        for name in run_files:
            f = out / name
            for old in (f, previous_path(f), f.with_name(f"{f.stem}.damaged{f.suffix}")):
                old.unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    return out


# ------------------------------------------------------------------------------------------------------------
# reading a user's file: one line for every way it can be bad
# ------------------------------------------------------------------------------------------------------------
_DELETE_HINT = "delete or repair it"


def _bad(path: str | Path, problem: str, hint: str | None = None) -> ConfigError:
    """``<path>: <problem>; <hint>.`` as a ConfigError."""
    return ConfigError(f"{path}: {problem}" + (f"; {hint}." if hint else "."))


def _first_line(exc: BaseException, limit: int = 120) -> str:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0].strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _read_bytes(path: Path, kind: str, hint: str | None = None) -> bytes:
    if not path.exists():
        raise _bad(path, f"no such file, must be an existing {kind}", hint)
    if not path.is_file():
        raise _bad(path, f"a folder, must be a {kind}", hint)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _bad(path, f"not readable ({exc.strerror}), must be a readable {kind}", hint) from None


def _read_text(path: str | Path, kind: str, empty: str, hint: str | None = None) -> str:
    """The UTF-8 text of a user's ``kind`` file (``"YAML"``, ``"JSON"``), or a one-line ``ConfigError``
    naming it: missing, a folder, unreadable, ``empty`` (what it must hold instead), or not text."""
    raw = _read_bytes(Path(path), f"{kind} file", hint)
    if not raw.strip():
        raise _bad(path, f"empty file, must be {empty}", hint)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(path, f"not a text file (byte {exc.start} is not UTF-8), must be {kind}", hint) from None


def parse_yaml(text: str, source: str, *, expected: str = "keys and values", hint: str | None = None) -> dict:
    """Parse YAML ``text`` that must hold a mapping; ``source`` names it in the one-line error.

    Parameters
    ----------
    text : str
        The YAML document.
    source : str
        The file as the user gave it (or ``"<text>"``).
    expected : str
        What the mapping holds, for the message (``"DUFMConfig fields"``).
    hint : str, optional
        What to do, appended to the message.

    Returns
    -------
    dict
        The mapping.
    """
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or _first_line(exc)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigError(
            f"{source}{where}: {problem} (YAML syntax)" + (f"; {hint}." if hint else ".")
        ) from None
    if data is None:
        raise _bad(
            source, f"no YAML content (only comments or blank lines), must be a mapping of {expected}", hint
        )
    if not isinstance(data, dict):
        raise _bad(source, f"a YAML {type(data).__name__}, must be a mapping of {expected}", hint)
    return data


def read_yaml(path: str | Path, *, expected: str = "keys and values", hint: str | None = None) -> dict:
    """The mapping in a YAML file, or a one-line ``ConfigError`` naming the file (empty, not text, a YAML
    syntax error with the parser's message and line, not a mapping).

    Parameters
    ----------
    path : str or Path
        The file, as the user gave it (the message repeats it).
    expected : str
        What the mapping holds, for the message (``"DUFMConfig fields"``).
    hint : str, optional
        What to do, appended to the message.

    Returns
    -------
    dict
        The mapping.
    """
    text = _read_text(path, "YAML", f"a YAML mapping of {expected}", hint)
    return parse_yaml(text, str(path), expected=expected, hint=hint)


def read_json(path: str | Path, *, hint: str | None = None) -> dict:
    """The JSON object in a file, or a one-line ``ConfigError`` naming the file (empty, not text, not JSON
    with the parser's message and line, not an object).

    Parameters
    ----------
    path : str or Path
        The file (``summary.json``, ``search.json``).
    hint : str, optional
        What to do, appended to the message.

    Returns
    -------
    dict
        The object.
    """
    text = _read_text(path, "JSON", "a JSON object", hint)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(path, f"line {exc.lineno}, column {exc.colno}: {exc.msg} (not valid JSON)", hint) from None
    if not isinstance(data, dict):
        raise _bad(path, f"a JSON {type(data).__name__}, must be a JSON object", hint)
    return data


def _content(head: bytes) -> str:
    """A guess at what a file that failed to load is, from its first bytes."""
    if head.startswith(b"\x93NUMPY"):
        return "a single .npy array"
    if head.startswith(b"PK"):
        return "a damaged or truncated zip archive"
    if head[:1] == b"\x80":
        return "a Python pickle"
    return "unrecognised content"


def read_npz(path: str | Path, *, hint: str | None = None) -> dict[str, Any]:
    """Every array of an ``.npz`` archive (loaded without pickles), or a one-line ``ConfigError`` naming the
    file: missing, empty, truncated, random bytes, a single ``.npy``, a pickle, an object array.

    Parameters
    ----------
    path : str or Path
        The file, as the user gave it.
    hint : str, optional
        What to do, appended to the message.

    Returns
    -------
    dict of str to numpy.ndarray
        The arrays by name (the callers check which names they need).
    """
    import zipfile
    import zlib

    import numpy as np

    p = Path(path)
    raw_head = _read_bytes(p, ".npz file", hint)[:8]
    if not raw_head:
        raise _bad(path, "empty file, must be an .npz archive (numpy.savez)", hint)
    try:
        with np.load(p, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, EOFError, ValueError, OSError, zlib.error, KeyError, TypeError) as exc:
        what = _content(raw_head)  # TypeError: np.load returned one .npy array, not an archive
        if (
            isinstance(exc, ValueError)
            and "allow_pickle" in str(exc)
            and what == "a damaged or truncated zip archive"
        ):
            what = "an .npz archive holding Python objects, not loaded for safety"
        elif what == "a damaged or truncated zip archive":
            what += f" ({_first_line(exc)})"
        raise _bad(path, f"not a readable .npz archive ({what})", hint) from None


def load_checkpoint(
    path: str | Path,
    *,
    keys: Sequence[str] = (),
    map_location: Any = "cpu",
    hint: str | None = None,
) -> dict[str, Any]:
    """``torch.load(path, weights_only=True)`` of a dict, or a one-line ``ConfigError`` naming the file:
    empty, truncated, random bytes, not written by ``torch.save``, objects other than tensors, not a dict, or
    a dict without one of ``keys``.

    Parameters
    ----------
    path : str or Path
        The file (``RUN/checkpoint.pt``, ``RUN/params.pt``), as the user's folder names it.
    keys : sequence of str
        Keys the dict must hold.
    map_location : Any
        As for ``torch.load``.
    hint : str, optional
        What to do, appended to the message.

    Returns
    -------
    dict
        The loaded checkpoint.
    """
    import torch  # only trainers and analyses read checkpoints; keep this module importable without torch

    p = Path(path)
    head = _read_bytes(p, "PyTorch checkpoint", hint)[:8]
    if not head:
        raise _bad(path, "not a readable PyTorch checkpoint (empty file)", hint)
    try:
        data = torch.load(p, map_location=map_location, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises anything from EOFError to IndexError on bad bytes
        if not head.startswith(b"PK") and head[:1] != b"\x80":  # neither torch's zip format nor a pickle
            what = f"{_content(head)}, not written by torch.save"
        elif "Unsupported global" in str(exc):
            what = "it holds Python objects other than tensors, not loaded for safety"
        elif head.startswith(b"PK"):
            what = f"damaged or truncated: {_first_line(exc).split('. ')[0]}"
        else:
            what = "a Python pickle, not written by torch.save"
        raise _bad(path, f"not a readable PyTorch checkpoint ({what})", hint) from None
    if not isinstance(data, dict):
        raise _bad(path, f"a PyTorch file holding a {type(data).__name__}, must be a checkpoint dict", hint)
    if CHECKSUM_KEY in data:  # files of earlier releases have none and load as before
        stored = data.pop(CHECKSUM_KEY)
        if stored != content_checksum(data):
            raise _bad(path, "damaged: its content does not match the checksum written with it", hint)
    missing = [k for k in keys if k not in data]
    if missing:
        found = ", ".join(sorted(map(str, data))) or "none"
        raise _bad(
            path,
            f"a PyTorch file with keys {found}, must be a checkpoint with keys {', '.join(keys)}",
            hint,
        )
    return data


def load_checkpoint_or_previous(
    path: str | Path,
    *,
    keys: Sequence[str] = (),
    map_location: Any = "cpu",
    hint: str | None = None,
    describe: Callable[[dict[str, Any]], str] | None = None,
) -> dict[str, Any]:
    """:func:`load_checkpoint` of ``path``, or, when it is damaged and the previous checkpoint
    (:func:`previous_path`, kept by ``atomic_torch_save(..., keep_previous=True)``) loads, that one.

    On the fallback the damaged file is kept as ``<name>.damaged<suffix>``, the previous checkpoint is put
    back in its place (so the next write keeps a good previous one), and one warning line says what was
    wrong and where the run resumes from (``describe(checkpoint)``, e.g. ``"step 2000"``).  When both are
    bad, the error of ``path`` is raised.

    Parameters
    ----------
    path : str or Path
        The newest checkpoint (``RUN/checkpoint.pt``).
    keys, map_location, hint
        As for :func:`load_checkpoint`.
    describe : callable, optional
        ``checkpoint -> text`` naming where it stands, for the warning.

    Returns
    -------
    dict
        The checkpoint loaded.
    """
    p = Path(path)
    try:
        return load_checkpoint(p, keys=keys, map_location=map_location, hint=hint)
    except ConfigError as exc:
        prev = previous_path(p)
        if not prev.is_file():
            raise
        try:
            data = load_checkpoint(prev, keys=keys, map_location=map_location, hint=hint)
        except ConfigError:
            raise exc from None
        import shutil

        damaged = p.with_name(f"{p.stem}.damaged{p.suffix}")
        if p.exists():
            os.replace(p, damaged)
        tmp = _tmp_path(p)
        shutil.copy2(prev, tmp)
        os.replace(tmp, p)
        problem = str(exc).split(";")[0].rstrip(".")
        where = f" ({describe(data)})" if describe is not None else ""
        log.warning(
            "%s; resuming from the previous checkpoint %s%s (the damaged file is kept as %s)",
            problem,
            prev,
            where,
            damaged.name,
        )
        return data


# ------------------------------------------------------------------------------------------------------------
# output paths: checked like input paths, before anything is written
# ------------------------------------------------------------------------------------------------------------
def _suffix_list(suffixes: Iterable[str]) -> str:
    return ", ".join(suffixes)


def _file_above(p: Path) -> Path | None:
    """The nearest existing ancestor of ``p`` that is not a folder, if any."""
    for parent in p.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def check_output_file(
    path: str | Path,
    *,
    suffixes: Iterable[str],
    option: str = "--out",
    force: bool = False,
) -> Path:
    """The file a command is about to write, or a one-line ``ConfigError`` naming ``option`` and the path
    as given: a folder there, no suffix or one the writer cannot produce (the format follows the suffix, so
    the file written is exactly the one named), an existing file without ``force``, a parent folder that
    does not exist (never created for a file: a typo in a folder name must not scatter files) or that is a
    file.

    Parameters
    ----------
    path : str or Path
        The output file as the user gave it.
    suffixes : iterable of str
        The suffixes the writer produces, with their dot (``".png"``, ``".csv"``), lower case.
    option : str
        The option that names the file, for the message.
    force : bool
        Whether an existing file may be replaced (``--force``).

    Returns
    -------
    Path
        ``path``.
    """
    p = Path(path)
    allowed = [s.lower() for s in suffixes]
    head = f"{option} == {str(path)!r}"
    if p.is_dir():
        raise ConfigError(f"{head}, must be a file name ending in {_suffix_list(allowed)} (it is a folder).")
    if not p.suffix:
        raise ConfigError(
            f"{head}, must end in one of {_suffix_list(allowed)} (the suffix chooses the format; "
            f"e.g. {p.name}{allowed[0]})."
        )
    if p.suffix.lower() not in allowed:
        raise ConfigError(f"{head}, must end in one of {_suffix_list(allowed)} (not {p.suffix}).")
    if p.exists() and not force:
        raise ConfigError(f"{head}, must be a new file (it exists; pass force=True to replace it).")
    blocker = _file_above(p)
    if blocker is not None:
        raise ConfigError(f"{head}, must be in a folder ({blocker} is a file).")
    parent = p.parent
    if not parent.is_dir():
        raise ConfigError(
            f"{head}, must be in an existing folder ({parent} does not exist; create it first)."
        )
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"{head}, must be in a folder you can write to ({parent} is not writable).")
    return p


def check_output_folder(path: str | Path, *, option: str = "--out") -> Path:
    """The folder a command is about to fill (created with its parents when missing), or a one-line
    ``ConfigError`` naming ``option`` and the path as given: a file there, or a file where one of its
    parent folders would be.

    Parameters
    ----------
    path : str or Path
        The output folder as the user gave it.
    option : str
        The option that names it, for the message.

    Returns
    -------
    Path
        ``path``.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{option} == {str(path)!r}, must be a folder (it is a file).")
    blocker = _file_above(p)
    if blocker is not None:
        raise ConfigError(f"{option} == {str(path)!r}, must be a folder path ({blocker} is a file).")
    return p
