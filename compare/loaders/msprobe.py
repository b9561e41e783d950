"""msprobe dumps (Ascend mstt's accuracy tool, PyTorch and MindSpore): ``dump.json`` -> :class:`Run`.

Layout: ``{dump_path}/step{N}/rank{R}/`` (``rank`` alone when the process had no rank,
``proc{pid}`` for processes without one; finding and choosing the folders is
:mod:`compare.loaders.msprobe_folders`) holding ``dump.json`` (plus ``stack.json``: each call's
stack becomes ``OpDump.stack``; ``construct.json``, ``dump_error_info.log``: not read here) and, for ``task: tensor``, the folder
``dump_tensor_data/`` with one file per tensor: ``.pt`` (PyTorch, read by
:mod:`convert.codecs.torch_pt`, without torch) or ``.npy`` (MindSpore, :mod:`convert.codecs.npy`).

``dump.json`` is ``{"task": "tensor"|"statistics"|..., "level": "L0"|"L1"|"mix", "framework":
"pytorch"|"mindspore", "dump_data_dir": path, "data": {data name: entry}}``. An entry is one
call (data names: :mod:`convert.names.msprobe`) and becomes one :class:`OpDump` keyed by its
data name; its sections:

* forward: ``input_args`` (list), ``input_kwargs`` (object), ``parameters`` (object, module
  weights) -> the inputs, in this order; ``output`` (list) -> the outputs;
* backward: ``input`` (the gradients of the forward outputs) -> inputs, ``output`` (those of the
  forward inputs) -> outputs; ``grad_input`` / ``grad_output`` likewise;
* ``parameters_grad`` entries: ``{name: [tensor]}`` -> outputs, in key order.

Each section is walked depth first (lists in order, objects in key order; nested lists and
tuples of tensors occur). A *leaf* is an object with a ``type`` or ``dtype`` key, or ``null``;
every leaf takes the next index of its kind (inputs numbered across ``input_args``, then
``input_kwargs``, then ``parameters``), tensors or not, so a non-tensor argument (an ``int``,
a ``slice``, ``null``) keeps the places of the tensors after it the same on both sides; it becomes
an :class:`~compare.records.Argument` of ``OpDump.arguments`` (compared by value:
:mod:`compare.runs.msprobe_rows`). Every item, tensor or not, gets msprobe's name (``label``:
:func:`convert.names.msprobe.item_name`, ``Functional.conv2d.0.forward.input.3.0``), and a tensor
the ``requires_grad`` it recorded. A tensor leaf (``type`` ``torch.Tensor`` / ``mindspore.Tensor`` / ``...Parameter``, or a ``dtype`` and a ``shape``)
becomes a :class:`TensorRef`: dtype from :func:`~convert.names.msprobe.msprobe_dtype`, shape as
recorded, format ``ND``, the recorded ``Max`` / ``Min`` / ``Mean`` / ``Norm`` as statistics
``max`` / ``min`` / ``avg`` / ``l2norm`` and the ``md5`` field (a CRC-32 or XOR checksum, not an
MD5) as ``checksum``; ``data_name`` names its file in ``dump_tensor_data`` (read only when the
pair is compared). A tensor without ``data_name`` (``task: statistics``) has statistics only:
the run is then ``stats_only`` and compared by statistics (:mod:`compare.stats`).

Data types: MindSpore saves bfloat16 tensors as float32 ``.npy``; the DataType column shows the
recorded type, the values are compared as saved.

Edge-case policy (nothing crashes, nothing is dropped silently):

* ``dump.json`` that is not JSON or not an object with a ``data`` object: :class:`DumpFormatError`
  naming the file (and the byte offset of a syntax error); so is one holding an integer of more
  than Python's int-string conversion limit (:func:`sys.get_int_max_str_digits`, 4300 digits by
  default; the error gives its line and column), and one nested deeper than Python's recursion
  limit (1000 levels by default; a ``dump.json`` of msprobe nests fewer than 10);
* an integer statistic (``Max`` ...) beyond the float range: read as +-inf (a float conversion
  overflows so);
* an entry that is not an object, or a section of the wrong type: the op is kept with
  ``error`` set (its row says why); an unknown section is named in ``run.notes``;
* a ``data_name`` that is not a plain file name (``/``, ``\\``, ``..``, NUL, absolute): the
  tensor is kept, its reader refuses with "refused: not a file name inside dump_tensor_data";
* a ``data_name`` whose file is missing, or whose suffix is neither ``.pt`` nor ``.npy``: the
  tensor's reader says so (the row carries it), a note counts them;
* files of ``dump_tensor_data`` no entry names: ``run.skipped`` with the reason.

Links (trust policy): a file of ``dump_tensor_data`` is read only when its real path (every
symbolic link resolved) lies inside the dump tree -- the dump folder holding ``dump.json``, or
the path the run was opened from (the root given on the command line). A link that leaves the
tree (``x.pt -> /home/user/secret.pt``, or ``dump_tensor_data`` itself a link elsewhere) is never
opened: the tensor's row says "refused: a symbolic link to ... outside the dump tree ...", the
file is in ``run.skipped`` with that reason and a note counts them. Links inside the tree are
followed. The check is made when the folder is listed and again (one ``lstat``) just before
the file is read.
"""

