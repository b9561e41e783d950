"""Single-operator comparison: one tensor of one operator, element by element.

>>> from compare import compare_operator
>>> res = compare_operator("dumps/npu", "dumps/caffe", "conv1", fusion_rule="model.json")  # doctest: +SKIP
>>> res.summary["MaxAbsoluteError"], res.frame.nlargest(5, "AbsoluteError")                # doctest: +SKIP

Steps (spec §7.4 and §4 "detail mode"):

1. **Pairing** exactly as the network comparison does (fusion rule, NPU vs NPU, by name, or a
   mapping file first and names for the rest), then
   the pair whose TensorIndex is ``{op}:{kind}:{index}`` is taken (the op may also be given in its
   file-name form, ``/`` and ``.`` turned into ``_``). An unknown op, an index out of range or a
   tensor without golden counterpart raises :class:`OperatorNotFound` (a
   :class:`~compare.errors.CompareError`: exit code 2) listing the tensors the op does have, or
   the closest left op names (:func:`compare.pairing.near.did_you_mean`).
2. **Preparation.** With a conversion (fusion rule, by name) both sides go to one layout and are
   cut to the golden shape: NCDHW when the left format is NDHWC / NCDHW / DHWCN / NDC1HWC0, the
   golden format when it is FRACTAL_Z, NCHW otherwise (the golden side is converted as well; see
   :func:`convert.layouts.prepare_pair` with ``detail=True``). NPU vs NPU compares the raw dump
   arrays, so coordinates are in the dump layout (e.g. ``N C1 H W C0``); so does a left ``.npy``
   (no layout information: axes ``D0 D1 ...``). By name against a golden
   folder, where no rule gives the golden layout: the left format when it is a plain axis format
   (NCHW, NHWC, ...), else NCHW / NCDHW / ND by the golden rank (vcompare policy).
3. **Per-element errors**, in float64 (every input dtype widens exactly; the reference computes
   them in the arrays' own dtype, e.g. float16 minus float16, so its last digits can differ):

   - ``AbsoluteError = |x - y|`` (NaN when either value is NaN; inf when one side is inf);
   - ``RelativeError = AbsoluteError / |y|``; **undefined (NaN)** where ``y == 0`` or the result is
     not finite (printed ``-``).
4. **Summary**: ``TotalCount``, the op cells, the coordinate ``Format``, and Min/Max of both
   errors with the reference's rule that an undefined or non-finite error counts as **0** (so
   ``MinRelativeError`` is 0 as soon as one golden value is 0); then the network metrics of the
   tensor (:func:`compare.kernels.compare_arrays` on the prepared arrays).
5. **Top-N** (:meth:`OperatorResult.top`): by error, descending; ties by element index ascending
   (stable and deterministic). Non-finite absolute errors rank first (they are the worst);
   undefined relative errors rank last. ``min(n, N)`` rows. ``reference=True`` ranks as the
   reference does instead: non-finite errors count as 0 and ties go by descending index.

Coordinates: the prepared shape padded with trailing 1s to at least 4 dims (as the reference),
walked in C order. :attr:`OperatorResult.axes` names the axes: the letters of the layout when it
has exactly that many (``N C H W``, ``N C D H W``, ``H W C N``, ``N C1 H W C0``...), else
``D0 D1 ...``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from convert.layouts import LayoutError, format_key, load_plugins
from convert.layouts.formats import PLAIN_5D
from convert.names.keys import normalize_golden_name

from ..engine import note_text, row_counts
from ..engine.prepare import layout_request, prepare_flat
from ..errors import CompareError, OptionError, ShapeError
from ..kernels import compare_arrays, is_scalar_like, resolve_algorithms
from ..pairing.near import did_you_mean
from ..records import MetricRow, Pair, Pairing, PairStatus, Run, TensorKind, ValueCounts
from ..request import CompareRequest, PathLike
from .each import selected_folder
from .loading import load_and_pair

#: Axis letters of layouts with a fixed rank.
_AXES: dict[str, tuple[str, ...]] = {
    "NCHW": ("N", "C", "H", "W"),
    "NHWC": ("N", "H", "W", "C"),
    "HWCN": ("H", "W", "C", "N"),
    "CHWN": ("C", "H", "W", "N"),
    "NCDHW": ("N", "C", "D", "H", "W"),
    "NDHWC": ("N", "D", "H", "W", "C"),
    "DHWCN": ("D", "H", "W", "C", "N"),
    "NC1HWC0": ("N", "C1", "H", "W", "C0"),
    "NDC1HWC0": ("N", "D", "C1", "H", "W", "C0"),
    "FRACTAL_Z": ("C1HW", "N1", "N0", "C0"),
    "C1HWNCOC0": ("C1", "H", "W", "N", "Co", "C0"),
}
_DEPTH = PLAIN_5D | {"NDC1HWC0"}


class OperatorNotFound(OptionError):
    """``-d``/``index``/``kind`` name no comparable tensor; the message lists what exists."""


@dataclass
class OperatorResult:
    """The element-wise comparison of one tensor.

    ``left`` / ``right`` are the prepared flat arrays (native dtypes); ``shape`` the prepared
    left shape; ``coord_shape`` that shape padded with 1s to >= 4 dims, walked by the
    coordinates; ``axes`` the coordinate names; ``layout`` the layout the coordinates are in;
    ``reference_format`` the reference's ``Format`` label (``N C H W``, ``N C D H W``, the golden
    letters for FRACTAL_Z, ``ID`` for a 0-d tensor). ``metrics`` / ``std`` are the network metrics
    (``None`` = not computed). ``notes`` are plain-English remarks (kernel notes, conversion);
    ``plugin_notes`` what ``-custom`` loaded and ignored (:attr:`convert.layouts.PluginSet.notes`),
    said once for the run and never a reason of the comparison.
    """

    op: str
    kind: str
    index: int
    tensor_id: str
    left_op: str
    right_op: str
    left: np.ndarray = field(repr=False)
    right: np.ndarray = field(repr=False)
    shape: tuple[int, ...]
    layout: str
    axes: tuple[str, ...]
    reference_format: str
    left_dtype: str
    right_dtype: str
    metrics: dict[str, float | None]
    std: tuple[float, float, float, float] | None
    mode: str
    converted: bool
    notes: list[str] = field(default_factory=list)
    pair: Pair | None = field(default=None, repr=False)
    plugin_notes: list[str] = field(default_factory=list)
    #: NaN / infinite / float16-saturated elements of each side (counted in the kernel pass).
    left_counts: ValueCounts | None = None
    right_counts: ValueCounts | None = None

    # ---------------------------------------------------------------- shapes and coordinates

    @property
    def count(self) -> int:
        return int(self.left.size)

    @property
    def coord_shape(self) -> tuple[int, ...]:
        dims = tuple(self.shape) if math.prod(self.shape) == self.count else (self.count,)
        return dims + (1,) * max(0, 4 - len(dims))

    @property
    def format(self) -> str:
        """The coordinate header (``N C H W``...): the axis names joined by spaces."""
        return " ".join(self.axes)

    @property
    def is_bool(self) -> bool:
        return self.left.dtype.kind == "b" and self.right.dtype.kind == "b"

    def coordinates(self, indexes: np.ndarray) -> tuple[np.ndarray, ...]:
        """Coordinates (one int64 array per axis) of flat element indexes."""
        idx = np.asarray(indexes, dtype=np.int64)
        if self.count == 0:
            return tuple(np.zeros(0, dtype=np.int64) for _ in self.coord_shape)
        return tuple(np.asarray(c, dtype=np.int64) for c in np.unravel_index(idx, self.coord_shape))

    # ---------------------------------------------------------------- element-wise values

    @cached_property
    def left_values(self) -> np.ndarray:
        """Left values as float64 (bool -> 0/1, complex -> real part; the errors use both parts)."""
        return _as_float64(self.left)

    @cached_property
    def right_values(self) -> np.ndarray:
        return _as_float64(self.right)

    @cached_property
    def absolute_error(self) -> np.ndarray:
        """``|x - y|`` in float64 (complex data: the modulus of the complex difference, so the
        imaginary parts count too; the Left/Right columns show the real parts)."""
        with np.errstate(all="ignore"):
            return np.abs(_as_exact(self.left) - _as_exact(self.right))

    @cached_property
    def relative_error(self) -> np.ndarray:
        """``|x - y| / |y|``; NaN where ``y == 0`` or the value is not finite (undefined). Complex
        data: moduli, as in :attr:`absolute_error`."""
        y = np.abs(_as_exact(self.right))
        with np.errstate(all="ignore"):
            rel = self.absolute_error / y
        rel[~np.isfinite(rel) | (y == 0)] = np.nan
        return rel

    def error(self, which: str) -> np.ndarray:
        """``absolute_error`` or ``relative_error`` by name (``absolute`` / ``relative``)."""
        if which == "absolute":
            return self.absolute_error
        if which == "relative":
            return self.relative_error
        raise OptionError(f"error kind must be 'absolute' or 'relative', not {which!r}")

    def top(self, which: str, n: int, *, reference: bool = False) -> np.ndarray:
        """Flat indexes of the ``min(n, N)`` largest ``which`` errors, best-first (module doc)."""
        errors = self.error(which)
        if reference:
            key = np.where(np.isfinite(errors), errors, 0.0)
        elif which == "absolute":
            key = np.where(np.isnan(errors), np.inf, errors)
        else:
            key = np.where(np.isnan(errors), -1.0, errors)
        return top_indexes(key, n, ties_ascending=not reference)

    # ---------------------------------------------------------------- summary and frame

    @cached_property
    def summary(self) -> dict[str, Any]:
        """TotalCount, LeftOp, RightOp, Format, Min/Max errors (undefined counts as 0), metrics.

        The network metrics follow under their names, except MaxAbsoluteError and
        MaxRelativeError, whose element-wise values are already there (they differ from the
        network ones only for NaN/inf data); ``StandardDeviation`` is the 4-tuple
        ``(left mean, left std, right mean, right std)``.
        """
        out: dict[str, Any] = {
            "TotalCount": self.count,
            "LeftOp": self.left_op,
            "RightOp": self.right_op,
            "Format": self.format,
        }
        for name, errors in (("AbsoluteError", self.absolute_error), ("RelativeError", self.relative_error)):
            if self.count == 0:
                out[f"Min{name}"] = out[f"Max{name}"] = None
                continue
            counted = np.where(np.isfinite(errors), errors, 0.0)
            out[f"Min{name}"] = float(counted.min())
            out[f"Max{name}"] = float(counted.max())
        for name, value in self.metrics.items():
            if name in out:
                continue
            out[name] = self.std if name == "StandardDeviation" else value
        return out

    @property
    def frame(self):
        """pandas DataFrame, one row per element (index = flat element index).

        Columns: one int column per coordinate axis (:attr:`axes`), then ``Left``, ``Right``,
        ``AbsoluteError``, ``RelativeError`` (float64; RelativeError NaN where undefined).
        """
        import pandas as pd  # here: pandas (~0.3 s) only for DataFrames (the API's .frame)

        idx = np.arange(self.count, dtype=np.int64)
        data: dict[str, np.ndarray] = dict(zip(_unique_names(self.axes), self.coordinates(idx)))
        data.update(Left=self.left_values, Right=self.right_values, AbsoluteError=self.absolute_error,
                    RelativeError=self.relative_error)
        frame = pd.DataFrame(data)
        frame.index.name = "Index"
        return frame

    def to_metric_row(self):
        """The result as a network-report :class:`~compare.records.MetricRow` (for gates)."""
        return MetricRow(index=0, op_type=self.pair.op_type if self.pair else None, left_op=self.left_op,
                         right_op=self.right_op, tensor_id=self.tensor_id, left_dtype=self.left_dtype,
                         right_dtype=self.right_dtype, shape=tuple(self.shape), metrics=dict(self.metrics),
                         std=self.std, reasons=list(self.notes), left_counts=self.left_counts,
                         right_counts=self.right_counts)


def _unique_names(axes: tuple[str, ...]) -> list[str]:
    reserved = {"Left", "Right", "AbsoluteError", "RelativeError"}
    out = []
    for name in axes:
        while name in reserved or name in out:
            name = f"{name}_"
        out.append(name)
    return out


def _as_float64(array: np.ndarray) -> np.ndarray:
    a = np.asarray(array).reshape(-1)
    if a.dtype.kind == "c":
        a = a.real
    return a.astype(np.float64)


def _as_exact(array: np.ndarray) -> np.ndarray:
    """Flat values for the element-wise errors: complex128 for complex data (both parts), else
    float64 (bool -> 0/1)."""
    a = np.asarray(array).reshape(-1)
    return a.astype(np.complex128) if a.dtype.kind == "c" else a.astype(np.float64)


def top_indexes(key: np.ndarray, n: int, *, ties_ascending: bool = True) -> np.ndarray:
    """Indexes of the ``min(n, len(key))`` largest keys, sorted by key descending.

    Ties (also at the cut) go by index ascending, or descending with ``ties_ascending=False``.
    ``key`` must hold no NaN. O(N) selection plus a sort of the selected rows.
    """
    key = np.asarray(key, dtype=np.float64)
    total = key.shape[0]
    n = max(0, min(int(n), total))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n < total:
        threshold = np.partition(key, total - n)[total - n]
        above = np.flatnonzero(key > threshold)
        equal = np.flatnonzero(key == threshold)
        need = n - above.size
        equal = equal[:need] if ties_ascending else equal[equal.size - need:]
        chosen = np.concatenate([above, equal])
    else:
        chosen = np.arange(total, dtype=np.int64)
    tie = chosen if ties_ascending else -chosen
    return chosen[np.lexsort((tie, -key[chosen]))].astype(np.int64)


# ------------------------------------------------------------------------------ selection


def _tensor_op(tensor_id: str) -> str:
    return tensor_id.rsplit(":", 2)[0]


def _left_names(pairing: Pairing, left: Run, rule: Any) -> list[str]:
    names: dict[str, None] = {}
    for pair in pairing.pairs:
        if pair.tensor_id and pair.left is not None:
            names[_tensor_op(pair.tensor_id)] = None
        for name in pair.left_op.split(","):
            if name and name != "*":
                names[name] = None
    names.update(dict.fromkeys(left.ops))
    if rule is not None:
        names.update(dict.fromkeys(rule.ops))
    return list(names)


def _tensor_list(pairs: list[Pair]) -> str:
    parts = []
    for pair in pairs:
        _, kind, index = pair.tensor_id.rsplit(":", 2)  # type: ignore[union-attr]
        state = "" if pair.status is PairStatus.COMPARED else f" ({pair.status.value})"
        parts.append(f"{kind} {index}{state}")
    return ", ".join(parts)


def select_pair(pairing: Pairing, left: Run, op: str, kind: TensorKind, index: int, rule: Any = None) -> Pair:
    """The compared pair of tensor ``{op}:{kind}:{index}``, or :class:`OperatorNotFound`."""
    wanted = f"{op}:{kind.value}:{index}"
    tensor_pairs = [p for p in pairing.pairs if p.tensor_id]
    norm = normalize_golden_name(op)

    def of_op(pair: Pair) -> bool:
        name = _tensor_op(pair.tensor_id or "")
        return name == op or normalize_golden_name(name) == norm

    mine = [p for p in tensor_pairs if of_op(p) and p.left is not None]
    hit = [p for p in mine if p.tensor_id.endswith(f":{kind.value}:{index}")]  # type: ignore[union-attr]
    if hit:
        pair = next((p for p in hit if p.tensor_id == wanted), hit[0])
        if pair.status is not PairStatus.COMPARED or pair.left is None or pair.right is None:
            raise OperatorNotFound(
                f"{pair.tensor_id} cannot be compared element by element: "
                f"{pair.reason or pair.status.value}"
            )
        return pair
    if mine:
        raise OperatorNotFound(
            f"operator {op!r} has no {kind.value} {index}; its tensors are: {_tensor_list(mine)} "
            "(choose with -t input|output and -i INDEX)"
        )
    names = _left_names(pairing, left, rule)
    op_rows = [p for p in pairing.pairs if p.tensor_id is None and (op in p.left_op.split(",") or
                                                                     norm in p.left_op.split(","))]
    if op_rows:
        raise OperatorNotFound(f"operator {op!r} cannot be compared: {op_rows[0].reason or op_rows[0].status.value}")
    right_only = [p for p in pairing.pairs if p.left is None and p.left_op == "*" and op in p.right_op.split(",")]
    if right_only:
        raise OperatorNotFound(f"operator {op!r} is only in the right folder: "
                               f"{right_only[0].reason or right_only[0].status.value}")
    if op in names or norm in names:
        raise OperatorNotFound(
            f"operator {op!r} has no compared tensor (an inner node of a fusion group, or not dumped)"
        )
    owners = sorted({_tensor_op(p.tensor_id) for p in tensor_pairs  # type: ignore[arg-type]
                     if p.left is not None and op in p.right_op.split(",")})
    hint = ""
    if owners:
        hint = f"; {op!r} is a Ground Truth op, compared against left op(s) {', '.join(map(repr, owners))}"
    else:
        near = did_you_mean(op, names)
        if near:
            hint = f"; {near}"
        elif names:
            hint = f"; left ops are e.g. {', '.join(map(repr, names[:5]))}"
    raise OperatorNotFound(f"no operator {op!r} in the left dump{hint}")


# ------------------------------------------------------------------------------ preparation


def _axes_for(layout: str, rank: int) -> tuple[str, ...]:
    letters = _AXES.get(layout)
    if letters is not None and len(letters) == rank:
        return letters
    if layout == "FRACTAL_NZ" and rank >= 4:
        return tuple(f"B{i}" for i in range(rank - 4)) + ("W1", "H1", "H0", "W0")
    return tuple(f"D{i}" for i in range(rank))


def _reference_format(left_format: str, golden_format: str, raw_shape: tuple[int, ...]) -> str:
    """The reference's Format label (spec §7.4)."""
    if raw_shape == ():
        return "ID"
    if left_format in _DEPTH:
        return "N C D H W"
    if left_format == "FRACTAL_Z" and golden_format:
        return " ".join(_AXES.get(golden_format, tuple(golden_format)))
    return "N C H W"


