"""Real MindSpore dumps, checked against an independent float64 twin (issue 12).

The trees under ``fixtures/mindspore_real/`` were written by MindSpore 2.10.0 itself (CPU wheel,
graph mode, O0, ``saved_data: tensor``, ``file_format: npy``) through
``scripts/make_mindspore_dumps.py``; the same checks run on ``../shared/mindspore-real/`` when it
is present (skipped with a message otherwise). Nothing here uses the product's kernels or readers
to build the expectation: the files are listed and parsed from their names (and ``mapping.csv``)
below, arrays are read with ``numpy.load`` and every metric is recomputed in plain float64 numpy.

Checked for every comparison:
- one row per tensor file on each side (``{digits}.npy`` files counted under their real names);
- every metric of a compared row within print precision (1e-6 absolute or relative) of the twin;
- the Shape column is the ``.npy`` array's shape (``[]`` for a 0-D tensor);
- rows in execution order: the op sequence follows ``ms_execution_order_graph_N.csv`` for the
  listed ops, and the unlisted ones (Parameters, kernels whose ``-opN`` differs) by their first
  dump timestamp (on these trees both orders agree, which is checked first).
A statistics-only comparison of a MindSpore-format ``statistic.csv`` (an extra empty trailing
cell on every data row) must exit 0. The generator itself runs only when ``mindspore`` is
importable in the test's interpreter.
"""

from __future__ import annotations

import csv
import importlib.util
import math
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import FIXTURES, ROOT, shared_path

from compare.runs.folders import run_network
from compare.reports.frame import to_dataframe

REAL = FIXTURES / "mindspore_real"
GENERATOR = ROOT / "scripts" / "make_mindspore_dumps.py"
EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)
PRINT_TOL = 1e-6
METRICS = ("CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError", "RelativeEuclideanDistance",
           "KullbackLeiblerDivergence", "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError",
           "MeanRelativeError", "LeftMean", "LeftStd", "RightMean", "RightStd")
#: Metrics the reference computes for two bool tensors; the others are "not computed" (NaN).
BOOL_METRICS = ("CosineSimilarity", "RelativeEuclideanDistance")
ORDER_HEADER = "NodeExecutionOrder-FullNameWithScope"


# --------------------------------------------------------------------------------------------
# the dump tree, read independently of the product
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DumpFile:
    """One tensor file of a MindSpore O0/O1 npy dump, described by its (real) file name:
    ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}.{io}.{slot}.{format}.{dtype}.npy``."""

    path: Path
    graph: int
    iteration: int
    op_type: str
    op_name: str
    timestamp: int
    io: str
    slot: int

    @property
    def key(self) -> tuple[int, int, str, str, int]:
        return (self.graph, self.iteration, self.op_name, self.io, self.slot)


def parse_name(real_name: str) -> tuple[str, str, int, str, int]:
    """``(op_type, op_name, timestamp, io, slot)`` of a real file name; the op name may hold dots
    (it is everything between the type and the last seven fields)."""
    parts = real_name.split(".")
    assert parts[-1] == "npy" and len(parts) >= 10, real_name
    op_type, op_name = parts[0], ".".join(parts[1:-8])
    timestamp, io, slot = parts[-6], parts[-5], parts[-4]
    assert io in ("input", "output") and slot.isdigit() and timestamp.isdigit(), real_name
    return op_type, op_name, int(timestamp), io, int(slot)


def leaf_files(leaf: Path, graph: int, iteration: int) -> list[DumpFile]:
    """Every ``.npy`` of one ``{net}/{graph}/{iteration}`` folder; ``{digits}.npy`` files are named
    by the folder's ``mapping.csv`` (rows ``digits.npy,real name``, no header)."""
    mapping: dict[str, str] = {}
    if (leaf / "mapping.csv").is_file():
        with (leaf / "mapping.csv").open(newline="") as handle:
            mapping = {row[0]: row[1] for row in csv.reader(handle) if row}
    files = []
    for path in sorted(leaf.glob("*.npy")):
        real = mapping.get(path.name, path.name)
        assert not real.split(".")[0].isdigit(), f"{path} is not named in {leaf / 'mapping.csv'}"
        op_type, op_name, timestamp, io, slot = parse_name(real)
        files.append(DumpFile(path, graph, iteration, op_type, op_name, timestamp, io, slot))
    return files