from __future__ import annotations

import functools
import json
import math
import operator
import os
import reprlib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from convert.codecs.npy import load_npy, read_npy_header
from convert.codecs.torch_pt import load_pt, read_pt_header
from convert.entries import list_entries, os_problem
from convert.names.msprobe import SECTION_WORDS, item_name, msprobe_dtype, parse_msprobe_name

from ..errors import CompareError, DumpFormatError
from ..records import Argument, DumpLayout, Run, RunKind, TensorKind, TensorRef
from ..tensor_table import OpsView, TensorTable, special_row
from . import msprobe_folders
from .msprobe_folders import DATA_DIR, DUMP_JSON, folder_coords, select_folder
from .msprobe_graph import dump_calls, dump_signature, read_msprobe_graph, read_stacks, remember_calls
from .msprobe_json import SECTIONS, _is_tensor, named_leaves, read_dump_json
from .reader import OpenRequest, RecordedGraph, TreeReader
from .selection import Candidate, Selection

#: Recorded statistic -> vcompare's statistic name (:data:`compare.loaders.stats_csv.STAT_COLUMNS`).
_STATS = {"Max": "max", "Min": "min", "Mean": "avg", "Norm": "l2norm", "md5": "checksum"}
_FORMAT = "ND"


# --------------------------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------------------------

#: Messages show JSON values through this: a few levels, a few items, long values cut (a crafted
#: value nested 900 deep or 4000 digits long never reaches ``repr``).
_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxlong, _SHOW.maxstring, _SHOW.maxother = 3, 6, 4, 24, 40, 40