def _detail_destination(left_format: str, golden_format: str) -> str:
    if left_format in _DEPTH:
        return "NCDHW"
    if left_format == "FRACTAL_Z":
        return golden_format
    return "NCHW"


@dataclass(frozen=True)
class PreparedOperator:
    """Both tensors of a single-operator pair, flat and aligned element for element.

    ``shape``: the shape the elements index (the converted one, or flat when sizes disagree);
    ``layout``: the layout the detail files' coordinates follow; ``reference_format``: the format
    the reference tool would name; ``notes``: what was assumed; ``converted``: whether a device
    layout was brought to the golden one.
    """

    x: np.ndarray
    y: np.ndarray
    shape: tuple[int, ...]
    layout: str
    reference_format: str
    notes: tuple[str, ...]
    converted: bool


def prepare_operator(pair: Pair, *, plugins: Any = None) -> PreparedOperator:
    """Load and prepare both tensors of ``pair`` for element-wise comparison (module doc, step 2).

    The layout decisions are the network engine's (:mod:`compare.engine.prepare`), with the
    detail destination, so a detail file and the network row of a tensor compare the same
    elements.
    """
    assert pair.left is not None and pair.right is not None
    left = pair.left.load()
    right = pair.right.load()
    left_fmt = format_key(pair.left.format)
    raw_shape = tuple(pair.left.shape)
    if not pair.convert or left_fmt in ("", "RESERVED"):  # NPU vs NPU, or a left .npy: no layout to convert
        try:
            flat = prepare_flat(pair, left, right)
        except ShapeError as exc:
            raise ShapeError(f"{pair.tensor_id}: {exc}") from None
        shape = raw_shape if math.prod(raw_shape) == flat.x.size else (flat.x.size,)
        return PreparedOperator(x=flat.x, y=flat.y, shape=shape, layout=left_fmt if pair.convert is False else "ND",
                                reference_format=_reference_format(left_fmt, "", raw_shape), notes=(),
                                converted=False)
    request = layout_request(pair, left, right, plugins=plugins)
    notes = (f"golden layout assumed {request.golden_format} (no fusion rule says it)",) if request.assumed else ()
    try:
        gold_fmt = request.decision.golden_format
        x, y, shape = request.prepare(detail=True)
    except (LayoutError, ValueError) as exc:
        raise ShapeError(f"cannot bring {pair.tensor_id} and {pair.right.path.name} to one layout: {exc}") from None
    layout = _detail_destination(left_fmt, gold_fmt)
    if math.prod(shape) != x.size:
        shape = (x.size,)
    return PreparedOperator(x=x, y=y, shape=tuple(int(d) for d in shape), layout=layout,
                            reference_format=_reference_format(left_fmt, gold_fmt, raw_shape), notes=notes,
                            converted=True)


