"""The manual's "How do I view a dump file?": tensors as text, one value per line.

:func:`to_text` takes dump files and ``.npy`` files (a file, a folder or a comma-separated list):

* a dump file gives ``{dumpfile}.{input|output}.{i}.txt`` per tensor;
* a ``.npy`` file gives ``{stem}.txt`` (``X.output.0.npy`` -> ``X.output.0.txt``, as in the manual).

Each file holds the tensor flattened in C order, one value per line, each value in the shortest
form that reads back to the same value of its dtype (numpy's round-trip repr: ``0.1`` for a
float16 0.1, ``nan``, ``-inf``); bool and UINT1 as ``0``/``1``; bf16 as the exact float32 value;
complex as ``(re+imj)``. Unless ``header=False`` the first line is a comment that
``numpy.loadtxt`` skips: ``# shape=[1,3,4,4] dtype=float16 format=NC1HWC0`` (no ``format`` for
``.npy`` files), so ``np.loadtxt(f, dtype=...).reshape(shape)`` restores the tensor. Values are
formatted by numpy in chunks of a million, not by a Python loop per value.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Callable

import numpy as np

from ..codecs.dtypes import widened
from ..codecs.dumpfile import read_header, read_tensor
from .batch import ConvertReport, FileOutcome, SourceFile, Sources, finish, problem_of, run_files, start
from .data_conversion import load_npy
from .naming import text_name

#: Values formatted per chunk.
CHUNK = 1 << 20


def value_lines(array: np.ndarray) -> Iterator[str]:
    """The flattened values of ``array`` as text, one per line, in chunks (each ends with a newline)."""
    flat = widened(np.ascontiguousarray(array).reshape(-1))  # bf16, fp8, int4 ... printed as their values
    if flat.dtype.kind == "b":
        flat = flat.astype(np.uint8)
    for start in range(0, flat.size, CHUNK):
        yield "\n".join(flat[start : start + CHUNK].astype(str).tolist()) + "\n"


def header_line(shape: tuple[int, ...], dtype: str, fmt: str | None = None) -> str:
    """``# shape=[1,3,4,4] dtype=float16 format=NC1HWC0``."""
    text = f"# shape=[{','.join(str(int(d)) for d in shape)}] dtype={dtype}"
    return text + (f" format={fmt}" if fmt else "") + "\n"


def write_text(path: Path, array: np.ndarray, header: str | None) -> None:
    """Write ``array`` to ``path`` as :func:`value_lines`, after ``header`` if given."""
    with open(path, "w", encoding="ascii", newline="\n") as handle:
        if header:
            handle.write(header)
        for chunk in value_lines(array):
            handle.write(chunk)


def _writer(array: np.ndarray, header: str | None) -> Callable[[Path], None]:
    return lambda path: write_text(path, array, header)


def _npy_to_text(source: SourceFile, out_dir: Path, header: bool) -> FileOutcome:
    outcome = FileOutcome(source)
    try:
        array = load_npy(source.path)
    except Exception as exc:  # noqa: BLE001 - listed, the others go on
        outcome.errors.append(f"cannot load the .npy file: {problem_of(exc)}")
        return outcome
    line = header_line(array.shape, array.dtype.name) if header else None
    outcome.save(out_dir, source.name[: -len(".npy")] + ".txt", _writer(array, line))
    return outcome


def _dump_to_text(source: SourceFile, out_dir: Path, header: bool, version: int | None) -> FileOutcome:
    outcome = FileOutcome(source)
    try:
        dump = read_header(source.path, version=version)
    except Exception as exc:  # noqa: BLE001
        outcome.errors.append(problem_of(exc))
        return outcome
    for info in dump.tensors:
        try:
            array = read_tensor(dump, info)
        except Exception as exc:  # noqa: BLE001
            outcome.errors.append(f"{info.label}: {problem_of(exc)}")
            continue
        line = header_line(info.shape, info.dtype_name, info.format_name) if header else None
        outcome.save(out_dir, text_name(source.name, info.kind, info.index), _writer(array, line))
    return outcome


def to_text(paths: Sources, out_dir: str | Path, *, header: bool = True, version: int | None = None,
            workers: int | None = None) -> ConvertReport:
    """Write every tensor of the dump / ``.npy`` files of ``paths`` as text (see the module doc).

    Raises :class:`convert.errors.OptionError` when nothing can run.
    """
    report, sources = start(paths, out_dir, what="dump or .npy")
    out = report.out_dir

    def job(source: SourceFile) -> FileOutcome:
        if source.name.endswith(".npy"):
            return _npy_to_text(source, out, header)
        return _dump_to_text(source, out, header, version)

    for outcome in run_files(sources, job, workers):
        report.add(outcome)
    return finish(report)


__all__ = ["header_line", "to_text", "value_lines", "write_text"]