def _safe_name(name: str) -> bool:
    """A plain file name: no separator, not ``.``/``..``, no NUL, not absolute."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0") and not os.path.isabs(name)


def _refuse(path: Path, why: str) -> np.ndarray:
    raise DumpFormatError(path, why)


def _inside(real: str, trees: tuple[str, ...]) -> bool:
    """Whether the real path ``real`` lies in (or is) one of the real folders ``trees``."""
    return any(real == tree or real.startswith(tree.rstrip(os.sep) + os.sep) for tree in trees)


def _link_outside(path: Path, trees: tuple[str, ...]) -> str | None:
    """Why the data file ``path`` must not be read: its real path leaves the dump tree; None when
    it stays inside."""
    real = os.path.realpath(path)
    if _inside(real, trees):
        return None
    return (f"refused: a symbolic link to {real}, outside the dump tree ({' or '.join(trees)}): never read")


def _guard(path: Path, trees: tuple[str, ...]) -> None:
    """Just before reading: a file that became a link out of the tree since the listing is refused."""
    try:
        is_link = os.path.islink(path)
    except OSError:
        return  # the reader's own open says why
    if is_link:
        why = _link_outside(path, trees)
        if why is not None:
            raise DumpFormatError(path, why)


def _read_npy(path: Path, trees: tuple[str, ...] = ()) -> np.ndarray:
    if trees:
        _guard(path, trees)
    return load_npy(path, read_npy_header(path))


def _read_pt(path: Path, trees: tuple[str, ...] = ()) -> np.ndarray:
    if trees:
        _guard(path, trees)
    return load_pt(path, read_pt_header(path))


#: ``_STATS`` as pairs, for the loop of :func:`_stats`.
_STAT_PAIRS = tuple(_STATS.items())


def _stats(item: dict) -> dict:
    """The recorded statistics of a tensor item (module doc), by the general rules: numbers as
    floats (an integer beyond the float range as +-inf), a text checksum, null kept as None, other
    values left out. (:func:`_tensor` takes msprobe's usual item -- four floats and a text or no
    ``md5`` -- as it is, without this; a property test holds the two equal.)"""
    out: dict[str, float | str | None] = {}
    for key, name in _STAT_PAIRS:
        if key not in item:
            continue
        value = item[key]
        if type(value) is float:
            out[name] = value
        elif isinstance(value, (int, float)):  # bool included (an int)
            try:
                out[name] = float(value)
            except OverflowError:  # an integer beyond the float range: +-inf, as a float conversion overflows
                out[name] = math.inf if value > 0 else -math.inf
        elif isinstance(value, str) and name == "checksum":
            out[name] = value
        elif value is None:  # msprobe's null (no mean / norm of an integer tensor)
            out[name] = None
    return out


@dataclass
class _Files:
    """The files of ``dump_tensor_data`` (by name) and which of them entries named."""

    folder: Path
    names: set[str]
    used: set[str]
    #: The real folders a file may lie in (links resolved): the dump folder, the opened root.
    trees: tuple[str, ...] = ()
    #: Files that are links out of the tree -> why they are refused (never read).
    outside: dict[str, str] = field(default_factory=dict)
    missing: int = 0
    refused: int = 0
    linked_out: int = 0
    #: Tensors without data (no ``data_name``: statistics only).
    statistics_only: int = 0
    #: Tensors given a file of ``folder`` as their path (named by a safe ``data_name``).
    with_files: int = 0
    #: ``dtype`` text -> (numpy-style name, bytes per element): :func:`_dtype_info`'s memo for this
    #: ``dump.json`` (a few types, 10^5 tensors; per file, so a crafted file's many texts go with it).
    dtypes: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: Shape -> (its one tuple, its element count), for this ``dump.json``: :func:`_tensor` gives the
    #: tensors of a shape one tuple (~80 bytes a tensor less; a dump has a few hundred shapes).
    shapes: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = field(default_factory=dict)
    #: An entry's keys -> its sections (:func:`_section_plan`), for this ``dump.json``.
    plans: dict[tuple[str, ...], tuple[tuple[str, bool, str], ...]] = field(default_factory=dict)
    #: The ``files`` of an op without data files: ``(dump.json,)``, one tuple for them all.
    json_only: tuple[Path, ...] = ()


#: The shape of a tensor item is a list of non-negative integers whose types are all in here
#: (``bool`` excluded: JSON's ``true`` is no dimension).
_INT_ONLY = frozenset({int})


#: The kinds (a member read through its enum class is a Python-level lookup: ~65 ns, 10^5 times a side).
_INPUT, _OUTPUT = TensorKind.INPUT, TensorKind.OUTPUT

#: ``TensorKind.value`` by "is an input" (the enum's ``value`` and hash are Python-level calls:
#: 200,000 tensors a side).
_KIND_TEXT = {True: TensorKind.INPUT.value, False: TensorKind.OUTPUT.value}

#: ``type`` texts of tensor items msprobe writes: known tensors without :func:`_is_tensor`'s tests.
_TENSOR_TYPES = frozenset({"torch.Tensor", "mindspore.Tensor", "torch.nn.parameter.Parameter",
                           "mindspore.common.parameter.Parameter"})


def _dtype_info(text: str, files: _Files) -> tuple[str, int]:
    """:func:`~convert.names.msprobe.msprobe_dtype` of a ``dtype`` text and the bytes per element of
    that name (0 for a name numpy does not know), remembered in ``files.dtypes``."""
    found = files.dtypes.get(text)
    if found is None:
        dtype = msprobe_dtype(text)
        try:
            itemsize = np.dtype(dtype).itemsize
        except (TypeError, ValueError):  # not a numpy name; a name that is not even text numpy reads (UnicodeError)
            itemsize = 0
        found = files.dtypes[text] = (dtype, itemsize)
    return found


#: The data type of an item without a ``dtype`` text.
_NO_DTYPE = ("unknown", 0)


def _item_dtype(value: object, files: _Files) -> tuple[str, int]:
    """The (name, bytes per element) of an item's ``dtype`` value (:func:`_dtype_info`,
    remembered per file), ``("unknown", 0)`` when it is no text."""
    if type(value) is str:
        known = files.dtypes.get(value)
        return known if known is not None else _dtype_info(value, files)
    return _NO_DTYPE


def _grad(value: object) -> bool | None:
    """An item's ``requires_grad``: True or False as recorded, None for anything else."""
    return value if value is True or value is False else None  # type: ignore[return-value]


