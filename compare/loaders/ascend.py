"""Ascend dump files: op names, unused-file notes, one op's dump file read as an :class:`OpDump`.

* **Op-name clean-up** (§2.8 of the reference-tool spec): :func:`clean_op_name` turns the op name
  of a dump file name into the operator's name (``_lxslice`` and ``sgt_graph`` parts), as the
  reference tool does; :func:`is_quantized_name` tells a quantized model by its op names.
* **Files a run did not use**: :func:`unused_files_note` and :func:`no_valid_files_error` say
  which files were refused and why, counting the misnamed ones (a refused *name*, by the naming
  rules of :mod:`compare.loaders.listing`) apart from the other unusable files; every reader's
  runs and the "no reader found" diagnosis use them.
* **One op**: :func:`build_offline_op` reads the header of an op's latest dump file into
  :class:`TensorRef` records whose readers decode the tensor on demand (:func:`read_dump_tensor`).

Folder listing: :mod:`compare.loaders.listing`; FFTS+ slice files merged into one op:
:mod:`compare.loaders.ffts_ops`; the Ascend offline reader (grouping a folder's files by op and
scanning it): :mod:`compare.loaders.ascend_offline`.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from convert.codecs import dumpfile
from convert.codecs.dtypes import Format, dtype_name, format_name
from convert.codecs.fastread import read_tensor_mapped
from convert.names.ascend import OfflineName

from ..errors import CompareError, DumpFormatError
from ..records import OpDump, TensorKind, TensorRef

if TYPE_CHECKING:
    from convert.codecs.dumpfile import DumpHeader

#: Substrings of an op name that mark a quantized model (§2.8 "Quant detection").
QUANT_MARKERS = (
    "_quant_layer",
    "_anti_quant_layer",
    "AscendQuant",
    "AscendWeightQuant",
    "AntiQuant",
    "_quant",
    "_weight_quant",
    "_anti_quant",
    "_dequant_layer",
    "AscendDequant",
    "_dequant",
)

_LXSLICE_ANY_RE = re.compile(r"_lxslice[0-9]+")
_LXSLICE_END_RE = re.compile(r".lxslice[0-9]+$")
_SGT_RE = re.compile(r"sgt_graph_[0-9]+")


# --------------------------------------------------------------------------------------------
# Op-name clean-up
# --------------------------------------------------------------------------------------------


def clean_op_name(name: str, *, fusion_rule: bool = False, keep_raw_names: bool = False) -> str | None:
    """Clean an op name from a file name as the reference tool does (without ``-ffts``).

    1. With a fusion rule, every ``_lxslice<digits>`` is removed; without one, a name *ending*
       in ``lxslice<digits>`` loses that suffix and the one character before it.
    2. If the name contains ``_sgt_graph``, everything up to and including the last
       ``sgt_graph_<digits>`` plus one separator character is dropped -- only when that match is
       not at the end of the name.
    3. If ``_lxslice`` is still present, the file is ignored: ``None`` is returned.

    ``keep_raw_names=True`` (the reference's ``-ffts``) returns the name unchanged.
    """
    if keep_raw_names:
        return name
    if fusion_rule and "_lxslice" in name:
        name = _LXSLICE_ANY_RE.sub("", name)
    else:
        end = _LXSLICE_END_RE.search(name)
        if end is not None:
            name = name[: end.start()]
    if "_sgt_graph" in name:
        last = None
        for last in _SGT_RE.finditer(name):
            pass
        if last is not None and last.end() < len(name):
            name = name[last.end() + 1:]
    if "_lxslice" in name:
        return None
    return name


#: Any of QUANT_MARKERS, anywhere in a name (one search instead of 11 substring tests: asked for
#: every op of both sides).
_QUANT_RE = re.compile("|".join(re.escape(marker) for marker in QUANT_MARKERS))


def is_quantized_name(name: str) -> bool:
    """Whether an op name carries one of the quantization markers of §2.8 (as a substring)."""
    return _QUANT_RE.search(name) is not None


# --------------------------------------------------------------------------------------------
# Files a run did not use
# --------------------------------------------------------------------------------------------


def is_misnamed(reason: str) -> bool:
    """Whether a ``run.skipped`` reason says the file's *name* was refused (no naming rule
    matched, or a random-digit name without a ``mapping.csv`` entry), as opposed to a file that
    was named well but could not be used."""
    return any(text in reason for text in ("naming rule", "dump rule", "hashed file name", "random-digit file name"))


def _distinct_paths(skipped: Sequence[tuple[Path, str]]) -> list[Path]:
    return list(dict.fromkeys(path for path, _ in skipped))


def _examples(paths: Sequence[Path], limit: int = 3) -> str:
    shown = ", ".join(path.name for path in paths[:limit])
    return shown + (", ..." if len(paths) > limit else "")


def misnamed_summary(skipped: Sequence[tuple[Path, str]]) -> str:
    """``N misnamed (e.g. a, b, c)`` plus ``M other file(s) not usable`` -- counts of distinct files."""
    misnamed = _distinct_paths([s for s in skipped if is_misnamed(s[1])])
    other = [p for p in _distinct_paths([s for s in skipped if not is_misnamed(s[1])]) if p not in set(misnamed)]
    parts = []
    if misnamed:
        parts.append(f"{len(misnamed)} misnamed (e.g. {_examples(misnamed)})")
    if other:
        parts.append(f"{len(other)} other file(s) not usable (e.g. {_examples(other)})")
    return ", ".join(parts)


_STATS_PROBLEM_RE = re.compile(r"row \d+:|statistics file ")


def is_statistics_problem(path: Path, reason: str) -> bool:
    """A refused row of a statistics CSV (or a statistics CSV that could not be read): reported
    by the statistics reader's own note (``statistics rows not used: ...``), not as a file.
    Refused ``mapping.csv`` rows are not: they are named by the unused-files note."""
    return (path.name.endswith(".csv") and path.name != "mapping.csv"
            and _STATS_PROBLEM_RE.match(reason) is not None)


def _shown_path(path: Path, folder: Path | None) -> str:
    """A file of the run's own folder by its name; anything else (a folder of the tree that
    could not be read, a file of a sub-folder, any path when there is no ``folder``) by its path."""
    if folder is not None and Path(path).parent == Path(folder):
        return Path(path).name
    return str(path)


def unused_files_note(skipped: Sequence[tuple[Path, str]], limit: int = 3, *, folder: Path | None = None) -> str | None:
    """The stderr note for the files a run did not use, ``None`` when none.

    Always given, whatever the pairing mode: ``N file(s) not used: K misnamed (e.g. a, b, c), ...``
    then the first ``limit`` reasons (the whole list: ``Run.skipped``, and the ``skipped`` list of
    the JSON result). Files of ``folder`` (the run's folder) are named by their name, other
    paths (a folder of the tree that could not be listed, a link loop above the leaf) in full.
    Refused statistics rows are left to the statistics note (:func:`is_statistics_problem`).
    """
    skipped = [(path, why) for path, why in skipped if not is_statistics_problem(path, why)]
    if not skipped:
        return None
    files = _distinct_paths(skipped)
    reasons = "; ".join(f"{_shown_path(path, folder)} ({why})" if str(path) not in why else why
                        for path, why in skipped[:limit])
    more = f"; and {len(skipped) - limit} more" if len(skipped) > limit else ""
    return f"{len(files)} file(s) not used: {misnamed_summary(skipped)}: {reasons}{more}"


def no_valid_files_error(folder: Path, skipped: list[tuple[Path, str]]) -> CompareError:
    """Error for a folder without any usable dump file: ``no valid dump files: N misnamed (e.g.
    a, b, c)``, then (up to 10) files and why; "it is empty" only when it holds no file at all."""
    if not skipped:
        return CompareError(f"dump folder {folder} holds no dump files (it is empty)")
    shown = "; ".join(f"{path.name} ({reason})" for path, reason in skipped[:10])
    more = f"; and {len(skipped) - 10} more" if len(skipped) > 10 else ""
    count = len(_distinct_paths(skipped))
    return DumpFormatError(
        folder, f"no valid dump files: {misnamed_summary(skipped)}; {count} file(s) not used: {shown}{more}"
    )


# --------------------------------------------------------------------------------------------
# One op's dump file -> OpDump: tensor refs with lazy readers
# --------------------------------------------------------------------------------------------


def _dumpfile():
    return dumpfile


def read_dump_tensor(header, info):
    """``convert.codecs.dumpfile.read_tensor`` for comparisons: a tensor whose format code is not an Ascend
    ``OutputFormat`` value is refused too, and a large float tensor is memory-mapped (read-only)
    instead of copied (:func:`convert.codecs.fastread.read_tensor_mapped`).

    Policy: the layout of such data is unknown, so comparing it -- even element by element
    against a golden of the same size -- could compare unrelated positions. The reference tool
    fails on it as well (no format name). The conversion tools still read such files.
    """
    if int(info.format) not in _format_codes():
        known = f"0-{max(int(f) for f in Format if int(f) < 255)} and 255"
        problem = f"{info.label} has format code {info.format}, which is not an Ascend dump format (known: {known})"
        raise DumpFormatError(header.path, problem, offset=info.offset) from None

    return read_tensor_mapped(header, info)  # large float tensors memory-mapped (read-only), others read


@functools.lru_cache(maxsize=1)
def _format_codes() -> frozenset[int]:
    """The Ascend ``OutputFormat`` codes (asked once per tensor read)."""
    return frozenset(int(f) for f in Format)


@functools.lru_cache(maxsize=256)
def _format_name(code: int) -> str:
    """:func:`convert.codecs.dtypes.format_name`, remembered (asked for every tensor of a scan: an
    enum lookup each time otherwise)."""
    return format_name(code)


def tensor_refs(op_name: str, header, path: Path) -> tuple[tuple[TensorRef, ...], tuple[TensorRef, ...]]:
    """TensorRefs (metadata + lazy reader) for the inputs and outputs of a parsed dump header."""
    read_tensor = read_dump_tensor

    def refs(infos: Iterable, kind: TensorKind) -> tuple[TensorRef, ...]:
        out = []
        for info in infos:
            out.append(
                TensorRef(
                    op_name=op_name,
                    kind=kind,
                    index=int(info.index),
                    dtype=dtype_name(info.data_type),
                    format=_format_name(int(info.format)),
                    shape=tuple(map(int, info.shape)),
                    path=path,
                    original_shape=tuple(map(int, info.original_shape)),
                    address=int(info.address),
                    sub_format=int(info.sub_format),
                    nbytes=int(info.size),
                    reader=functools.partial(read_tensor, header, info),
                )
            )
        return tuple(out)

    return refs(header.inputs, TensorKind.INPUT), refs(header.outputs, TensorKind.OUTPUT)


def read_header(path: Path, version: int | None) -> tuple["DumpHeader | None", str | None]:
    """``(header, None)``, or ``(None, diagnosis)`` when the file's header cannot be read."""
    try:
        return _dumpfile().read_header(path, version=version), None
    except CompareError as exc:
        return None, str(exc)
    except OSError as exc:
        return None, str(DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}"))


def build_offline_op(
    name: str, files: list[tuple[Path, OfflineName]], *, version: int | None = None
) -> OpDump:
    """One OpDump from all files of an op (sorted oldest first): the latest file's header is read.

    A header that cannot be parsed gives ``error=<diagnosis>`` and no tensors; the op is kept.
    """
    path, parsed = files[-1]
    inputs: tuple[TensorRef, ...] = ()
    outputs: tuple[TensorRef, ...] = ()
    header, error = read_header(path, version)
    if header is not None:
        inputs, outputs = tensor_refs(name, header, path)
    return OpDump(
        name=name,
        op_type=parsed.op_type,
        path=path,
        files=tuple(p for p, _ in files),
        inputs=inputs,
        outputs=outputs,
        error=error,
        timestamp=parsed.timestamp,
    )


__all__ = ["QUANT_MARKERS", "build_offline_op", "clean_op_name", "is_misnamed", "is_quantized_name",
           "is_statistics_problem", "misnamed_summary", "no_valid_files_error", "read_dump_tensor", "read_header",
           "tensor_refs", "unused_files_note"]
