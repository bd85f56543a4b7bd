"""A corpus of bad files (issue 20): every command that reads a user's file answers an empty, truncated,
random-bytes, wrong-kind or unparsable one with exit code 2 and ONE ``deepcollapse: error:`` line naming the
file, no traceback, and leaves every file as it was (nothing written, nothing new).

The bad files are made here from small valid ones (a 4-step DUFM run, a 2-step search, a network config), so
the corpus follows the formats as they change.
"""

from __future__ import annotations

import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from deepcollapse.cli import main

torch.set_num_threads(1)

RANDOM = np.random.default_rng(20).bytes(300)  # not a zip, not a pickle, not UTF-8


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _tensor_file(tmp: Path) -> bytes:
    """A valid PyTorch file of the wrong kind: a bare tensor."""
    torch.save(torch.ones(3), tmp / "tensor.pt")
    return (tmp / "tensor.pt").read_bytes()


def _npy(tmp: Path) -> bytes:
    np.save(tmp / "a.npy", np.ones(3))
    return (tmp / "a.npy").read_bytes()


# ------------------------------------------------------------------------------------------------------------
# valid sources, made once per module
# ------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from deepcollapse.landscape.solution_file import save_solution
    from deepcollapse.nets.config import NetConfig

    root = tmp_path_factory.mktemp("valid")
    run = root / "run"
    tiny = ["--classes", "3", "--n", "2", "--layers", "2", "--width", "4", "--lam", "0.01", "--lr", "0.3"]
    tiny += ["--runs", "1", "--log-every", "2", "--checkpoint-every", "2", "--no-progress"]
    search = root / "search"
    args = ["dufm", "search", "--classes", "3", "--layers", "2", "--n", "2", "--width", "4", "--runs", "2"]
    args += ["--steps", "2", "--rounds", "1", "--keep", "1", "--no-progress", "--out", str(search)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEEPCOLLAPSE_KERNEL", "numpy")  # 4 steps: not worth numba's seconds of compiling
        assert main(["dufm", "train", *tiny, "--steps", "4", "--out", str(run)]) == 0
        assert main(args) == 0
    net = root / "net"
    net.mkdir()
    NetConfig(dataset="digits", layers=2, width=12, device="cpu").to_yaml(net / "config.yaml")
    torch.save({"model": {}, "optimizer": {}, "state": {"epoch": 1}}, net / "checkpoint.pt")
    (net / "metrics.jsonl").write_text('{"epoch": 0, "loss": 1.0}\n{"epoch": 1, "loss": 0.5}\n')
    rng = np.random.default_rng(0)
    np.savez(root / "features.npz", features=rng.normal(size=(6, 4)), labels=np.repeat(np.arange(3), 2))
    save_solution(
        root / "solution.npz",
        rng.normal(size=(4, 6)),
        [rng.normal(size=(4, 4)), rng.normal(size=(3, 4))],
        n=2,
        lam_h=0.01,
        lam_w=[0.01, 0.01],
    )
    (root / "config.yaml").write_text((run / "config.yaml").read_text())
    (root / "sweep.yaml").write_text("kind: dufm\nbase: {classes: 3, n: 2, layers: 2, steps: 2}\n")
    return {"root": root, "run": run, "search": search, "net": net}


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------------------------------------------------------------------
# the corpus: (case id, the file that is bad relative to the case folder, its bytes, the command)
# ------------------------------------------------------------------------------------------------------------
YAML_SYNTAX = b"classes: 3\nlayers: 2\nn: 2: 3\n"  # 'mapping values are not allowed here', line 3
YAML_LIST = b"- classes\n- 3\n"
YAML_TAB = b"classes: 3\n\tlayers: 2\n"


def _yaml_bad() -> list[tuple[str, Callable[[Path, bytes], bytes]]]:
    return [
        ("empty", lambda tmp, ok: b""),
        ("syntax", lambda tmp, ok: YAML_SYNTAX),
        ("tab", lambda tmp, ok: YAML_TAB),
        ("list", lambda tmp, ok: YAML_LIST),
        ("random", lambda tmp, ok: RANDOM),
        ("comments", lambda tmp, ok: b"# nothing here\n"),
    ]


def _npz_bad() -> list[tuple[str, Callable[[Path, bytes], bytes]]]:
    return [
        ("empty", lambda tmp, ok: b""),
        ("truncated", lambda tmp, ok: _truncated(ok)),
        ("random", lambda tmp, ok: RANDOM),
        ("npy", lambda tmp, ok: _npy(tmp)),
        ("pickle", lambda tmp, ok: pickle.dumps({"features": [1.0]})),
        ("yaml", lambda tmp, ok: YAML_SYNTAX),
    ]


def _torch_bad() -> list[tuple[str, Callable[[Path, bytes], bytes]]]:
    return [
        ("empty", lambda tmp, ok: b""),
        ("truncated", lambda tmp, ok: _truncated(ok)),
        ("random", lambda tmp, ok: RANDOM),
        ("tensor", lambda tmp, ok: _tensor_file(tmp)),
        ("npy", lambda tmp, ok: _npy(tmp)),
    ]


def _jsonl_bad() -> list[tuple[str, Callable[[Path, bytes], bytes]]]:
    return [
        ("random", lambda tmp, ok: RANDOM),
        ("middle", lambda tmp, ok: b"not json\n" + ok),
        ("list", lambda tmp, ok: b"[1, 2]\n" + ok),
    ]


def _json_bad() -> list[tuple[str, Callable[[Path, bytes], bytes]]]:
    return [
        ("empty", lambda tmp, ok: b""),
        ("truncated", lambda tmp, ok: _truncated(ok)),
        ("random", lambda tmp, ok: RANDOM),
        ("list", lambda tmp, ok: b"[1, 2]\n"),
    ]


# (command id, source folder, bad file in it, corruptions, argv: "{d}" = the case's copy of the folder)
SEARCH = ["dufm", "search", "--classes", "3", "--layers", "2", "--n", "2", "--width", "4", "--runs", "2"]
SEARCH += ["--steps", "2", "--rounds", "1", "--keep", "1", "--no-progress", "--out", "{d}"]
NEW = ["--out", "{d}/new"]  # must not be created
OTHER = [("other kind", None)]  # a valid .npz of the other kind: metrics features <-> solution arrays
COMMANDS: list[tuple[str, str, str, list, list[str]]] = [
    ("metrics", "root", "features.npz", _npz_bad(), ["metrics", "{d}/features.npz"]),
    ("metrics", "root", "features.npz", OTHER, ["metrics", "{d}/features.npz"]),
    ("theory-check", "root", "solution.npz", _npz_bad() + OTHER, ["theory", "check", "{d}/solution.npz"]),
    ("landscape-npz", "root", "solution.npz", _npz_bad(), ["dufm", "landscape", "{d}/solution.npz"]),
    ("landscape-run-config", "run", "config.yaml", _yaml_bad(), ["dufm", "landscape", "{d}"]),
    ("landscape-run-params", "run", "params.pt", _torch_bad(), ["dufm", "landscape", "{d}"]),
    ("landscape-search", "search", "solutions/rank01.npz", _npz_bad()[:3], ["dufm", "landscape", "{d}"]),
    ("analyze-config", "run", "config.yaml", _yaml_bad(), ["dufm", "analyze", "{d}"]),
    ("analyze-params", "run", "params.pt", _torch_bad(), ["dufm", "analyze", "{d}"]),
    ("analyze-metrics", "run", "metrics.jsonl", _jsonl_bad(), ["dufm", "analyze", "{d}"]),
    ("resume-config", "run", "config.yaml", _yaml_bad(), ["dufm", "resume", "{d}", "--no-progress"]),
    ("resume-checkpoint", "run", "checkpoint.pt", _torch_bad(), ["dufm", "resume", "{d}", "--no-progress"]),
    ("resume-metrics", "run", "metrics.jsonl", _jsonl_bad(), ["dufm", "resume", "{d}", "--no-progress"]),
    ("net-resume-config", "net", "config.yaml", _yaml_bad(), ["net", "resume", "{d}", "--no-progress"]),
    ("net-resume-ckpt", "net", "checkpoint.pt", _torch_bad(), ["net", "resume", "{d}", "--no-progress"]),
    ("net-resume-metrics", "net", "metrics.jsonl", _jsonl_bad(), ["net", "resume", "{d}", "--no-progress"]),
    ("train", "root", "config.yaml", _yaml_bad(), ["dufm", "train", "--config", "{d}/config.yaml", *NEW]),
    ("net-train", "root", "config.yaml", _yaml_bad(), ["net", "train", "--config", "{d}/config.yaml", *NEW]),
    ("sweep", "root", "sweep.yaml", _yaml_bad(), ["sweep", "{d}/sweep.yaml", "--out", "{d}/new"]),
    ("search-resume-state", "search", "search.json", _json_bad(), SEARCH),
    ("search-resume-pool", "search", "pool.npz", _npz_bad()[:3], SEARCH),
]  # fmt: skip

CASES = [
    pytest.param(command, key, rel, make, argv, id=f"{command}-{name}")
    for command, key, rel, corruptions, argv in COMMANDS
    for name, make in corruptions
]


@pytest.mark.parametrize(("command", "key", "rel", "make", "argv"), CASES)
def test_bad_file_gets_one_line_and_changes_nothing(sources, tmp_path, capsys, command, key, rel, make, argv):
    case = tmp_path / "case"
    src = sources[key]
    shutil.copytree(src, case, ignore=shutil.ignore_patterns("valid*"))
    # with a good previous checkpoint a damaged one is resumed from it (test_checkpoint_integrity.py);
    # without one, the damage is the one-line error this corpus checks
    (case / "checkpoint.prev.pt").unlink(missing_ok=True)
    bad = case / rel
    if make is None:  # OTHER
        other = "solution.npz" if rel == "features.npz" else "features.npz"
        data = (sources["root"] / other).read_bytes()
    else:
        data = make(tmp_path, bad.read_bytes())
    bad.write_bytes(data)
    before = _snapshot(case)
    code = main([word.replace("{d}", str(case)) for word in argv])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("deepcollapse: error: "), err
    assert str(bad) in lines[0], lines[0]
    assert _snapshot(case) == before  # nothing written, overwritten or added


def test_yaml_syntax_error_shows_the_parser_message_and_line(sources, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(sources["run"], run)
    (run / "config.yaml").write_bytes(YAML_SYNTAX)
    assert main(["dufm", "analyze", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'config.yaml'} line 3, column 5: mapping values are not allowed here" in err
    assert "no config.yaml" not in err


def test_random_bytes_to_metrics_give_no_pickle_advice(sources, tmp_path, capsys):
    f = tmp_path / "x.npz"
    f.write_bytes(b"\x80\x04" + RANDOM)  # looks like a pickle
    assert main(["metrics", str(f)]) == 2
    err = capsys.readouterr().err
    assert "allow_pickle" not in err and "Python pickle" in err


def test_empty_checkpoint_says_what_to_do(sources, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(sources["run"], run)
    (run / "checkpoint.prev.pt").unlink()  # no previous checkpoint to resume from
    (run / "checkpoint.pt").write_bytes(b"")
    assert main(["dufm", "resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'checkpoint.pt'}: not a readable PyTorch checkpoint (empty file); delete it" in err