def _tensor(op: str, kind: TensorKind, index: int, item: dict, files: _Files,
            json_path: Path, label: str = "") -> tuple[TensorRef, str | None]:
    """The TensorRef of a tensor leaf, and what is wrong with its item (a malformed shape: the
    reader then refuses with that reason), None when nothing is.

    Written for 10^5-10^6 leaves a dump: msprobe's usual statistics (four floats and a text or no
    ``md5``) are taken as they are here, any other item goes through :func:`_stats`'s general
    rules (a property test holds the two equal); types and shapes are remembered per file
    (:func:`_dtype_info`, ``files.shapes``: the tensors of one shape share one tuple); the record
    is built positionally."""
    get = item.get
    grad = _grad(get("requires_grad"))
    dtype, itemsize = _item_dtype(get("dtype"), files)
    shape_value = get("shape")
    known_shape = None
    if type(shape_value) is list and _INT_ONLY.issuperset(map(type, shape_value)):
        shape = tuple(shape_value)
        known_shape = files.shapes.get(shape)  # a shape seen before was a valid one
        if known_shape is None and (not shape or min(shape) >= 0):
            known_shape = files.shapes[shape] = (shape, math.prod(shape))
    if known_shape is None:
        why = (f"{op} {_KIND_TEXT[kind is _INPUT]} {index}: shape {_SHOW.repr(shape_value)} is not a list "
               "of non-negative integers")
        return TensorRef(op, kind, index, dtype, _FORMAT, (), json_path,
                         reader=functools.partial(_refuse, json_path, why), label=label, requires_grad=grad), why
    shape, count = known_shape
    high, low, mean, norm = get("Max"), get("Min"), get("Mean"), get("Norm")
    checksum = get("md5")
    if (type(high) is float and type(low) is float and type(mean) is float and type(norm) is float
            and (type(checksum) is str or "md5" not in item)):
        stats: dict = ({"max": high, "min": low, "avg": mean, "l2norm": norm, "checksum": checksum}
                       if checksum is not None else {"max": high, "min": low, "avg": mean, "l2norm": norm})
    else:
        stats = _stats(item)
    source = f"{DUMP_JSON} {op} {'input' if kind is _INPUT else 'output'} {index}"
    nbytes = count * itemsize
    data_name = get("data_name")
    if type(data_name) is not str or data_name in ("", "-1"):
        # statistics only; recorded statistics (possibly none: the row then says so) instead of data
        files.statistics_only += 1
        return TensorRef(op, kind, index, dtype, _FORMAT, shape, json_path, (), 0, 0, nbytes, None, stats, source,
                         "", label, grad), None
    if not _safe_name(data_name):
        files.refused += 1
        why = f"data_name {_SHOW.repr(data_name)} of {op} refused: not a file name inside {DATA_DIR}"
        return TensorRef(op, kind, index, dtype, _FORMAT, shape, json_path, (), 0, 0, nbytes,
                         functools.partial(_refuse, json_path, why), stats or None, source, "", label, grad), None
    path = files.folder / data_name
    files.used.add(data_name)
    files.with_files += 1
    if data_name not in files.names:
        files.missing += 1
        reader = functools.partial(_refuse, path, f"missing: {DUMP_JSON} names it for {op} "
                                                  f"{_KIND_TEXT[kind is _INPUT]} {index}")
    elif data_name in files.outside:
        files.linked_out += 1
        reader = functools.partial(_refuse, path, files.outside[data_name])
    elif data_name.endswith(".npy"):
        reader = functools.partial(_read_npy, path, files.trees)
    elif data_name.endswith(".pt"):
        reader = functools.partial(_read_pt, path, files.trees)
    else:
        reader = functools.partial(_refuse, path, "neither .pt nor .npy: not a tensor file vcompare reads")
    return TensorRef(op, kind, index, dtype, _FORMAT, shape, path, (), 0, 0, nbytes, reader, stats or None, source,
                     "", label, grad), None


def _label(call: str, key: str, place: tuple[str | int, ...], section: object, grads: bool) -> str:
    """msprobe's name of one item (:func:`convert.names.msprobe.item_name`; a ``parameters_grad``
    item is ``{call}.{key}``, with its list position only when the key holds several)."""
    if grads:
        several = isinstance(section, list) and len(section) > 1
        return ".".join((call, key, *(str(p) for p in place))) if several else f"{call}.{key}"
    return item_name(call, key, place)