# ------------------------------------------------------------------------------ entry point


def _kind(kind: str) -> TensorKind:
    """``-t`` as a :class:`TensorKind` (trimmed, any case)."""
    try:
        return TensorKind(str(kind).strip().lower())
    except ValueError:
        raise OptionError(f"tensor type must be 'input' or 'output', not {kind!r}") from None


def compare_operator(left: PathLike, right: PathLike, op: str, *, kind: str | TensorKind = "output", index: int = 0,
                     extra_metrics: Sequence[str] = (), **fields: object) -> OperatorResult:
    """:func:`operator_request` of ``CompareRequest(left=left, right=right, op=op, tensor_type=kind,
    index=index, **fields)`` (the keywords go straight to :class:`~compare.request.CompareRequest`).

    ``op`` is the left operator name (``-d``), ``kind`` ``input`` or ``output`` (``-t``, or a
    :class:`~compare.records.TensorKind`), ``index`` the tensor index (``-i``).
    """
    tensor_type = kind.value if isinstance(kind, TensorKind) else kind
    request = CompareRequest(left=left, right=right, op=op, tensor_type=tensor_type, index=index,
                             **fields)  # type: ignore[arg-type]
    return operator_request(request, extra_metrics=extra_metrics)


def operator_request(request: CompareRequest, *, extra_metrics: Sequence[str] = ()) -> OperatorResult:
    """Compare one tensor of one operator element by element (see the module doc): the request's
    ``op`` (``-d``), ``tensor_type`` (``-t``: input or output, default output) and ``index`` (``-i``,
    default 0).

    ``left`` / ``right`` / ``fusion_rule`` / ``quant_rule`` / ``close_fusion_rule`` /
    ``custom_dir`` / ``dump_version`` as for :func:`compare.compare_network`; ``rank`` ...
    ``ge_graph`` pick one leaf folder of a dump tree on each side
    (:func:`~compare.runs.each.selected_folder`); ``algorithms`` the network metrics to add to the
    summary (default all ten; ``extra_metrics``, the metrics a policy needs, added); ``mapping`` a
    mapping file (or its entries, :mod:`compare.pairing.user_mapping`): the left op is then
    compared with the right op the mapping names for it (ops it does not mention pair by name as
    usual); ``ffts`` (``-ffts``): FFTS+ slice files are ops of their own (raw names), so ``op``
    may name one slice.

    Raises :class:`OperatorNotFound` (a :class:`~compare.errors.CompareError`) when the tensor
    does not exist or has no golden counterpart, :class:`~compare.errors.ShapeError` when the two
    tensors cannot be brought to one layout, other CompareErrors for unreadable inputs.
    """
    kind = request.tensor_type if request.tensor_type is not None else "output"
    index = request.index if request.index is not None else 0
    op = request.op
    tensor_kind = _kind(kind)
    if isinstance(index, bool) or int(index) != index or index < 0:
        raise OptionError(f"tensor index must be a non-negative integer, not {index!r}")
    index = int(index)
    if not op:
        raise OptionError("an operator name is required")
    metrics = resolve_algorithms(request.algorithms)
    metrics += [name for name in extra_metrics if name not in metrics]
    left, right = request.left, request.right
    if any(value is not None for value in request.select.values()):
        left, right = selected_folder(left, **request.select), selected_folder(right, **request.select)

    custom_dir = request.custom_dir
    plugins = load_plugins(custom_dir) if custom_dir is not None and custom_dir != "" else None
    left_run, right_run, _, rule, pairing = load_and_pair(
        left, right, request.fusion_rule, quant_rule=request.quant_rule, close_fusion_rule=request.close_fusion_rule,
        dump_version=request.dump_version, mapping=request.mapping, keep_raw_names=request.ffts)
    pair = select_pair(pairing, left_run, op, tensor_kind, index, rule)
    prepared = prepare_operator(pair, plugins=plugins)
    x, y, shape = prepared.x, prepared.y, prepared.shape
    try:
        kernel = compare_arrays(x, y, metrics=metrics, scalar=is_scalar_like(shape))
    except CompareError as exc:
        raise ShapeError(f"{pair.tensor_id}: {exc}") from None
    notes = list(prepared.notes)
    notes[:0] = [ref.remark for ref in (pair.left, pair.right) if ref is not None and ref.remark]
    if pair.reason:
        notes.insert(0, pair.reason)
    notes += [note_text(n, pair) for n in sorted(kernel.notes, key=lambda n: n.name) if n.name != "BOTH_ZERO"]
    tensor_id = pair.tensor_id or f"{op}:{tensor_kind.value}:{index}"
    layout = prepared.layout
    coord_rank = max(4, len(shape))
    return OperatorResult(
        op=_tensor_op(tensor_id),
        kind=tensor_kind.value,
        index=index,
        tensor_id=tensor_id,
        left_op=pair.left_op,
        right_op=pair.right_op,
        left=x,
        right=y,
        shape=tuple(shape),
        layout=layout,
        axes=_axes_for(layout, coord_rank),
        reference_format=prepared.reference_format,
        left_dtype=pair.left.dtype if pair.left else str(x.dtype),
        right_dtype=pair.right.dtype if pair.right else str(y.dtype),
        metrics=dict(kernel.values),
        std=kernel.std,
        mode=pairing.mode,
        converted=prepared.converted,
        notes=notes,
        pair=pair,
        plugin_notes=plugins.notes if plugins is not None else [],
        left_counts=row_counts(kernel.left_counts),
        right_counts=row_counts(kernel.right_counts),
    )


__all__ = ["OperatorNotFound", "OperatorResult", "compare_operator", "operator_request", "select_pair", "top_indexes"]
