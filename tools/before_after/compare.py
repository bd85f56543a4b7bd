"""Compare two runs of commands.list (compare.sh): exit codes, every output file, stdout and stderr.

Numbers are compared exactly (bit for bit: floats by value with the same type, arrays by dtype, shape and bytes).
Only the keys in IGNORED_KEYS (run-dependent: wall and CPU times, timestamps, versions, host) are skipped, absolute
paths of the two run folders and source trees are masked, and in stdout / stderr the tokens in TEXT_MASKS are
masked and warning lines are dropped (the new tree may warn about a renamed option or key).

usage: compare.py BEFORE_DIR AFTER_DIR     (prints one line per command and a timing table; exit 1 if any differ)
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

#: Keys whose values depend on the run, not on the code (wall / CPU times, timestamps, environment).
IGNORED_KEYS = frozenset(
    {
        "elapsed_s",  # search.json, summary.json (search, net): wall seconds
        "cpu_s",  # search.json, summary.json (search): CPU seconds
        "elapsed",  # net checkpoint state: wall seconds
        "epoch_time",  # net metrics.jsonl: seconds per epoch
        "epoch_time_mean_s",  # net summary.json
        "seconds",  # executor task results
        "search_s",  # search-point summaries (best-known)
        "search_cpu_s",
        "created",  # report timestamp
        "timestamp",
        "python",  # environment info (report)
        "platform",
        "git",
        "versions",
        "hostname",
    }
)
#: Keys renamed on purpose by issue 17 (NetConfig: the DUFM config's names), old -> new.  A key of BEFORE that is
#: missing in AFTER is compared with its new name there, and the rename is reported (not counted as a difference).
RENAMED_KEYS = {
    "n_per_class": "n",
    "n_test_per_class": "n_test",
    "head_layers": "layers",
    "head_width": "width",
    "gamma": "lr_decay",
    "milestones": "lr_milestones",
}
#: Files not compared (they embed timestamps, versions, git hash or base64 figures: the numbers behind them are
#: compared through the CSV/JSON files they are made from). PNG figures are compared byte for byte.
IGNORED_SUFFIXES = (".pdf", ".html")
#: Files of the harness itself, compared separately (exit code, stdout, stderr) or not at all.
META = {"_command", "_stdout", "_stderr", "_rc", "_time"}  # (SIDE/_warmup: numba warm-up, never compared)

#: stdout / stderr: (regex, replacement), applied in order after the paths are masked.
TEXT_MASKS = [
    (re.compile(r"\b\d+(\.\d+)?(e[-+]?\d+)? ?(s|ms|min|h)\b"), "<T>"),  # "3 s", "mean epoch time 0.00 s"
    (re.compile(r"\b\d+(\.\d+)? ?(it/s|s/it)\b"), "<RATE>"),
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?"), "<DATE>"),
]
WARNING_LINE = re.compile(r"(?i)(warning|deprecat)")


def path_masks(before: Path, after: Path) -> list[tuple[str, str]]:
    pairs = [(str(before.resolve()), "<ROOT>"), (str(after.resolve()), "<ROOT>")]
    for side in (before, after):
        tree = side / "_tree"
        if tree.exists():  # .../src/deepcollapse/__init__.py -> the source folder
            src = str(Path(tree.read_text().strip()).parent.parent)
            pairs.append((src, "<SRC>"))
            pairs.append((str(Path(src).parent), "<REPO>"))
    return sorted(pairs, key=lambda p: -len(p[0]))


class Differ:
    def __init__(self, masks: list[tuple[str, str]]) -> None:
        self.masks = masks
        self.added: list[str] = []  # keys / files only in AFTER (reported, not a difference of numbers)
        self.renamed: set[str] = set()  # RENAMED_KEYS met (old -> new), reported

    def mask(self, s: str) -> str:
        for a, b in self.masks:
            s = s.replace(a, b)
        return s

    def text(self, s: str) -> list[str]:
        s = self.mask(s)
        for rx, rep in TEXT_MASKS:
            s = rx.sub(rep, s)
        out, skip_indented = [], False
        for line in s.splitlines():
            if WARNING_LINE.search(line):
                skip_indented = (
                    True  # python's warning format: "file:line: XWarning: msg" + indented source line
                )
                continue
            if skip_indented and line.startswith("  ") and not line.strip().startswith(("{", "[", '"')):
                skip_indented = False
                continue
            skip_indented = False
            out.append(line.rstrip())
        return out

    def stream(self, s: str) -> list[Any]:
        """stdout / stderr as items: a JSON document (a 1-tuple holding it) or one masked text line."""
        items: list[Any] = []
        text: list[str] = []
        dec = json.JSONDecoder()
        pos = 0
        while pos < len(s):
            end = s.find("\n", pos)
            end = len(s) if end < 0 else end + 1
            if s[pos : pos + 1] in ("{", "["):
                try:
                    doc, stop = dec.raw_decode(s, pos)
                except ValueError:
                    pass
                else:
                    items += self.text("".join(text))
                    text = []
                    items.append((doc,))
                    pos = stop
                    continue
            text.append(s[pos:end])
            pos = end
        items += self.text("".join(text))
        return items

    # ---- structured values -------------------------------------------------------------------------------
    def value(self, a: Any, b: Any, path: str) -> str | None:
        """First difference between two parsed values, or None. Exact: 0.1 != 0.1000001, 1 != 1.0, nan == nan."""
        if isinstance(a, dict) and isinstance(b, dict):
            for k in a:
                if k in IGNORED_KEYS:
                    continue
                kb = k
                if k not in b and RENAMED_KEYS.get(k) in b and RENAMED_KEYS[k] not in a:
                    kb = RENAMED_KEYS[k]
                    self.renamed.add(f"{k}->{kb}")
                if kb not in b:
                    return f"{path}.{k}: before={short(a[k])}, after=<missing>"
                d = self.value(a[k], b[kb], f"{path}.{k}")
                if d:
                    return d
            used = {RENAMED_KEYS.get(k) for k in a if k not in b}
            self.added += [f"{path}.{k}" for k in b if k not in a and k not in IGNORED_KEYS and k not in used]
            return None
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if len(a) != len(b):
                return f"{path}: length before={len(a)}, after={len(b)}"
            for i, (x, y) in enumerate(zip(a, b)):
                d = self.value(x, y, f"{path}[{i}]")
                if d:
                    return d
            return None
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return self.array(a, b, path)
        if type(a) is not type(b):
            return f"{path}: before={short(a)} ({type(a).__name__}), after={short(b)} ({type(b).__name__})"
        if isinstance(a, float):
            if a == b or (math.isnan(a) and math.isnan(b)):
                return None
            return f"{path}: before={a!r}, after={b!r}"
        if isinstance(a, str):
            a, b = self.mask(a), self.mask(b)
        if a != b:
            return f"{path}: before={short(a)}, after={short(b)}"
        return None

    def array(self, a: Any, b: Any, path: str) -> str | None:
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return f"{path}: before={type(a).__name__}, after={type(b).__name__}"
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{path}: before {a.dtype}{list(a.shape)}, after {b.dtype}{list(b.shape)}"
        if a.dtype.kind in "OUS":
            return self.value(a.tolist(), b.tolist(), path)
        if a.tobytes() == b.tobytes():
            return None
        if a.dtype.kind in "fc":
            same = (a == b) | (np.isnan(a) & np.isnan(b))
            if same.all():  # e.g. -0.0 vs 0.0 or different NaN payloads
                return None
            i = tuple(int(j) for j in np.unravel_index(np.argmin(same), a.shape))
            diff = np.max(np.abs(a - b)[~same])
            n_diff = int((~same).sum())
            return (
                f"{path}{list(i)}: before={a[i]!r}, after={b[i]!r} (max |diff| {diff:.3g}, {n_diff} entries)"
            )
        i = tuple(int(j) for j in np.unravel_index(np.argmax(a != b), a.shape))
        return f"{path}{list(i)}: before={a[i]!r}, after={b[i]!r}"

    # ---- files -------------------------------------------------------------------------------------------
    def load(self, path: Path) -> Any:
        suf = path.suffix
        if suf == ".json":
            return json.loads(path.read_text())
        if suf == ".jsonl":
            return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if suf in (".yaml", ".yml"):
            return yaml.safe_load(path.read_text())
        if suf == ".csv":
            rows = list(csv.reader(io.StringIO(path.read_text())))
            if not rows:
                return []
            header = rows[0]
            return {"header": header, "rows": [dict(zip(header, r)) for r in rows[1:]]}
        if suf == ".npz":
            with np.load(path, allow_pickle=True) as z:
                return {k: z[k] for k in z.files}
        if suf == ".npy":
            return np.load(path, allow_pickle=True)
        if suf == ".pt":
            import torch

            return to_numpy(torch.load(path, map_location="cpu", weights_only=False))
        if suf in (".txt", ".md", ".log"):
            return self.text(path.read_text())
        return path.read_bytes()

    def file(self, a: Path, b: Path, rel: str) -> str | None:
        try:
            va = self.load(a)
        except Exception as e:  # noqa: BLE001
            return f"{rel}: before unreadable ({e})"
        try:
            vb = self.load(b)
        except Exception as e:  # noqa: BLE001
            return f"{rel}: after unreadable ({e})"
        if isinstance(va, bytes):
            return None if va == vb else f"{rel}: bytes differ ({len(va)} vs {len(vb)} bytes)"
        if a.suffix == ".csv":
            # ignored columns: the IGNORED_KEYS
            for rows in (va["rows"], vb["rows"]):
                for r in rows:
                    for k in list(r):
                        if k in IGNORED_KEYS:
                            del r[k]
            for hdr in (va["header"], vb["header"]):
                hdr[:] = [h for h in hdr if h not in IGNORED_KEYS]
            for h in list(va["header"]):
                new = RENAMED_KEYS.get(h)
                if h not in vb["header"] and new in vb["header"] and new not in va["header"]:
                    self.renamed.add(f"{h}->{new}")
                    vb["header"] = [h if x == new else x for x in vb["header"]]
                    vb["rows"] = [{(h if k == new else k): v for k, v in r.items()} for r in vb["rows"]]
            # columns only in AFTER are reported as added (rows: by the dict comparison); order and removals count
            self.added += [f"{rel} column {h}" for h in vb["header"] if h not in va["header"]]
            vb["header"] = [h for h in vb["header"] if h in va["header"]]
            vb["rows"] = [{k: v for k, v in r.items() if k in va["header"]} for r in vb["rows"]]
            self.added = list(dict.fromkeys(self.added))
        return self.value(va, vb, rel)


def to_numpy(obj: Any) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu().numpy()
    if isinstance(obj, dict):
        return {k: to_numpy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_numpy(v) for v in obj]
    return obj


def short(v: Any, n: int = 90) -> str:
    s = repr(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def compare_command(before: Path, after: Path, differ: Differ) -> str:
    if not (after / "_rc").exists():
        return "failed: not run in after"
    rc_a, rc_b = (before / "_rc").read_text().strip(), (after / "_rc").read_text().strip()
    if rc_a != rc_b:
        err = [ln for ln in differ.text((after / "_stderr").read_text()) if ln.strip()]
        return f"failed: exit code before={rc_a}, after={rc_b}" + (f" ({err[-1][:160]})" if err else "")
    differ.added = []
    differ.renamed = set()
    # stdout: JSON compared as data when it is one JSON document, otherwise masked text line by line
    for stream in ("_stdout", "_stderr"):
        ia, ib = differ.stream((before / stream).read_text()), differ.stream((after / stream).read_text())
        for i in range(max(len(ia), len(ib))):
            x = ia[i] if i < len(ia) else "<nothing>"
            y = ib[i] if i < len(ib) else "<nothing>"
            if isinstance(x, str) or isinstance(y, str):
                if x != y:
                    return (
                        f"DIFFERENT: {stream[1:]} item {i + 1}: before={short(x, 150)}, after={short(y, 150)}"
                    )
            else:
                d = differ.value(x[0], y[0], f"{stream[1:]}#{i + 1}")
                if d:
                    return f"DIFFERENT: {d}"
    files_a = {str(p.relative_to(before)) for p in before.rglob("*") if p.is_file() and p.name not in META}
    files_b = {str(p.relative_to(after)) for p in after.rglob("*") if p.is_file() and p.name not in META}
    for rel in sorted(files_a - files_b):
        if not rel.endswith(IGNORED_SUFFIXES):
            return f"DIFFERENT: file {rel} missing in after"
    for rel in sorted(files_a & files_b):
        if rel.endswith(IGNORED_SUFFIXES):
            continue
        d = differ.file(before / rel, after / rel, rel)
        if d:
            return f"DIFFERENT: {d}"
    extra = sorted(files_b - files_a) + [f"key {k}" for k in differ.added]
    notes = [f"{len(files_a & files_b)} files"]
    if differ.renamed:
        notes.append("renamed keys " + ", ".join(sorted(differ.renamed)))
    if extra:
        notes.append(f"after adds {len(extra)}: {', '.join(extra[:3])}{' ...' if len(extra) > 3 else ''}")
    return f"same ({'; '.join(notes)})"


def main() -> int:
    before, after = Path(sys.argv[1]), Path(sys.argv[2])
    differ = Differ(path_masks(before, after))
    names = [
        line.split("|", 1)[0].strip()
        for line in (Path(__file__).parent / "commands.list").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    print(f"before: {(before / '_tree').read_text().strip() if (before / '_tree').exists() else before}")
    print(f"after:  {(after / '_tree').read_text().strip() if (after / '_tree').exists() else after}")
    n_bad = 0
    timing = []
    for name in names:
        a, b = before / name, after / name
        if not (a / "_rc").exists():
            res = "failed: not run in before"
        else:
            try:
                res = compare_command(a, b, differ)
            except Exception as e:  # noqa: BLE001
                res = f"failed: comparer error {type(e).__name__}: {e}"
        n_bad += not res.startswith("same")
        print(f"{name:<24} {res}")
        ta = (a / "_time").read_text().strip() if (a / "_time").exists() else "-"
        tb = (b / "_time").read_text().strip() if (b / "_time").exists() else "-"
        timing.append((name, ta, tb))
    print(f"\n{len(names) - n_bad}/{len(names)} same")
    print("\nwall time (s)            before    after")
    tot = [0.0, 0.0]
    for name, ta, tb in timing:
        print(f"{name:<24} {ta:>7}  {tb:>7}")
        for j, t in enumerate((ta, tb)):
            tot[j] += float(t) if t != "-" else 0.0
    print(f"{'total':<24} {tot[0]:>7.1f}  {tot[1]:>7.1f}")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