def _argument(label: str, kind: TensorKind, index: int, leaf: object) -> Argument:
    """A non-tensor item as an :class:`Argument` (module doc): ``null`` is type ``None``; an item's
    ``value`` is kept when it is a JSON scalar, else written as compact JSON text (a slice's
    ``[start, stop, step]``); an item without ``value`` is its other fields as JSON text."""
    if leaf is None:
        return Argument(label, kind, index, "None", None)
    if not isinstance(leaf, dict):  # a bare value (not written by msprobe)
        return Argument(label, kind, index, type(leaf).__name__, _scalar(leaf), _is_number(leaf))
    type_text = leaf.get("type")
    type_name = type_text if isinstance(type_text, str) else "unknown"
    if "value" in leaf:
        value = _scalar(leaf["value"])
    else:
        value = _json_text({k: v for k, v in leaf.items() if k != "type"})
    return Argument(label, kind, index, type_name, value, _is_number(value))


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _scalar(value: object) -> bool | int | float | str | None:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value  # type: ignore[return-value]
    return _json_text(value)


def _json_text(value: object) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return _SHOW.repr(value)


#: The sections of a forward / backward entry (:data:`~compare.loaders.msprobe_json.SECTIONS`).
_SECTION_KEYS = frozenset(key for key, _ in SECTIONS)


#: The places of the first items of a list section as text (``"0"``, ``"1"`` ...), made once.
_PLACES = tuple(map(str, range(64)))


def _section_plan(keys: tuple[str, ...], files: _Files, unknown: set[str]) -> tuple[tuple[str, bool, str], ...]:
    """The sections an entry with these keys is read by, in :data:`SECTIONS` order, as (key,
    whether its items are inputs, the start of their names after the call: ``input.``); the keys
    that are no section go to ``unknown``. Remembered in ``files.plans`` (entries of one
    ``dump.json`` share a few key lists)."""
    plan = tuple((key, kind is _INPUT, f"{SECTION_WORDS.get(key, key)}.") for key, kind in SECTIONS if key in keys)
    unknown.update(key for key in keys if key not in _SECTION_KEYS)
    files.plans[keys] = plan
    return plan


def _flat(section: list | dict) -> bool:
    """Whether msprobe wrote ``section`` flat: a list or object (not itself a leaf) whose every item
    is a leaf (:func:`~compare.loaders.msprobe_json.is_leaf`); such a section's items are named
    ``{call}.{word}.{place}`` (list position, object key) and numbered in order -- what
    :func:`~compare.loaders.msprobe_json.named_leaves` gives, without its generators."""
    if type(section) is dict and ("type" in section or "dtype" in section):
        return False
    for item in (section if type(section) is list else section.values()):
        if item is not None and not (type(item) is dict and ("type" in item or "dtype" in item)):
            return False
    return True


#: The keys msprobe's usual tensor item always has (:func:`_plain`: one C call reads them).
_USUAL = operator.itemgetter("Max", "Min", "Mean", "Norm", "shape")


def _plain(item: dict, files: _Files, call: int, is_input: bool, index: int, label: str) -> tuple | None:
    """The row tuple (:data:`~compare.tensor_table.TENSOR_FIELDS`) of a tensor item of msprobe's
    usual statistics form (a valid shape, four float statistics and a text or no ``md5``, no
    ``data_name``), with the values :func:`_tensor` would record (a property test holds the two
    equal); None for any other item (:func:`_tensor` then builds its record)."""
    try:
        high, low, mean, norm, shape_value = _USUAL(item)
    except KeyError:
        return None
    if type(high) is not float or type(low) is not float or type(mean) is not float or type(norm) is not float:
        return None
    get = item.get
    checksum = get("md5")
    if type(checksum) is not str and (checksum is not None or "md5" in item):
        return None
    data_name = get("data_name")
    if type(data_name) is str and data_name not in ("", "-1"):
        return None
    if type(shape_value) is not list or not _INT_ONLY.issuperset(map(type, shape_value)):
        return None
    shape = tuple(shape_value)
    known_shape = files.shapes.get(shape)
    if known_shape is None:
        if shape and min(shape) < 0:
            return None
        known_shape = files.shapes[shape] = (shape, math.prod(shape))
    dtype, itemsize = _item_dtype(get("dtype"), files)
    files.statistics_only += 1
    return (call, is_input, index, dtype, known_shape[0], known_shape[1] * itemsize, label,
            _grad(get("requires_grad")), high, low, mean, norm, checksum)


def _leaf_tensor(rows: list[tuple], special: dict[int, TensorRef], call: int, name: str, kind: TensorKind, index: int,
                 leaf: dict, files: _Files, json_path: Path, label: str, problems: list[str]) -> None:
    """Append one tensor leaf to the rows of a table: its columns (:func:`_plain`), else its record
    (:func:`_tensor`) as a special row (``special``), its problem to ``problems``."""
    row = _plain(leaf, files, call, kind is _INPUT, index, label)
    if row is None:
        ref, problem = _tensor(name, kind, index, leaf, files, json_path, label)
        special[len(rows)] = ref
        row = special_row(call, ref)
        if problem is not None:
            problems.append(problem)
    rows.append(row)


