"""The reader contract, for every registered reader over every fixture tree and the shared real trees.

For each folder of each tree (:func:`_folders`):

* every reader declines quietly what is not its kind: ``guess_can_open`` answers a bool and
  never raises (nor does a tree reader's ``claim_tree``), also for a file and a missing path;
* the folder the first reader claims loads (:func:`compare.loaders.load_run`) as a run of one of
  that reader's kinds -- a tree whose options cannot tell its dump folders apart may refuse with
  an :class:`OptionError` naming it;
* when the run was read from that very folder, every tensor file on disk -- counted here from the
  file names alone, not by the readers' rules (:func:`_is_tensor_file`) -- is one record: the file
  of exactly one operator (or one overflow record), or listed in ``run.skipped`` with its reason;
  a file that holds one tensor is the file of at most one tensor record;
* nothing is unnamed: every operator and every tensor has its name, and a tensor's operator name
  is its operator's.

The shared trees (``../shared``: ``real``, ``mindspore-real``, ``msprobe-real/trees``,
``real_device``, ``cases/*/left|right``) are skipped with a message when ``../shared`` is absent.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT, SHARED

from compare.errors import CompareError, OptionError
from compare.loaders import OpenRequest, Reader, TreeReader, load_run, readers
from compare.loaders.selection import Candidate, Selection
from compare.records import Run, TensorKind

FIXTURES = ROOT / "fixtures"

#: Suffixes of files that hold one tensor each (golden .npy / .pb / .quant, MindSpore .bin / .npy, msprobe .pt / .npy).
_ONE_TENSOR = frozenset({".npy", ".bin", ".pt", ".pb", ".quant"})
#: Metadata suffixes, never tensor files (statistics CSVs, JSON, text, graphs).
_METADATA = frozenset({".csv", ".json", ".txt", ".md", ".ir", ".log", ".expected", ".py"})
#: ``{op_type}.{op_name}.{number}.{number}...``: an Ascend dump file (or an overflow record).
_ASCEND = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[0-9]+\.[0-9]+")
#: A name a dump tool hashed (resolved through ``mapping.csv``).
_HASHED = re.compile(r"[0-9]+(?:\.npy)?")


def _is_tensor_file(name: str) -> bool:
    """Whether a file of this name holds tensor data, by its name alone (independent of the readers)."""
    suffix = os.path.splitext(name)[1]
    if suffix in _ONE_TENSOR or _HASHED.fullmatch(name):
        return True
    return suffix not in _METADATA and _ASCEND.match(name) is not None


def _trees() -> list[Path]:
    trees = sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    if SHARED.is_dir():
        trees += [SHARED / name for name in ("real", "mindspore-real", "msprobe-real/trees", "real_device")]
        trees += sorted(p for side in ("left", "right") for p in (SHARED / "cases").glob(f"*/{side}"))
    return trees


def _tree_id(tree: Path) -> str:
    return str(tree.relative_to(ROOT if tree.is_relative_to(ROOT) else SHARED.parent))


def _folders(tree: Path) -> list[Path]:
    """Every folder of the tree (itself included), in walk order."""
    out = []
    for dirpath, dirnames, _ in os.walk(tree):
        dirnames.sort()
        out.append(Path(dirpath))
    return out


def _declines_quietly(path: Path) -> Reader | None:
    """Ask every reader about ``path``; each must answer without raising. The first claim's reader."""
    claimed = None
    request = OpenRequest(root=path, selection=Selection())
    for reader in readers():
        answer = reader.guess_can_open(path)
        assert isinstance(answer, bool), f"{reader.name}.guess_can_open({path}) gave {answer!r}, not a bool"
        if isinstance(reader, TreeReader):
            found = reader.claim_tree(path, request, [])
            assert found is None or (found and all(isinstance(c, Candidate) for c in found)), \
                f"{reader.name}.claim_tree({path}) gave {found!r}"
        if answer and claimed is None:
            claimed = reader
    return claimed


def _check_named(run: Run) -> None:
    for key, op in run.ops.items():
        assert isinstance(op.name, str) and op.name and op.name == key, f"{run.path}: op {key!r} named {op.name!r}"
        assert op.op_type is None or (isinstance(op.op_type, str) and op.op_type), f"{run.path}: {key} op_type"
        for kind in TensorKind:
            for ref in op.tensors(kind):
                assert ref.op_name == op.name and ref.kind is kind and ref.index >= 0, \
                    f"{run.path}: tensor {ref.tensor_id} listed under op {op.name!r} as {kind.value}"


def _check_files(run: Run, folder: Path) -> int:
    """Every tensor file of the run's folders is one record or skipped (module doc); how many there were."""
    ops_of: Counter[Path] = Counter()
    refs_of: Counter[Path] = Counter()
    for op in run.ops.values():
        for path in {Path(p) for p in (op.path, *op.files)}:
            ops_of[path] += 1
        for kind in TensorKind:
            for ref in op.tensors(kind):
                refs_of[Path(ref.path)] += 1
    overflow = {Path(record.path) for record in run.overflow}
    skipped = {Path(path) for path, _ in run.skipped}
    folders = {folder} | {p.parent for p in (*ops_of, *refs_of) if p.parent.is_relative_to(folder)}
    counted = 0
    for where in sorted(folders):
        for name in sorted(os.listdir(where)):
            path = where / name
            if not path.is_file() or not _is_tensor_file(name):
                continue
            counted += 1
            owners = ops_of[path] + (path in overflow)
            assert owners == 1 or (owners == 0 and path in skipped), (
                f"{path}: the file of {owners} records" + ("" if owners else " and not in run.skipped"))
            if os.path.splitext(name)[1] in _ONE_TENSOR:
                assert refs_of[path] <= 1, f"{path}: one tensor, {refs_of[path]} tensor records"
    return counted


@pytest.mark.parametrize("tree", _trees(), ids=_tree_id)
def test_every_reader_over_every_folder(tree: Path) -> None:
    if not tree.exists():
        pytest.skip(f"{tree} missing (../shared not available?)")
    read = 0
    for folder in _folders(tree):
        reader = _declines_quietly(folder)
        if reader is None:
            continue
        try:
            run = load_run(folder)
        except OptionError as exc:
            assert str(folder) in str(exc), f"{folder}: {exc}"
            continue
        assert run.kind in reader.kinds, f"{folder}: claimed by {reader.name}, read as a {run.kind.value} run"
        _check_named(run)
        if run.path == folder:
            read += 1
            _check_files(run, folder)
    assert read, f"{tree}: no folder of the tree was read"


def test_tensor_files_are_counted_independently() -> None:
    """The contract counts what it checks: a golden folder of 8 files, an Ascend leaf of 5, an
    msprobe folder's dump_tensor_data (159 .pt files) when ../shared is there."""
    golden = FIXTURES / "demo" / "golden"
    assert _check_files(load_run(golden), golden) == len(os.listdir(golden)) == 8
    leaf = FIXTURES / "demo" / "npu" / "20240101120000" / "0" / "demo_net" / "1" / "0"
    assert _check_files(load_run(leaf), leaf) == 5
    msprobe = SHARED / "msprobe-real" / "trees" / "t_L0_base" / "step0" / "proc24565"
    if msprobe.is_dir():
        assert _check_files(load_run(msprobe), msprobe) == len(os.listdir(msprobe / "dump_tensor_data")) == 159


def test_readers_decline_files_and_missing_paths(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a dump")
    for path in (tmp_path / "notes.txt", tmp_path / "missing", tmp_path):
        assert _declines_quietly(path) is None
    with pytest.raises(CompareError):
        load_run(tmp_path)