def tree_files(tree: Path) -> list[DumpFile]:
    """Every tensor file of a ``rank_0/{net}/{graph}/{iteration}/`` tree (one rank)."""
    files: list[DumpFile] = []
    for leaf in sorted(tree.glob("rank_0/*/*/*")):
        if leaf.is_dir() and leaf.name.isdigit() and leaf.parent.name.isdigit():
            files += leaf_files(leaf, int(leaf.parent.name), int(leaf.name))
    assert files, f"no .npy files under {tree}"
    keys = [f.key for f in files]
    assert len(keys) == len(set(keys)), f"{tree}: two files with the same op, io and slot"
    return files


def order_file(tree: Path, graph: int) -> list[str]:
    """Kernel names of ``ms_execution_order_graph_{graph}.csv`` as file names spell them (``/`` ->
    ``_``), without the header line."""
    path = tree / "rank_0" / "execution_order" / f"ms_execution_order_graph_{graph}.csv"
    lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    return [line.replace("/", "_") for line in lines if line != ORDER_HEADER]


# --------------------------------------------------------------------------------------------
# the float64 twin
# --------------------------------------------------------------------------------------------

def _rel_terms(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``|x/y - 1|`` where ``|y| > eps64``, else 0 (the masked relative error of the manual)."""
    safe = np.where(np.abs(y) > EPS64, y, 1.0)
    return np.where(np.abs(y) > EPS64, np.abs(x / safe - 1.0), 0.0)


def _kl_normalise(a: np.ndarray) -> np.ndarray:
    low, high = a.min(), a.max()
    if high - low != 0:
        a = (a - low) / (high - low)
    return np.maximum(a, EPS32)


def twin_metrics(left: np.ndarray, right: np.ndarray) -> dict[str, float | None]:
    """Every metric of ``left`` vs golden ``right`` in float64 numpy; None = not computed.

    Formulas (x = left, y = right, both flattened to float64):
    cosine Σxy/(‖x‖‖y‖) capped at 1, 1 for a scalar-like left shape (every dimension 1, or 0-D)
    and for two all-zero sides, None when one side alone is all zero; max |x-y|; Σ, max and mean
    of ``_rel_terms``; RED sqrt(Σ(x-y)²/Σy²), 0 when Σy² is 0; KL of min-max normalised,
    eps32-clamped, sum-normalised x and y (0 when below eps64); mean |x-y|; sqrt(mean (x-y)²);
    population mean and std of each side. Two bool tensors: cosine on 0/1, RED 0 when the golden
    has no True and not computed otherwise (as the reference); the rest not computed.
    """
    x = np.asarray(left, dtype=np.float64).reshape(-1)
    y = np.asarray(right, dtype=np.float64).reshape(-1)
    out: dict[str, float | None] = {name: None for name in METRICS}
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # NaN/inf data give nan, as printed
        warnings.simplefilter("ignore", RuntimeWarning)
        scalar = all(d == 1 for d in np.shape(left))
        nx, ny = math.sqrt(float(np.sum(x * x))), math.sqrt(float(np.sum(y * y)))
        if scalar or (nx <= EPS64 and ny < EPS64):
            cosine: float | None = 1.0
        elif math.sqrt(nx) <= EPS64 or math.sqrt(ny) <= EPS64:
            cosine = None
        else:
            cosine = min(float(np.sum((x / nx) * (y / ny))), 1.0)
        sy = float(np.sum(y * y))
        red = 0.0 if math.sqrt(sy) <= EPS64 else math.sqrt(float(np.sum((x - y) ** 2)) / sy)
        out.update(CosineSimilarity=cosine, RelativeEuclideanDistance=red)
        if left.dtype == np.bool_ and right.dtype == np.bool_:
            # the reference: RED is 0 when the golden has no True, else it fails on bool
            # subtraction (not computed); the other metrics do not take bools
            out["RelativeEuclideanDistance"] = None if right.any() else 0.0
            return out
        p, q = _kl_normalise(x), _kl_normalise(y)
        big_p, big_q = p / p.sum(), q / q.sum()
        kl = float(np.sum(big_p * np.log(big_p / big_q)))
        rel = _rel_terms(x, y)
        out.update(
            MaxAbsoluteError=float(np.max(np.abs(x - y))),
            AccumulatedRelativeError=float(np.sum(rel)),
            KullbackLeiblerDivergence=0.0 if abs(kl) < EPS64 else kl,
            MeanAbsoluteError=float(np.mean(np.abs(x - y))),
            RootMeanSquareError=math.sqrt(float(np.mean((x - y) ** 2))),
            MaxRelativeError=float(np.max(rel)),
            MeanRelativeError=float(np.mean(rel)),
            LeftMean=float(np.mean(x)), LeftStd=float(np.std(x)),
            RightMean=float(np.mean(y)), RightStd=float(np.std(y)),
        )
    return out


def within_print_precision(ours: float, twin: float | None) -> bool:
    """Equal to six decimals: 1e-6 absolute or 1e-6 relative; NaN (not computed) == None."""
    if twin is None or (isinstance(twin, float) and math.isnan(twin)):
        return math.isnan(ours)
    if math.isnan(ours):
        return False
    return abs(ours - twin) <= PRINT_TOL or abs(ours - twin) <= PRINT_TOL * abs(twin)


# --------------------------------------------------------------------------------------------
# running the product and matching its rows to the files
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Compared:
    """One comparison: the report as a DataFrame and the files of both sides."""

    frame: pd.DataFrame
    left: dict[tuple[int, int, str, str, int], DumpFile]
    right: dict[tuple[int, int, str, str, int], DumpFile]
    left_tree: Path
    right_tree: Path


def _row_part(row: pd.Series, files: dict) -> tuple[int, int]:
    """(graph, iteration) of a row: its columns when parts were compared in turn, else the only
    part of the side."""
    parts = {(k[0], k[1]) for k in files}
    graphs = {p[0] for p in parts}
    if "Graph" in row.index and not pd.isna(row["Graph"]):
        return int(row["Graph"]), int(row["Iteration"])
    if "Iteration" in row.index and not pd.isna(row["Iteration"]) and len(graphs) == 1:
        return next(iter(graphs)), int(row["Iteration"])
    assert len(parts) == 1, f"rows carry no graph/iteration but the tree has parts {sorted(parts)}"
    return next(iter(parts))


def row_key(row: pd.Series, side: str, files: dict) -> tuple[int, int, str, str, int] | None:
    """The file key a row names on one side (``LeftOp``/``RightOp`` + io + slot), or None."""
    op = row[f"{side}Op"]
    if op == "*" or pd.isna(op):
        return None
    io, slot = str(row["TensorIndex"]).rsplit(":", 2)[1:]
    graph, iteration = _row_part(row, files)
    return (graph, iteration, op, io, int(slot))


def compare_trees(left: Path, right: Path, **select: object) -> Compared:
    result = run_network(left, right, **select)
    left_files = {f.key: f for f in tree_files(left)}
    right_files = {f.key: f for f in tree_files(right)}
    return Compared(to_dataframe(result), left_files, right_files, left, right)


def _one_row_per_file(cmp: Compared) -> None:
    for side, files in (("Left", cmp.left), ("Right", cmp.right)):
        seen: dict[tuple, int] = {}
        for _, row in cmp.frame.iterrows():
            key = row_key(row, side, files)
            if key is not None:
                seen[key] = seen.get(key, 0) + 1
        missing = [files[k].path.name for k in files if k not in seen]
        doubled = [k for k, n in seen.items() if n > 1]
        unknown = [k for k in seen if k not in files]
        assert not missing, f"{side}: {len(missing)} of {len(files)} files have no row, e.g. {missing[:3]}"
        assert not doubled, f"{side}: {len(doubled)} files have several rows, e.g. {doubled[:3]}"
        assert not unknown, f"{side}: {len(unknown)} rows name no file, e.g. {unknown[:3]}"
    tensor_rows = cmp.frame[cmp.frame.TensorIndex.astype(bool)]
    paired = int((tensor_rows.Status == "compared").sum()) + int((tensor_rows.Status == "not comparable").sum())
    assert len(tensor_rows) == len(cmp.left) + len(cmp.right) - paired


def _metrics_match_twin(cmp: Compared) -> int:
    """Every compared row against the twin; returns how many rows were checked."""
    bad: list[str] = []
    checked = 0
    for _, row in cmp.frame[cmp.frame.Status == "compared"].iterrows():
        left = np.load(cmp.left[row_key(row, "Left", cmp.left)].path)
        right = np.load(cmp.right[row_key(row, "Right", cmp.right)].path)
        twin = twin_metrics(left, right)
        names = BOOL_METRICS if left.dtype == np.bool_ and right.dtype == np.bool_ else METRICS
        for name in names:
            if name in row.index and not within_print_precision(float(row[name]), twin[name]):
                bad.append(f"{row.TensorIndex} {name}: ours {row[name]!r}, float64 {twin[name]!r}")
        checked += 1
    assert not bad, f"{len(bad)} metric cells differ from float64, e.g.\n" + "\n".join(bad[:8])
    return checked


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _shapes_match(cmp: Compared, statuses: tuple[str, ...]) -> int:
    """The Shape of every row whose Status is in ``statuses`` is the ``.npy`` shape of its left
    file (of its right file when it has no left one). The two sides of a pair may differ in shape
    with the same element count: MindSpore's CPU dump gives a kernel input the shape of the
    tensor it reads, which differs across a Reshape or an inserted Cast (MatMul input ``(2,4,5,5)``
    in fp32, ``(8,25)`` under AMP)."""
    bad: list[str] = []
    checked = 0
    for _, row in cmp.frame[cmp.frame.Status.isin(statuses)].iterrows():
        key = row_key(row, "Left", cmp.left)
        side, files = ("Left", cmp.left) if key is not None else ("Right", cmp.right)
        key = key if key is not None else row_key(row, "Right", cmp.right)
        true = np.load(files[key].path, mmap_mode="r").shape
        shown = row["Shape"]
        if shown is None or (not isinstance(shown, list) and pd.isna(shown)) or tuple(shown) != true:
            bad.append(f"{row.TensorIndex} ({side}): Shape {shown!r}, the .npy holds {_shape_text(true)}")
        checked += 1
    assert not bad, f"{len(bad)} of {checked} Shape cells are not the .npy shape, e.g.\n" + "\n".join(bad[:8])
    return checked


def _expected_op_order(tree: Path, files: list[DumpFile], graph: int) -> list[str]:
    """The ops of one part in execution order: the ops listed in the order file in its order;
    each unlisted op (Parameters, kernels whose ``-opN`` differs) by its first dump timestamp,
    right after the listed op dumped last before it (before every listed op when none was),
    unlisted ops at the same place by timestamp."""
    first: dict[str, int] = {}
    for f in files:
        first[f.op_name] = min(first.get(f.op_name, f.timestamp), f.timestamp)
    order = order_file(tree, graph)
    listed = list(dict.fromkeys(name for name in order if name in first))
    after: dict[str | None, list[str]] = {}
    for name in sorted((n for n in first if n not in set(listed)), key=lambda n: first[n]):
        before = [op for op in listed if first[op] < first[name]]
        anchor = max(before, key=lambda op: first[op]) if before else None
        after.setdefault(anchor, []).append(name)
    expected = list(after.get(None, []))
    for op in listed:
        expected += [op, *after.get(op, [])]
    return expected


def _rows_in_execution_order(cmp: Compared) -> None:
    """On each side, the ops of the rows (first appearance, per part) are in execution order."""
    for side, tree, files in (("Left", cmp.left_tree, cmp.left), ("Right", cmp.right_tree, cmp.right)):
        by_part: dict[tuple[int, int], list[str]] = {}
        for _, row in cmp.frame.iterrows():
            key = row_key(row, side, files)
            if key is None:
                continue
            ops = by_part.setdefault(key[:2], [])
            if key[2] not in ops:
                ops.append(key[2])
        for part, ops in by_part.items():
            part_files = [f for k, f in files.items() if k[:2] == part]
            expected = _expected_op_order(tree, part_files, part[0])
            assert ops == expected, (
                f"{side} {tree.name} graph {part[0]} iteration {part[1]}: first wrong row "
                + next(f"{i}: {a} (expected {b})" for i, (a, b) in enumerate(zip(ops, expected)) if a != b))


# --------------------------------------------------------------------------------------------
# the committed real trees
# --------------------------------------------------------------------------------------------

PAIRS = {
    "base-perturb": ("base", "perturb", {}),
    "base-amp": ("base", "amp", {}),
    "graphs": ("graphs", "graphs", {"graph": "all", "iteration": "all"}),
    "long": ("long", "long_perturb", {}),
}


@pytest.fixture(scope="module", params=list(PAIRS))
def real_pair(request: pytest.FixtureRequest) -> Compared:
    left, right, select = PAIRS[request.param]
    return compare_trees(REAL / left, REAL / right, **select)


def test_fixture_trees_are_real_and_small() -> None:
    """The committed set: the trees the harness needs, MindSpore's own metadata, no machine
    path left in any text file, a few MB at most."""
    for name in ("base", "perturb", "amp", "graphs", "long", "long_perturb"):
        assert (REAL / name / "rank_0" / ".dump_metadata" / "data_dump.json").is_file(), name
        assert (REAL / name / "rank_0" / "execution_order").is_dir(), name
    assert list((REAL / "long").rglob("mapping.csv")), "the long-name tree has no mapping.csv"
    assert {(f.graph, f.iteration) for f in tree_files(REAL / "graphs")} == {(0, 0), (0, 1), (1, 1), (1, 2)}
    total = sum(p.stat().st_size for p in REAL.rglob("*") if p.is_file())
    assert total < 4_000_000, f"fixtures/mindspore_real holds {total} bytes"
    for path in REAL.rglob("*"):
        if path.is_file() and path.suffix != ".npy":
            text = path.read_bytes()
            for secret in (b"/tmp/", b"/work/", b"/home/", b"/root/"):
                assert secret not in text, f"{path} holds a machine path ({secret!r})"


def test_real_one_row_per_file(real_pair: Compared) -> None:
    _one_row_per_file(real_pair)


def test_real_metrics_match_float64(real_pair: Compared) -> None:
    assert _metrics_match_twin(real_pair) > 0


def test_real_shapes_are_npy_shapes(real_pair: Compared) -> None:
    assert _shapes_match(real_pair, ("compared",)) > 0


def test_real_left_only_rows_show_npy_shapes(tmp_path: Path) -> None:
    """A left tensor with no counterpart (its ops deleted from a copy of the right tree) still
    shows its own shape: ``[16,100]`` for the fc1 weight, ``[]`` for the 0-D loss. (A right-only
    row has no left tensor: its Shape is NaN, the reference's layout.)"""
    right = tmp_path / "perturb"
    shutil.copytree(REAL / "perturb", right)
    removed = [f.path for f in tree_files(right)
               if f.op_type == "Parameter" or f.op_type.startswith("SparseSoftmaxCrossEntropy")]
    for path in removed:
        path.unlink()
    cmp = compare_trees(REAL / "base", right)
    left_only = cmp.frame[cmp.frame.Status == "missing on right"]
    assert len(left_only) == len(removed)
    assert _shapes_match(cmp, ("missing on right",)) == len(removed)


def test_real_zero_d_and_nd_shapes_in_csv(tmp_path: Path) -> None:
    """The CLI's CSV writes 2-D weights as ``[16,100]`` and 0-D tensors as ``[]`` (not flat)."""
    out = tmp_path / "result.csv"
    proc = _vcompare("-l", REAL / "base", "-r", REAL / "perturb", "-o", out)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(out.open(newline="")))
    assert len(rows) == len(tree_files(REAL / "base"))
    by_index = {row["TensorIndex"]: row["Shape"] for row in rows}
    assert by_index["fc1_weight:output:0"] == "[16,100]"
    loss = next(k for k in by_index if "_loss_fn-" in k and k.startswith("Default_") and k.endswith(":output:0"))
    assert by_index[loss] == "[]"


#: base-amp is left out: in MindSpore's AMP graph the inserted Casts are numbered differently in
#: the order file and in the file names (``..._Cast-op0`` is listed first but its file is a
#: backward Cast dumped near the end), so "the listed op's place" is not its execution place.
ORDER_PAIRS = ("base-perturb", "graphs", "long")


@pytest.mark.parametrize("name", ORDER_PAIRS)
def test_real_rows_in_execution_order(name: str) -> None:
    left, right, select = PAIRS[name]
    _rows_in_execution_order(compare_trees(REAL / left, REAL / right, **select))


def test_real_amp_pairs_every_base_tensor() -> None:
    """fp32 vs MindSpore's own AMP (O2): every base tensor pairs with its ``_OutputTo32__``-scoped
    twin; the inserted Casts, and only they, are one-sided rows."""
    cmp = compare_trees(REAL / "base", REAL / "amp")
    frame = cmp.frame
    unpaired_left = frame[frame.Status == "missing on right"]
    assert unpaired_left.empty, f"{len(unpaired_left)} base tensors unpaired, e.g. {unpaired_left.TensorIndex.head(3).tolist()}"
    one_sided = frame[frame.Status == "missing on left"]
    assert set(one_sided.OpType) == {"Cast"}
    casts = [f for f in cmp.right.values() if f.op_type == "Cast"]
    assert len(one_sided) == len(casts)


# --------------------------------------------------------------------------------------------
# statistics: MindSpore's statistic.csv (trailing empty cell)
# --------------------------------------------------------------------------------------------

STAT_HEADER = ["Op Type", "Op Name", "Task ID", "Stream ID", "Timestamp", "IO", "Slot", "Data Size",
               "Data Type", "Shape", "Max Value", "Min Value", "Avg Value", "L2Norm Value"]


def write_mindspore_statistic_csv(tree: Path, out: Path) -> int:
    """A ``statistic.csv`` of the float tensors of ``tree`` as MindSpore's writer lays it out (the
    header has no trailing comma; every data row ends with one extra empty cell), in
    ``out/rank_0/{net}/0/0/``; returns the number of data rows."""
    files = [f for f in tree_files(tree) if (f.graph, f.iteration) == (0, 0)]
    net = next(tree.glob("rank_0/*/0/0")).parent.parent.name
    leaf = out / "rank_0" / net / "0" / "0"
    leaf.mkdir(parents=True)
    lines = [",".join(STAT_HEADER)]
    count = 0
    for f in files:
        a = np.load(f.path)
        if a.dtype.kind != "f":
            continue
        a64 = a.astype(np.float64)
        shape = '"(' + ",".join(str(d) for d in a.shape) + ')"'
        cells = [f.op_type, f.op_name, "0", "0", str(f.timestamp), f.io, str(f.slot), str(a.nbytes), str(a.dtype),
                 shape, repr(float(a64.max())), repr(float(a64.min())), repr(float(a64.mean())),
                 repr(float(np.sqrt(np.sum(a64 * a64))))]
        lines.append(",".join(cells) + ",")
        count += 1
    (leaf / "statistic.csv").write_text("\n".join(lines) + "\n")
    return count


def _vcompare(*args: object) -> subprocess.CompletedProcess[str]:
    code = "import sys; from compare.cli import main; main(sys.argv[1:])"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_mindspore_statistic_csv_statistics_only_exits_0(tmp_path: Path) -> None:
    """Statistics of base vs statistics of perturb, both in MindSpore's own statistic.csv layout:
    the comparison runs (exit 0), every row is read (none skipped) and a stats result is written."""
    rows_left = write_mindspore_statistic_csv(REAL / "base", tmp_path / "stats_base")
    rows_right = write_mindspore_statistic_csv(REAL / "perturb", tmp_path / "stats_perturb")
    out = tmp_path / "out"
    proc = _vcompare("-l", tmp_path / "stats_base", "-r", tmp_path / "stats_perturb", "-o", out)
    assert proc.returncode == 0, proc.stderr
    (result,) = sorted(out.glob("stats_result_*.csv"))
    data = list(csv.DictReader(result.open(newline="")))
    assert len(data) == rows_left == rows_right
    assert "skipp" not in proc.stderr.lower(), proc.stderr


def test_mindspore_statistic_csv_against_tensor_dump_exits_0(tmp_path: Path) -> None:
    """A MindSpore-format statistic.csv against the real tensor dump it describes: exit 0."""
    write_mindspore_statistic_csv(REAL / "base", tmp_path / "stats_base")
    proc = _vcompare("-l", tmp_path / "stats_base", "-r", REAL / "base", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert sorted((tmp_path / "out").glob("stats_result_*.csv"))


# --------------------------------------------------------------------------------------------
# ../shared/mindspore-real (skipped when absent)
# --------------------------------------------------------------------------------------------

SHARED_PAIRS = {
    "K-kernels": ("K_base_kernels", "K_perturb_kernels", {"iteration": "all"}),
    "L-longnames": ("L_base", "L_perturb", {}),
    "I-iterations": ("I_base_iter", "I_base_iter", {"iteration": "all"}),
}


@pytest.fixture(scope="module", params=list(SHARED_PAIRS))
def shared_pair(request: pytest.FixtureRequest) -> Compared:
    left, right, select = SHARED_PAIRS[request.param]
    return compare_trees(shared_path("mindspore-real", left), shared_path("mindspore-real", right), **select)


@pytest.mark.shared
def test_shared_real_one_row_per_file(shared_pair: Compared) -> None:
    _one_row_per_file(shared_pair)


@pytest.mark.shared
def test_shared_real_metrics_match_float64(shared_pair: Compared) -> None:
    assert _metrics_match_twin(shared_pair) > 0


@pytest.mark.shared
def test_shared_real_shapes_are_npy_shapes(shared_pair: Compared) -> None:
    assert _shapes_match(shared_pair, ("compared",)) > 0


@pytest.mark.shared
def test_shared_real_rows_in_execution_order(shared_pair: Compared) -> None:
    _rows_in_execution_order(shared_pair)


# --------------------------------------------------------------------------------------------
# the generator
# --------------------------------------------------------------------------------------------

def _load_generator():
    spec = importlib.util.spec_from_file_location("make_mindspore_dumps", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_generator_neutral_path_keeps_length(tmp_path: Path) -> None:
    gen = _load_generator()
    secret = str(tmp_path / "dump")
    (tmp_path / "a.ir").write_bytes(b"x " + secret.encode() + b"/rank_0 y")
    assert gen.scrub_paths(tmp_path, (secret,)) == 1
    text = (tmp_path / "a.ir").read_bytes()
    assert secret.encode() not in text and len(text) == len(secret) + 11
    assert gen.neutral_path(secret).startswith("/generated/") and len(gen.neutral_path(secret)) == len(secret)


def test_generator_without_mindspore_exits_2(tmp_path: Path) -> None:
    if importlib.util.find_spec("mindspore") is not None:
        pytest.skip("mindspore is importable here: the missing-MindSpore message cannot be shown")
    proc = subprocess.run([sys.executable, str(GENERATOR), str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "pip install 'vcompare[mindspore]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_generator_end_to_end(tmp_path: Path) -> None:
    """Runs MindSpore (base and the long-name net): real trees that compare one row per file."""
    if importlib.util.find_spec("mindspore") is None:
        pytest.skip("mindspore is not importable in this interpreter (pip install 'vcompare[mindspore]')")
    out = tmp_path / "dumps"
    proc = subprocess.run([sys.executable, str(GENERATOR), str(out), "--variants", "base,long"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    for name in ("base", "long"):
        cmp = compare_trees(out / name, out / name)
        _one_row_per_file(cmp)
        _metrics_match_twin(cmp)