def _entry_call(table: TensorTable, rows: list[tuple], name: str, entry: object, files: _Files, json_path: Path,
                unknown: set[str], stack: tuple[str, ...] = ()) -> list[str]:
    """Append one ``data`` entry to the table as its next call (module doc), its tensors to
    ``rows`` (:meth:`~compare.tensor_table.TensorTable.set_tensors` makes them columns), and give
    the problems of its items when the call keeps some tensors (else they are its ``error``);
    ``unknown`` collects sections not read.

    Written for 10^5 entries a dump: the sections of an entry come from a plan remembered per key
    list (:func:`_section_plan`), a flat section (:func:`_flat`, msprobe's usual one) is labelled
    and numbered in one loop, other sections take the general walk
    (:func:`~compare.loaders.msprobe_json.named_leaves`, :func:`_label`)."""
    call = len(table.names)
    parsed = parse_msprobe_name(name)
    table.names.append(name)
    table.op_types.append(parsed.op_type if parsed is not None else None)
    table.stacks.append(stack)
    if type(entry) is not dict:
        table.arguments.append(())
        table.files.append((json_path,))
        table.errors.append(f"{json_path}: entry {name!r} is a JSON {type(entry).__name__}, not an object")
        table.starts.append(len(rows))
        return []
    grads = parsed is not None and parsed.direction == "parameters_grad"
    if grads:
        plan = tuple((key, False, "") for key in entry)
    else:
        keys = tuple(entry)
        plan = files.plans.get(keys)  # type: ignore[assignment]
        if plan is None:
            plan = _section_plan(keys, files, unknown)
    first = len(rows)
    special = table.special
    counts = [0, 0]  # the next output and input index
    problems: list[str] = []
    arguments: list[Argument] = []
    with_files = files.with_files  # unchanged after the items: no tensor of the call has a data file
    for key, is_input, word in plan:
        section = entry[key]
        section_type = type(section)
        if section_type is list or section_type is dict:
            if not section:
                continue  # no items
            flat = not grads and _flat(section)
        elif section is None:
            flat = False
        else:
            problems.append(f"section {key!r} is a JSON {section_type.__name__}, not a list or object")
            continue
        kind = _INPUT if is_input else _OUTPUT
        index = counts[is_input]
        if flat:
            prefix = f"{name}.{word}"
            if section_type is list:
                count = len(section)
                places: object = _PLACES[:count] if count <= 64 else map(str, range(count))
                items: object = section
            else:
                places, items = section.keys(), section.values()
            for place, leaf in zip(places, items):  # type: ignore[call-overload]
                if leaf is not None:
                    leaf_type = leaf.get("type")
                    if (type(leaf_type) is str and leaf_type in _TENSOR_TYPES) or _is_tensor(leaf):
                        _leaf_tensor(rows, special, call, name, kind, index, leaf, files, json_path, prefix + place,
                                     problems)
                        index += 1
                        continue
                arguments.append(_argument(prefix + place, kind, index, leaf))
                index += 1
        else:
            try:
                labelled = [(_label(name, key, place, section, grads), leaf) for place, leaf in named_leaves(section)]
            except ValueError as exc:
                problems.append(f"section {key!r}: {exc}")
                continue
            for label, leaf in labelled:
                if _is_tensor(leaf):
                    _leaf_tensor(rows, special, call, name, kind, index, leaf, files, json_path,  # type: ignore[arg-type]
                                 label, problems)
                else:
                    arguments.append(_argument(label, kind, index, leaf))
                index += 1
        counts[is_input] = index
    end = len(rows)
    table.starts.append(end)
    table.arguments.append(tuple(arguments))
    error = None
    if problems and end == first:
        error = f"{json_path}: entry {name!r}: " + "; ".join(problems)
    table.errors.append(error)
    if files.with_files == with_files:
        table.files.append(files.json_only)
    else:  # the data files of its special rows, inputs first (OpDump.files)
        refs = [special[row] for row in range(first, end) if row in special]
        ordered = [r for r in refs if r.kind is _INPUT] + [r for r in refs if r.kind is not _INPUT]
        table.files.append((json_path, *dict.fromkeys(
            r.path for r in ordered if r.path is not json_path and r.path != json_path)))
    return problems if error is None else []


def _trees(folder: Path, root: Path | None) -> tuple[str, ...]:
    """The real folders data files may lie in (module doc): the dump folder, and the root the run
    was opened from when it is a folder."""
    trees = [os.path.realpath(folder)]
    if root is not None and os.path.isdir(root):
        real = os.path.realpath(root)
        if real not in trees:
            trees.append(real)
    return tuple(trees)


def _links_out(data_dir: Path, files: tuple[os.DirEntry, ...], trees: tuple[str, ...]) -> dict[str, str]:
    """The files of ``data_dir`` whose real path leaves the dump tree, with why. Only links (and
    all files when ``data_dir`` itself resolves outside) cost a ``realpath``."""
    if not _inside(os.path.realpath(data_dir), trees):
        return {e.name: why for e in files if (why := _link_outside(Path(e.path), trees)) is not None}
    out: dict[str, str] = {}
    for entry in files:
        try:
            is_link = entry.is_symlink()
        except OSError:
            is_link = True
        if is_link:
            why = _link_outside(Path(entry.path), trees)
            if why is not None:
                out[entry.name] = why
    return out


def scan_msprobe(folder: Path, *, root: Path | None = None, coords: dict | None = None) -> Run:
    """Read one msprobe dump folder (``dump.json`` + ``dump_tensor_data``) as a Run (module doc).

    Raises :class:`DumpFormatError` when ``dump.json`` is not an msprobe one; everything else is
    kept as rows with their reasons.
    """
    folder = Path(folder)
    json_path = folder / DUMP_JSON
    signature = dump_signature(json_path)
    dump = read_dump_json(json_path)
    remember_calls(signature, dump_calls(dump.data))  # the call graph's part: dump.json is parsed once
    run = Run(root=Path(root) if root is not None else folder, path=folder, kind=RunKind.NUMPY,
              family=DumpLayout.MSPROBE, coords=dict(coords if coords is not None else folder_coords(folder)))
    data_dir = folder / DATA_DIR
    names: set[str] = set()
    trees = _trees(folder, root)
    outside: dict[str, str] = {}
    if data_dir.is_dir():
        try:
            entries = list_entries(data_dir)
        except OSError as exc:
            raise CompareError(f"cannot list {data_dir}: {os_problem(exc, data_dir)}") from exc
        names = {e.name for e in entries.files}
        run.skipped.extend(entries.problems)
        outside = _links_out(data_dir, entries.files, trees)
    files = _Files(folder=data_dir, names=names, used=set(), trees=trees, outside=outside, json_only=(json_path,))
    unknown: set[str] = set()
    partial: list[str] = []
    stacks = read_stacks(folder, run.notes)
    data = dump.data
    table = TensorTable(json_path)
    rows: list[tuple] = []
    for position, (name, entry) in enumerate(data.items()):
        problems = _entry_call(table, rows, name, entry, files, json_path, unknown, stacks.get(name, ()))
        data[name] = None  # its columns are built: the entry's parse is freed now, its memory reused for them
        run.order[name] = position
        if problems:
            partial.extend(problems)
    table.set_tensors(rows)
    del rows
    run.ops, run.tensors = OpsView(table), table  # type: ignore[assignment]
    tensors = len(table)
    without_data = files.statistics_only
    run.notes.append(f"msprobe dump {folder} ({dump.framework or 'framework not given'}, task "
                     f"{dump.task or '?'}, level {dump.level or '?'}): {len(run.ops)} call(s), {tensors} tensor(s)")
    if without_data:
        run.stats_only = True
        run.notes.append(f"{without_data} tensor(s) have statistics only (no data_name): this side is compared by "
                         "the statistics dump.json records")
    if files.missing:
        run.notes.append(f"{files.missing} tensor file(s) named by {DUMP_JSON} are missing from {data_dir} "
                         "(their rows say which)")
    if files.refused:
        run.notes.append(f"{files.refused} data_name(s) refused: not plain file names inside {DATA_DIR} "
                         "(their rows say which)")
    if unknown:
        run.notes.append(f"{DUMP_JSON} sections not read (not tensors of a call): {', '.join(sorted(unknown))}")
    if partial:
        shown = "; ".join(partial[:5]) + (f"; and {len(partial) - 5} more" if len(partial) > 5 else "")
        run.notes.append(f"{len(partial)} item(s) of {DUMP_JSON} are not usable tensors: {shown}")
    if outside:
        run.notes.append(f"{len(outside)} file(s) of {data_dir} are symbolic links out of the dump tree: never read "
                         f"({files.linked_out} of them named by {DUMP_JSON}; their rows and the skipped list say "
                         "which)")
        run.skipped.extend((data_dir / name, why) for name, why in sorted(outside.items()))
    for name in sorted(names - files.used - outside.keys()):
        run.skipped.append((data_dir / name, f"not named by any data_name of {DUMP_JSON}"))
    if not run.ops:
        run.notes.append(f"{json_path}: the data object is empty (nothing was dumped)")
    return run


def load_msprobe(path: str | os.PathLike, candidates: list[Candidate], selection: Selection) -> Run:
    """The run of the dump folder the selection picks among ``candidates`` (:func:`compare.loaders.msprobe_folders.claim`)."""
    chosen, notes = select_folder(path, candidates, selection)
    run = scan_msprobe(chosen.path, root=Path(path), coords=dict(chosen.coords))
    run.notes[1:1] = notes
    return run


class MsprobeReader(TreeReader):
    """The ``msprobe`` reader: ``dump.json`` folders (:mod:`compare.loaders.msprobe_folders` finds and
    chooses them, this module reads one). Asked before every other reader: the ``rank`` /
    ``iteration`` (``step{N}``) options choose the folder."""

    name = "msprobe"
    kinds = (RunKind.NUMPY,)
    part_trees = ("an msprobe step{N}/rank{R} tree",)

    def guess_can_open(self, folder: Path) -> bool:
        return msprobe_folders.sniff(folder)

    def explain(self, folder: Path) -> str:
        return msprobe_folders.explain(folder)

    def open(self, folder: Path, request: OpenRequest) -> Run:
        candidates = msprobe_folders.claim(folder)
        if candidates is None:
            raise CompareError(f"{folder}: {msprobe_folders.explain(folder)}")
        return load_msprobe(request.root, candidates, Selection())

    def claim_tree(self, path: str | os.PathLike, request: OpenRequest,
                   problems: list[tuple[Path, str]]) -> list[Candidate] | None:
        """The ``dump.json`` folders of ``path``; what the search could not read goes to ``problems``
        only when the tree is claimed (else the next reader walks it for itself)."""
        searched: list[tuple[Path, str]] = []
        found = msprobe_folders.claim(path, problems=searched)
        if found is not None:
            problems.extend(searched)
        return found

    def open_tree(self, path: str | os.PathLike, candidates: list[Candidate], request: OpenRequest) -> Run:
        return load_msprobe(path, candidates, request.selection)

    def is_run_file(self, path: Path) -> bool:
        """msprobe's ``dump.json`` is its run (``-l A/dump.json -r B/dump.json``: two runs)."""
        return path.name == DUMP_JSON

    def graph(self, run: Run, ops: Collection[str], notes: list[str]) -> RecordedGraph | None:
        """The call graph of an msprobe run's dump folder (:func:`compare.loaders.msprobe_graph.read_msprobe_graph`);
        None for a run of another family, and (with a note) when it cannot be read."""
        if run.family is not DumpLayout.MSPROBE:
            return None
        try:
            return RecordedGraph(read_msprobe_graph(run.path))
        except CompareError as exc:
            notes.append(f"msprobe call graph not used: {exc}")
            return None

    def owns(self, candidate: Candidate) -> bool:
        return candidate.layout is DumpLayout.MSPROBE

    def select_one(self, path: str | os.PathLike, candidates: list[Candidate], selection: Selection) -> Candidate | None:
        return select_folder(path, candidates, selection)[0]

    def select_parts(self, candidates: list[Candidate], selection: Selection, *, where: str,
                     notes: list[str]) -> list[Candidate]:
        return msprobe_folders.select_parts(where, candidates, selection, notes)

    def scan_part(self, candidate: Candidate, *, root: Path, version: int | None = None,
                  keep_raw_names: bool = False) -> Run:
        run = scan_msprobe(candidate.path, root=root, coords=dict(candidate.coords))
        run.notes.insert(0, f"using msprobe dump folder {candidate.path} ({candidate.describe()})")
        return run

    def load_part(self, path: str | os.PathLike, candidates: list[Candidate], selection: Selection, *,
                  version: int | None = None, keep_raw_names: bool = False) -> Run:
        return load_msprobe(path, candidates, selection)

    def part_op_names(self, candidate: Candidate) -> list[str]:
        """A folder's call names: its ``dump.json`` is read (metadata only)."""
        return list(self.scan_part(candidate, root=candidate.path).ops)


#: The msprobe reader (:data:`compare.loaders.READERS`).
READER = MsprobeReader()


__all__ = ["READER", "MsprobeReader", "load_msprobe", "scan_msprobe"]
