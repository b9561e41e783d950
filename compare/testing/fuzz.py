"""Fuzz vcompare's loaders and a whole network run with mutated inputs; report what escaped.

The command line is ``scripts/fuzz.py`` (:func:`run` with its arguments):

    python scripts/fuzz.py                    # 10,000 inputs, seed 0
    python scripts/fuzz.py --n 50000 --seed 7 --json fuzz.json

Every input is a valid file of the project's own synthetic network
(:func:`compare.testing.synthetic.make_network`) run through one seeded mutator, then through the code
that reads it:

``dump-v2`` / ``dump-v1``
    an Ascend dump (binary / pure protobuf), byte-level or structure-aware mutations (shapes,
    data types, formats, sizes, extra tensors ... re-serialised); read with
    ``convert.codecs.dumpfile.read_header`` + ``read_tensor`` for every tensor.
``npy``
    a golden ``.npy``: header dict (shape, descr, fortran_order), format version, header length,
    body; read with ``read_npy_header`` + ``load_npy`` (and every element touched).
``rule``
    the fusion rule JSON: keys deleted, types changed, nulls, huge numbers, deep nesting,
    duplicated / renamed operators, text damage; read with ``load_fusion_rule`` and the quant
    filter.
``mapping``
    ``mapping.csv`` of a dump folder whose files carry hashed names: ``../`` and absolute
    paths, wrong column counts, NUL, duplicates, bad quoting, non-UTF-8; read with ``load_run``.
``network``
    a copy of the whole network with 1-3 of its files mutated (sometimes the rule or mapping.csv
    too, sometimes a dump renamed with a byte that is not UTF-8), compared with
    ``compare.runs.folders.run_network`` and written with ``write_report`` -- or, one time in five,
    run through the command line (``compare.cli.app``): a traceback or exit code 1 (the
    gate-failed code, and no gate was given) is an escape.
``sparse``
    a sparse file of up to 64 GiB (a few real bytes) whose lengths claim it all: a dump's
    version-2 header length, a version-1 protobuf field, a ``.npy`` header length; read as the
    loaders do. A ``MemoryError`` (an allocation of what a length claims) is an escape.
``names``
    the network with one operator renamed, in the rule, its dump and its golden, to a name with
    control characters and spreadsheet formula starts (``\r=1+1``, ``\n@SUM(A1)``, ESC ...), and
    one op type likewise; the report is written and read back with ``csv``: a row split in two, a
    lost operator, or a cell starting with ``= + - @`` not neutralised is an escape.
``tree``
    the network with hostile entries added to its dump folder: a symlink loop, a broken link and
    a directory under dump names, a FIFO and a link to ``/dev/zero`` under dump names; the run
    must not hang (an alarm of :data:`DEADLINE` seconds), must compare every healthy operator and
    must name every hostile entry in its notes.

Every input runs under an alarm of :data:`DEADLINE` seconds: a **hang** is an escape.

An **escape** is any exception that is not a :class:`compare.errors.CompareError` -- and, in a
network run, *any* exception when only dump / .npy / mapping files were mutated (per-file
problems must become rows), a row whose reason says "internal error", or an operator of the
left folder that appears in no row. Refusals are grouped into **error kinds**: the exception
class plus the first words of its problem with numbers, paths and quoted text normalised.

The mutators are plain functions of a ``random.Random``; ``tests/props/test_fuzz.py`` drives the same
functions from hypothesis for the bounded CI pass.

One module (test support, over 600 lines): the mutators, the targets and the escape rules are
one table read together; splitting them would scatter what counts as an escape.
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import shutil
import signal
import struct
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from compare.errors import CompareError

#: Integers that break size arithmetic most often.
INTERESTING = [0, 1, 2, 3, 7, 8, 15, 16, 127, 128, 255, 256, 4095, 4096, 65535, 65536, 2**31 - 1, 2**31,
               2**32 - 1, 2**32, 2**40, 10**12, 2**62, 2**63 - 1, 2**63, 2**64 - 1]

#: Seconds an input may take before it counts as a hang (an escape).
DEADLINE = 60

#: Files of the synthetic network that mutations may hit in a network run (the trans/conv1 dumps
#: and the goldens they need stay healthy, so that pairing always has something to compare).
MUTABLE_DUMPS = ("Pooling.pool1.", "FullyConnection.fc1.", "SoftmaxV2.prob.")
MUTABLE_GOLDENS = ("pool1.0.", "fc1.0.", "prob.0.", "bn1.0.", "conv1.0.")


# ============================================================================ byte mutators


def _pos(rng: random.Random, data: bytes, *, end: bool = False) -> int:
    return rng.randint(0, len(data)) if end or not data else rng.randrange(len(data))


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """1-3 generic byte-level edits: truncate, flip, overwrite, insert, delete, splice integers."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        choice = rng.randrange(9)
        if choice == 0 and out:  # truncate
            del out[rng.randint(0, len(out) - 1):]
        elif choice == 1 and out:  # flip bits
            for _ in range(rng.randint(1, 8)):
                out[_pos(rng, out)] ^= 1 << rng.randrange(8)
        elif choice == 2 and out:  # overwrite a run with random bytes
            at = _pos(rng, out)
            for k in range(at, min(len(out), at + rng.randint(1, 16))):
                out[k] = rng.randrange(256)
        elif choice == 3:  # insert random bytes
            at = _pos(rng, out, end=True)
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
        elif choice == 4 and out:  # delete a run
            at = _pos(rng, out)
            del out[at:at + rng.randint(1, 64)]
        elif choice == 5 and len(out) >= 8:  # an interesting integer at a random offset
            at = rng.randrange(len(out) - 7)
            value = rng.choice(INTERESTING)
            out[at:at + 8] = struct.pack("<Q", value % 2**64)
        elif choice == 6 and len(out) >= 4:
            at = rng.randrange(len(out) - 3)
            out[at:at + 4] = struct.pack("<I", rng.choice(INTERESTING) % 2**32)
        elif choice == 7:  # append garbage
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        elif out:  # duplicate a run
            at = _pos(rng, out)
            out[at:at] = out[at:at + rng.randint(1, 64)]
    return bytes(out)


# ============================================================================ dump mutators


def _split_v2(data: bytes) -> tuple[Any, bytes]:
    from convert.codecs import dump_proto

    (hlen,) = struct.unpack("<Q", data[:8])
    return dump_proto.DumpData.FromString(data[8:8 + hlen]), data[8 + hlen:]


def _rand_dim(rng: random.Random) -> int:
    return rng.choice(INTERESTING + [rng.randint(0, 64) for _ in range(6)]) % 2**64


def _mutate_tensor(t: Any, rng: random.Random, *, v1: bool) -> None:
    choice = rng.randrange(10)
    if choice == 0 and len(t.shape.dim):
        t.shape.dim[rng.randrange(len(t.shape.dim))] = _rand_dim(rng)
    elif choice == 1:
        t.shape.dim.append(_rand_dim(rng))
    elif choice == 2:
        t.ClearField("shape")
    elif choice == 3:
        del t.shape.dim[:]
        t.shape.SetInParent()
    elif choice == 4:
        t.data_type = rng.choice(list(range(0, 32)) + [255, 2**31 - 1, 99])
    elif choice == 5:
        t.format = rng.choice(list(range(0, 48)) + [255, 1000, 2**31 - 1])
    elif choice == 6:
        t.size = rng.choice(INTERESTING) % 2**64
    elif choice == 7:
        t.original_shape.dim.extend(_rand_dim(rng) for _ in range(rng.randint(0, 5)))
    elif choice == 8:
        t.sub_format = rng.choice([0, 1, -1, 2**31 - 1, -(2**31)])
    elif v1:
        t.data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 3, 100])))
    else:
        t.shape.dim[:] = [rng.randint(0, 5) for _ in range(rng.randint(0, 6))]


def _mutate_message(msg: Any, rng: random.Random, *, v1: bool) -> None:
    tensors = list(msg.input) + list(msg.output)
    choice = rng.randrange(8)
    if choice <= 3 and tensors:
        for _ in range(rng.randint(1, 2)):
            _mutate_tensor(rng.choice(tensors), rng, v1=v1)
    elif choice == 4:
        new = (msg.output if rng.random() < 0.5 else msg.input).add()
        new.data_type = rng.randrange(32)
        new.shape.dim.extend(_rand_dim(rng) for _ in range(rng.randint(0, 4)))
        new.size = rng.choice(INTERESTING) % 2**64 if rng.random() < 0.5 else rng.randint(0, 64)
        if v1:
            new.data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
    elif choice == 5 and tensors:
        field_name = "output" if (msg.output and rng.random() < 0.5) or not msg.input else "input"
        del getattr(msg, field_name)[rng.randrange(len(getattr(msg, field_name)))]
    elif choice == 6:
        buf = msg.buffer.add(size=rng.choice(INTERESTING) % 2**64)
        if v1:
            buf.data = b"\x00" * rng.randint(0, 16)
    else:
        attr = msg.attr.add(name=rng.choice(["", "x", "ffts", "\u00e9"]))
        attr.value = rng.choice(["{", "[]", "null", '{"threadMode": 1}', "\u2603" * 3])
        msg.op_name = rng.choice(["", "a" * 300, "conv1", "=cmd", "x\u00e9"])


def mutate_dump(data: bytes, rng: random.Random, version: int) -> bytes:
    """A mutated dump: byte-level (40%) or a re-serialised, structure-aware edit (60%).

    Structure-aware version-2 edits keep the data blocks consistent with the declared sizes
    half of the time (so the reader gets past the size check and into the tensors).
    """
    if rng.random() < 0.4:
        return mutate_bytes(data, rng)
    from convert.codecs import dump_proto

    if version == 1:
        msg = dump_proto.DumpData.FromString(data)
        _mutate_message(msg, rng, v1=True)
        return msg.SerializeToString()
    msg, body = _split_v2(data)
    _mutate_message(msg, rng, v1=False)
    header = msg.SerializeToString()
    if rng.random() < 0.5:
        sizes = [int(t.size) for t in list(msg.input) + list(msg.output) + list(msg.buffer) + list(msg.space)]
        total = sum(sizes)
        if total > 1 << 24:  # absurd sizes: keep the body, the size check refuses the file
            pass
        elif total <= len(body):
            body = body[:total]
        else:
            body = body + bytes(rng.randrange(256) for _ in range(total - len(body)))
    return struct.pack("<Q", len(header)) + header + body


# ============================================================================ .npy mutators

_DESCRS = ["'<f4'", "'<f2'", "'<f8'", "'>f4'", "'|b1'", "'<i8'", "'|u1'", "'<c8'", "'|V2'", "'|O'", "'<U3'",
           "'|S4'", "'<M8[s]'", "'<f16'", "[('a', '<f4'), ('b', '<i4')]", "('<f4', (2, 2))", "'zz'", "3",
           "'<f4' + 'x'", "None"]
_SHAPES = ["()", "(0,)", "(3, 0, 4)", "(-1,)", "(-3, 4)", "(1000000000000,)", "(1000000, 1000000)",
           "(4611686018427387904, 4611686018427387904)", "(16,)", "(1, 3, 16, 16)", "(2.5,)", "3", "[3]",
           "(((3,),),)", "('a',)", "(True,)", "(2**10,)", "(1,) * 10000"]


def _npy_parts(data: bytes) -> tuple[tuple[int, int], str, bytes]:
    major, minor = data[6], data[7]
    if major == 1:
        (hlen,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (hlen,) = struct.unpack("<I", data[8:12])
        start = 12
    return (major, minor), data[start:start + hlen].decode("latin1"), data[start + hlen:]


def _npy_build(version: tuple[int, int], header: str, body: bytes, rng: random.Random) -> bytes:
    text = header.rstrip("\n ")
    pad = (-(len(text) + 1 + (10 if version[0] == 1 else 12))) % 64 if rng.random() < 0.8 else rng.randrange(5)
    text = text + " " * pad + "\n"
    raw = text.encode("latin1", "replace")
    if version[0] == 1 and len(raw) < 65536:
        head = b"\x93NUMPY" + bytes(version) + struct.pack("<H", len(raw))
    else:
        head = b"\x93NUMPY" + bytes((max(version[0], 2) % 256, version[1] % 256)) + struct.pack("<I", len(raw))
    return head + raw + body


def mutate_npy(data: bytes, rng: random.Random) -> bytes:
    """A mutated .npy: header dict, version, length field or body (or plain bytes, 25%)."""
    if rng.random() < 0.25 or len(data) < 12:
        return mutate_bytes(data, rng)
    version, header, body = _npy_parts(data)
    choice = rng.randrange(7)
    if choice == 0:
        header = re.sub(r"'shape': \([^)]*\)", lambda _m: f"'shape': {rng.choice(_SHAPES)}", header)
    elif choice == 1:
        header = re.sub(r"'descr': '[^']*'", lambda _m: f"'descr': {rng.choice(_DESCRS)}", header)
    elif choice == 2:
        header = header.replace("False", rng.choice(["True", "1", "None", "'no'"]))
    elif choice == 3:
        version = rng.choice([(1, 0), (2, 0), (3, 0), (0, 0), (9, 9), (1, 7)])
    elif choice == 4:
        body = body[: rng.randint(0, len(body))] if rng.random() < 0.6 else body + bytes(rng.randint(1, 100))
    elif choice == 5:
        header = rng.choice(["{", "{}", "{'descr': '<f4'}", "__import__('os').system('true')", "[1, 2]",
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'extra': 1}",
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)}" + " " * 20000, "\x00" * 40])
    else:
        header = re.sub(r"'shape': \([^)]*\)", lambda _m: f"'shape': {rng.choice(_SHAPES)}", header)
        header = re.sub(r"'descr': '[^']*'", lambda _m: f"'descr': {rng.choice(_DESCRS)}", header)
    return _npy_build(version, header, body, rng)


# ============================================================================ rule JSON mutators

_JSON_VALUES: list[Callable[[random.Random], Any]] = [
    lambda r: None, lambda r: True, lambda r: 0, lambda r: -1, lambda r: 2**64, lambda r: 10**30,
    lambda r: 1e308, lambda r: float("nan"), lambda r: float("inf"), lambda r: 1.5, lambda r: "",
    lambda r: "x", lambda r: "=cmd", lambda r: "a:b:c", lambda r: "\ud800", lambda r: [], lambda r: {},
    lambda r: [None], lambda r: {"s": None}, lambda r: {"list": {"s": [1, 2]}}, lambda r: {"i": "3"},
    lambda r: "conv1", lambda r: "pool1:0", lambda r: "pool1:-1", lambda r: "x" * 5000,
]


def _nodes(obj: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    out = [(path, obj)]
    if isinstance(obj, dict):
        for key, value in obj.items():
            out.extend(_nodes(value, path + (key,)))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out.extend(_nodes(value, path + (index,)))
    return out


def _parent(obj: Any, path: tuple) -> Any:
    for key in path[:-1]:
        obj = obj[key]
    return obj


def mutate_rule_object(rule: Any, rng: random.Random) -> tuple[Any, str | None]:
    """1-3 structure mutations of a parsed rule; ``(object, deep-nesting marker path or None)``."""
    deep = None
    for _ in range(rng.randint(1, 3)):
        nodes = _nodes(rule)
        path, node = rng.choice(nodes)
        choice = rng.randrange(8)
        if not path:
            if choice == 0:
                rule = rng.choice(_JSON_VALUES)(rng)
            continue
        parent = _parent(rule, path)
        key = path[-1]
        if choice <= 1:  # delete a key / an element
            del parent[key]
        elif choice <= 3:  # change the type (nulls, huge numbers, strings, containers)
            parent[key] = rng.choice(_JSON_VALUES)(rng)
        elif choice == 4:
            parent[key] = None
        elif choice == 5:  # duplicate or rename an op
            ops = rule.get("graph", [{}])[0].get("op") if isinstance(rule, dict) and isinstance(
                rule.get("graph"), list) and rule["graph"] and isinstance(rule["graph"][0], dict) else None
            if isinstance(ops, list) and ops:
                victim = rng.choice(ops)
                if isinstance(victim, dict):
                    twin = json.loads(json.dumps(victim))
                    if rng.random() < 0.5 and isinstance(twin, dict):
                        twin["type"] = "Renamed"
                    ops.append(twin)
        elif choice == 6:  # deep nesting
            deep = "\u0000DEEP\u0000"
            parent[key] = deep
        else:  # a huge number where an int is read
            parent[key] = rng.choice([10**400 if rng.random() < 0.3 else 2**63, -(2**63), 10**18])
    return rule, deep


def mutate_rule(text: str, rng: random.Random) -> bytes:
    """A mutated fusion rule file: structure mutations (80%) or text damage."""
    if rng.random() < 0.2:
        return mutate_bytes(text.encode(), rng)
    rule, deep = mutate_rule_object(json.loads(text), rng)
    try:
        out = json.dumps(rule)
    except (ValueError, TypeError):
        out = text
    if deep is not None:
        depth = rng.choice([50, 500, 5000, 100000])
        out = out.replace(json.dumps(deep), "[" * depth + "1" + "]" * depth, 1)
    for sub in ("\\ud800",):
        if sub in out and rng.random() < 0.5:
            out = out.replace(sub, "x")
    return out.encode("utf-8", "surrogatepass")


# ============================================================================ mapping.csv mutators


def mutate_mapping(text: str, rng: random.Random) -> bytes:
    """A mutated mapping.csv: path escapes, wrong columns, NUL, duplicates, quoting, encoding."""
    rows = [line.split(",", 1) for line in text.splitlines() if line]
    for _ in range(rng.randint(1, 3)):
        if not rows:
            rows.append(["1", "x"])
        k = rng.randrange(len(rows))
        hashed, real = rows[k][0], rows[k][-1]
        choice = rng.randrange(12)
        if choice == 0:
            rows[k] = [hashed, "../" + real]
        elif choice == 1:
            rows[k] = [hashed, "/etc/" + real]
        elif choice == 2:
            rows[k] = [hashed, real, "extra"]
        elif choice == 3:
            rows[k] = [hashed]
        elif choice == 4:
            rows[k] = [hashed, real + "\x00"]
        elif choice == 5:
            rows.append([hashed, "Conv2D.other.1.1.1704110400009999"])
        elif choice == 6:
            rows[k] = [hashed, '"' + real]
        elif choice == 7:
            rows[k] = [hashed, "x" * rng.choice([300, 200000])]
        elif choice == 8:
            rows[k] = ["", real]
        elif choice == 9:
            rows[k] = [hashed, ".."]
        elif choice == 10:
            rows[k] = [hashed, "..\\" + real]
        else:
            rows.insert(0, ["\ufeff" + hashed, real])
    out = "\n".join(",".join(row) for row in rows).encode("utf-8", "surrogatepass")
    if rng.random() < 0.15:
        out = mutate_bytes(out, rng)
    return out


# ============================================================================ the corpus


@dataclass
class Corpus:
    """Valid seed files (bytes) and a clean network folder to copy and damage."""

    root: Path
    network: dict[str, Path]
    hashed_network: dict[str, Path]
    dumps_v2: list[bytes]
    dumps_v1: list[bytes]
    npys: list[bytes]
    rule_text: str
    mapping_text: str


def build_corpus(root: Path) -> Corpus:
    """Write the clean network (and a copy whose two dumps carry hashed names) under ``root``."""
    from compare.testing.synthetic import make_network
    from convert.codecs import dump_proto

    network = make_network(root / "clean")
    leaf = network["leaf"]
    dumps_v2 = [p.read_bytes() for p in sorted(leaf.iterdir())]
    dumps_v1 = []
    for data in dumps_v2:
        (hlen,) = struct.unpack("<Q", data[:8])
        msg = dump_proto.DumpData.FromString(data[8:8 + hlen])
        cursor = 8 + hlen
        for item in list(msg.input) + list(msg.output):
            item.data = data[cursor:cursor + int(item.size)]
            cursor += int(item.size)
        dumps_v1.append(msg.SerializeToString())
    npys = [p.read_bytes() for p in sorted(network["right"].iterdir())]
    rng = np.random.default_rng(0)
    extra = root / "extra_npy"
    extra.mkdir(parents=True, exist_ok=True)
    for name, array in (("b", rng.standard_normal(5).astype(">f4")), ("e", np.zeros((0, 3), np.float32)),
                        ("f", np.asfortranarray(rng.standard_normal((3, 4)))), ("bool", np.array([True, False])),
                        ("c", (rng.standard_normal(4) + 1j).astype(np.complex64))):
        path = extra / f"{name}.0.1.npy"
        np.save(path, array)
        npys.append(path.read_bytes())
    hashed = make_network(root / "hashed")
    rows = []
    for k, path in enumerate(sorted(hashed["leaf"].iterdir())):
        if any(path.name.startswith(p) for p in MUTABLE_DUMPS[:2]):
            code = str(1000 + k)
            path.rename(path.with_name(code))
            rows.append(f"{code},{path.name}")
    mapping_text = "\n".join(rows) + "\n"
    (hashed["leaf"] / "mapping.csv").write_text(mapping_text)
    return Corpus(root, network, hashed, dumps_v2, dumps_v1, npys, network["fusion_rule"].read_text(), mapping_text)


# ============================================================================ targets


@dataclass
class Outcome:
    """What one input did: ``accepted`` (read fine), ``refused`` (a CompareError) or ``escape``."""

    verdict: str
    kind: str = ""
    detail: str = ""


_PATH_RE = re.compile(r"(/[^\s:;,()']+)+")
_QUOTED_RE = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER_RE = re.compile(r"-?\d+")


def error_kind(exc: BaseException) -> str:
    """``Class: normalised problem prefix`` -- numbers, paths and quoted text replaced."""
    return f"{type(exc).__name__}: {_normalise(getattr(exc, 'problem', None) or str(exc))}"


def _normalise(text: str) -> str:
    """Paths, quoted text, numbers and bracketed details replaced; cut at the first ``:``/``;``."""
    text = _PATH_RE.sub("PATH", text)
    text = _QUOTED_RE.sub("Q", text)
    text = _NUMBER_RE.sub("N", text)
    text = re.sub(r"^(row N|mapping\.csv row N was refused): ", "", text)
    text = re.sub(r"\b(input|output) N\b", "TENSOR", text)
    text = re.sub(r"\bDT_[A-Z_]*N?\b|[<>|=][A-Za-z]N\b|\b(?:b?float|u?int|complex)N\b|\bbool\b", "DTYPE", text)
    for _ in range(3):
        text = re.sub(r"\s*\([^()]*\)", "", text)
        text = re.sub(r"\s*\[[^\[\]]*\]", "", text)
    text = re.split(r"[:;]", text, maxsplit=1)[0]
    return " ".join(text.split()[:10])


def _loader_call(fn: Callable[[], object]) -> Outcome:
    try:
        fn()
    except CompareError as exc:
        return Outcome("refused", error_kind(exc))
    except Exception as exc:  # noqa: BLE001 - that is what we are looking for
        return Outcome("escape", error_kind(exc), traceback.format_exc())
    return Outcome("accepted")


def read_dump_file(path: Path, version: int | None = None) -> None:
    """Read a dump's header and every tensor, as the engine would."""
    from convert.codecs.dumpfile import read_header, read_tensor

    header = read_header(path, version=version)
    for info in header.tensors:
        array = read_tensor(header, info)
        with np.errstate(all="ignore"):
            np.asarray(array).sum()


def read_npy_file(path: Path) -> None:
    """Read a .npy header and its data (every element touched)."""
    from convert.codecs.npy import load_npy, read_npy_header

    array = load_npy(path, read_npy_header(path))
    if array.dtype.kind != "V":
        with np.errstate(all="ignore"):
            np.asarray(array).sum()


def read_rule_file(path: Path) -> None:
    """Load a fusion rule, apply the quant filter and look up every op's golden origins."""
    from compare.pairing.fusion_groups import golden_origin
    from compare.pairing.fusion_rule import load_fusion_rule
    from compare.pairing.quant_rule import apply_quant_filter
    from compare.records import TensorKind

    rule = apply_quant_filter(load_fusion_rule(path))
    for name, op in rule.ops.items():
        for k in range(len(op.inputs)):
            golden_origin(rule, name, TensorKind.INPUT, k)
        golden_origin(rule, name, TensorKind.OUTPUT, 0)


def read_mapping_folder(folder: Path) -> list[str]:
    """Load a dump folder whose mapping.csv was mutated; the reasons of its skipped files."""
    from compare.loaders import load_run

    return [why for _, why in load_run(folder).skipped]


def fuzz_file(target: str, corpus: Corpus, rng: random.Random, work: Path) -> Outcome:
    """One mutated file of ``target`` (dump-v2, dump-v1, npy, rule, mapping) through its loader."""
    if target == "dump-v2":
        path = work / "Op.x.1.1.1704110400000000"
        path.write_bytes(mutate_dump(rng.choice(corpus.dumps_v2), rng, 2))
        return _loader_call(lambda: read_dump_file(path, rng.choice([None, 2])))
    if target == "dump-v1":
        path = work / "Op.x.1.1.1704110400000000"
        path.write_bytes(mutate_dump(rng.choice(corpus.dumps_v1), rng, 1))
        return _loader_call(lambda: read_dump_file(path, rng.choice([None, 1])))
    if target == "npy":
        path = work / "x.0.1704110400000000.npy"
        path.write_bytes(mutate_npy(rng.choice(corpus.npys), rng))
        return _loader_call(lambda: read_npy_file(path))
    if target == "rule":
        path = work / "rule.json"
        path.write_bytes(mutate_rule(corpus.rule_text, rng))
        return _loader_call(lambda: read_rule_file(path))
    if target == "mapping":
        folder = work / "mapped"
        if folder.exists():
            shutil.rmtree(folder)
        shutil.copytree(corpus.hashed_network["leaf"], folder)
        (folder / "mapping.csv").write_bytes(mutate_mapping(corpus.mapping_text, rng))
        skipped: list[str] = []
        outcome = _loader_call(lambda: skipped.extend(read_mapping_folder(folder)))
        if outcome.verdict == "accepted" and skipped:
            # bad rows are not fatal: the folder loads, the rows and the files they name are skipped
            return Outcome("refused", "skipped: " + _normalise(skipped[0]))
        return outcome
    raise ValueError(f"unknown target {target!r}")


def damage_network(corpus: Corpus, rng: random.Random, work: Path, *,
                   rule_chance: float = 0.15) -> tuple[dict[str, Path], bool, list[str]]:
    """A copy of the network (plain or hashed) with 1-3 files mutated (the rule with ``rule_chance``).

    Returns ``(paths, rule_mutated, damaged file names)``.
    """
    base = corpus.hashed_network if rng.random() < 0.25 else corpus.network
    out = work / "net"
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(base["leaf"], out / "left")
    shutil.copytree(base["right"], out / "right")
    shutil.copy(base["fusion_rule"], out / "model.json")
    paths = {"left": out / "left", "right": out / "right", "fusion_rule": out / "model.json"}
    candidates = [p for p in sorted(paths["left"].iterdir()) if p.name.startswith(MUTABLE_DUMPS)]
    candidates += [p for p in sorted(paths["right"].iterdir()) if p.name.startswith(MUTABLE_GOLDENS)]
    damaged = []
    for path in rng.sample(candidates, k=min(len(candidates), rng.randint(1, 3))):
        data = path.read_bytes()
        if path.suffix == ".npy":
            new = mutate_npy(data, rng)
        else:
            try:
                new = mutate_dump(data, rng, 2)
            except Exception:  # noqa: BLE001 - a seed that is not a clean v2 file: bytes only
                new = mutate_bytes(data, rng)
        path.write_bytes(new)
        damaged.append(path.name)
        if path.suffix != ".npy" and rng.random() < 0.1:  # a name that is not UTF-8 (prefix still parses)
            os.rename(os.fsencode(path), os.fsencode(path) + b".\xff")
    mapping = paths["left"] / "mapping.csv"
    if mapping.exists() and rng.random() < 0.5:
        mapping.write_bytes(mutate_mapping(mapping.read_text(), rng))
        damaged.append("mapping.csv")
    rule_mutated = rng.random() < rule_chance
    if rule_mutated:
        paths["fusion_rule"].write_bytes(mutate_rule(corpus.rule_text, rng))
        damaged.append("model.json")
    return paths, rule_mutated, damaged


def check_network(paths: dict[str, Path], rule_mutated: bool) -> Outcome:
    """Run the damaged network; see the module doc for what counts as an escape."""
    from compare.reports.network import write_report
    from compare.runs.folders import run_network

    try:
        result = run_network(paths["left"], paths["right"], paths["fusion_rule"])
        write_report(result.rows, paths["left"].parent / "result.csv", result.metrics)
    except CompareError as exc:
        if rule_mutated:
            return Outcome("refused", error_kind(exc))
        return Outcome("escape", error_kind(exc), "run_network raised for per-file problems:\n"
                       + traceback.format_exc())
    except Exception as exc:  # noqa: BLE001
        return Outcome("escape", error_kind(exc), traceback.format_exc())
    problems = network_problems(result)
    if problems:
        return Outcome("escape", "Invariant: " + problems[0].split(":")[0], "\n".join(problems))
    return Outcome("accepted")


def network_problems(result: Any) -> list[str]:
    """Invariant violations of a network result: internal errors, lost operators, bad summary."""
    problems = []
    for row in result.rows:
        text = "; ".join(row.reasons)
        if "internal error" in text:
            problems.append(f"internal error row: {row.tensor_id or row.left_op}: {text}")
    named = set()
    for row in result.rows:
        named.update(n for n in row.left_op.split(",") if n)
    for name in result.left.ops:
        if name not in named and name not in result.pairing.unmatched_left:
            problems.append(f"lost operator: left operator {name!r} appears in no row")
    summary = result.summary()
    if sum(summary.values()) != len(result.rows):
        problems.append(f"summary mismatch: {summary} for {len(result.rows)} rows")
    return problems


# ============================================================================ hostile files and trees


class Hang(BaseException):
    """The alarm of :func:`deadline` rang: an input took longer than allowed (a BaseException, so
    that no ``except Exception`` of the code under test swallows it)."""


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Raise :class:`Hang` in the block after ``seconds`` (SIGALRM; a no-op off the main thread)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def ring(signum: int, frame: object) -> None:
        raise Hang(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


#: Apparent sizes of the sparse files (a few real bytes each).
SPARSE_SIZES = (3 * 2**30, 2**32 + 17, 2**36)


def _write_sparse(path: Path, head: bytes, size: int) -> None:
    """``head`` then a hole up to ``size`` bytes (nothing allocated on disk or in memory)."""
    path.write_bytes(head)
    os.truncate(path, size)


#: Address space a sparse input may add to the process before an allocation fails (MemoryError).
SPARSE_HEADROOM = 2 * 2**30


@contextmanager
def memory_cap(headroom: int) -> Iterator[None]:
    """At most ``headroom`` more bytes of address space in the block (RLIMIT_AS, restored after),
    so that an allocation of what a hostile length claims is a MemoryError, not the kernel's
    out-of-memory killer ending the whole fuzz run. A no-op where the limit cannot be read."""
    try:
        import resource  # noqa: PLC0415 - POSIX only

        with open("/proc/self/status") as status:
            size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = size + headroom if hard == resource.RLIM_INFINITY else min(hard, size + headroom)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, StopIteration, ValueError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def sparse_case(corpus: Corpus, rng: random.Random, work: Path) -> Outcome:
    """A sparse file whose lengths claim all of it (module doc, ``sparse``), read with at most
    :data:`SPARSE_HEADROOM` more address space (:func:`memory_cap`)."""
    with memory_cap(SPARSE_HEADROOM):
        return _sparse_case(corpus, rng, work)


def _sparse_case(corpus: Corpus, rng: random.Random, work: Path) -> Outcome:
    from convert.codecs import dump_proto
    from convert.codecs.dumpwire import len_prefix  # a varint: the tag and the length of a field

    size = rng.choice(SPARSE_SIZES)
    kind = rng.choice(["v2-header", "v1-field", "npy-header"])
    if kind == "npy-header":
        path = work / "sparse.0.1704110400000000.npy"
        head = b"\x93NUMPY\x02\x00" + struct.pack("<I", min(size - 12, 2**32 - 1))
        _write_sparse(path, head + b"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", size)
        return _loader_call(lambda: read_npy_file(path))
    path = work / "Op.sparse.1.1.1704110400000000"
    if kind == "v2-header":
        data = rng.choice(corpus.dumps_v2)
        _write_sparse(path, struct.pack("<Q", size - 8) + data[8:8 + rng.choice([0, 16, 64])], size)
        return _loader_call(lambda: read_dump_file(path, rng.choice([None, 2])))
    number = dump_proto.DumpData.DESCRIPTOR.fields_by_name["op_name"].number
    tag = len_prefix(number << 3 | 2)
    length = len_prefix(size - len(tag) - 10)
    length = len_prefix(size - len(tag) - len(length))  # the field claims exactly the rest of the file
    _write_sparse(path, tag + length, size)
    return _loader_call(lambda: read_dump_file(path, rng.choice([None, 1])))


#: Pieces of hostile operator names and types (control characters, formula starts, separators).
HOSTILE_PARTS = ("\r=1+1", "\n@SUM(A1)", "\t=cmd", "\x1b[31m", "+2", "-3", " =x", "\x7f", '"q"', ",c", ";s",
                 "\u2028", "\r\n", "=HYPERLINK(x)", "@", "\x01")
#: Starts of a cell a spreadsheet reads as a formula.
FORMULA_STARTS = ("=", "+", "-", "@")
_VICTIMS = {"pool1": "Pooling", "fc1": "FullyConnection", "prob": "SoftmaxV2"}


def _hostile(rng: random.Random, base: str) -> str:
    parts = rng.sample(HOSTILE_PARTS, k=rng.randint(1, 3))
    return (rng.choice(["", "=", "@", "+", "-", "\r", "\n"]) + base + "".join(parts)) if rng.random() < 0.5 \
        else base + "".join(parts)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _guarded_run(run: Callable[[], Any], *, refusal_ok: bool) -> Any:
    """``run()``'s result, or the Outcome of what it raised: a CompareError is a refusal when
    ``refusal_ok`` (else an escape: the inputs held nothing a run may refuse), anything else an
    escape."""
    try:
        return run()
    except CompareError as exc:
        if refusal_ok:
            return Outcome("refused", error_kind(exc))
        return Outcome("escape", error_kind(exc), "the run was refused:\n" + traceback.format_exc())
    except Exception as exc:  # noqa: BLE001 - that is what we are looking for
        return Outcome("escape", error_kind(exc), traceback.format_exc())


def names_case(corpus: Corpus, rng: random.Random, work: Path) -> Outcome:
    """One operator (and its type) renamed with hostile characters; report written and read back."""
    from compare.reports.network import write_report
    from compare.runs.folders import run_network

    out = work / "named"
    if out.exists():
        shutil.rmtree(out)
    base = corpus.network
    shutil.copytree(base["leaf"], out / "left")
    shutil.copytree(base["right"], out / "right")
    victim = rng.choice(sorted(_VICTIMS))
    op_type = _VICTIMS[victim]
    name, new_type = _hostile(rng, victim), _hostile(rng, op_type)
    text = re.sub(r'"' + victim + r'(?=[":])', lambda _m: json.dumps(name)[:-1], corpus.rule_text)
    if rng.random() < 0.5:
        text = text.replace(f'"type": "{op_type}"', f'"type": {json.dumps(new_type)}', 1)
    (out / "model.json").write_text(text, encoding="utf-8")
    for path in list((out / "left").iterdir()):
        if path.name.startswith(f"{op_type}.{victim}."):
            path.rename(path.with_name(f"{op_type}.{name}." + path.name[len(op_type) + len(victim) + 2:]))
    for path in list((out / "right").iterdir()):
        if path.name.startswith(f"{victim}.0."):
            path.rename(path.with_name(f"{name}.0." + path.name[len(victim) + 3:]))
    result = _guarded_run(lambda: run_network(out / "left", out / "right", out / "model.json"), refusal_ok=True)
    if isinstance(result, Outcome):
        return result
    try:
        written = write_report(result.rows, out / "result.csv", result.metrics)
    except Exception as exc:  # noqa: BLE001 - a CompareError too: writing a run that ran must not fail
        return Outcome("escape", error_kind(exc), traceback.format_exc())
    problems = network_problems(result)
    with open(written, newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    if len(table) != len(result.rows) + 1:
        problems.append(f"csv rows: {len(table) - 1} read back, {len(result.rows)} written (a row was split)")
    widths = {len(line) for line in table}
    if len(widths) > 1:
        problems.append(f"csv columns: rows of {sorted(widths)} cells")
    for line in table[1:]:
        for cell in line:
            stripped = cell.lstrip(" \t\r\n")
            if stripped.startswith(FORMULA_STARTS) and not _is_number(stripped):
                problems.append(f"csv injection: cell {cell!r} starts a formula")
                break
    if problems:
        return Outcome("escape", "Invariant: " + problems[0].split(":")[0], "\n".join(problems))
    return Outcome("accepted")


#: Hostile entries the ``tree`` target adds, each under a dump-like name.
TREE_ENTRIES = ("loop", "broken", "fifo", "devzero", "dir", "loop-dir")


def _add_entry(folder: Path, kind: str, name: str) -> Path:
    path = folder / name
    if kind == "loop":
        os.symlink(name, path)
    elif kind == "broken":
        os.symlink(folder / "no-such-file", path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        os.symlink("/dev/zero", path)
    elif kind == "dir":
        path.mkdir()
    else:  # a folder-level loop: a link to its own parent
        os.symlink("..", path)
    return path


def tree_case(corpus: Corpus, rng: random.Random, work: Path) -> Outcome:
    """The network's dump tree with hostile entries (module doc, ``tree``)."""
    from compare.runs.folders import run_network

    out = work / "tree"
    if out.exists():
        shutil.rmtree(out)
    base = corpus.network
    shutil.copytree(base["left"], out / "left", symlinks=True)
    leaf = next(p for p in (out / "left").rglob("*") if p.is_dir() and any(q.is_file() for q in p.iterdir()))
    added = []
    for k, kind in enumerate(rng.sample(TREE_ENTRIES, k=rng.randint(1, 3))):
        where = leaf if kind != "loop-dir" or rng.random() < 0.5 else leaf.parent
        added.append(_add_entry(where, kind, f"Relu.hostile_{kind.replace('-', '_')}.{90 + k}.1.17041104000090{k:02d}"))
    result = _guarded_run(lambda: run_network(out / "left", base["right"], base["fusion_rule"]), refusal_ok=False)
    if isinstance(result, Outcome):
        return result
    problems = network_problems(result)
    said = "\n".join(result.notes) + "\n" + "\n".join(str(p) for p, _ in result.left.skipped)
    for path in added:
        if path.parent == leaf and path.name not in said:
            problems.append(f"unnamed entry: {path.name} is in no note")
    if problems:
        return Outcome("escape", "Invariant: " + problems[0].split(":")[0], "\n".join(problems))
    return Outcome("accepted")


def cli_network(paths: dict[str, Path], rule_mutated: bool) -> Outcome:
    """The damaged network through the command line: no traceback, and never exit 1 (no gate)."""
    from typer.testing import CliRunner

    from compare.cli import app

    args = ["-l", str(paths["left"]), "-r", str(paths["right"]), "-f", str(paths["fusion_rule"]),
            "-o", str(paths["left"].parent / "cli.csv"), "--json", str(paths["left"].parent / "cli.json")]
    result = CliRunner().invoke(app, args)
    text = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return Outcome("escape", error_kind(result.exception),
                       "".join(traceback.format_exception(result.exception)))
    if "Traceback (most recent call last)" in text:
        return Outcome("escape", "traceback printed", text[-2000:])
    if result.exit_code == 1:
        return Outcome("escape", "exit 1 without a gate", text[-2000:])
    if result.exit_code == 2 and not rule_mutated:
        return Outcome("escape", "exit 2 for per-file problems", text[-2000:])
    return Outcome("accepted" if result.exit_code == 0 else "refused", "" if result.exit_code == 0
                   else f"exit {result.exit_code}")


# ============================================================================ the run


@dataclass
class Report:
    """Counts of one fuzz run."""

    seed: int
    inputs: int = 0
    seconds: float = 0.0
    per_target: dict[str, Counter] = field(default_factory=dict)
    kinds: Counter = field(default_factory=Counter)
    escapes: int = 0
    escape_details: list[str] = field(default_factory=list)

    def add(self, target: str, outcome: Outcome, keep: int) -> None:
        self.inputs += 1
        self.per_target.setdefault(target, Counter())[outcome.verdict] += 1
        if outcome.kind:
            self.kinds[outcome.kind] += 1
        if outcome.verdict == "escape":
            self.escapes += 1
            if len(self.escape_details) < keep:
                self.escape_details.append(f"[{target}] {outcome.kind}\n{outcome.detail}")

    def text(self) -> str:
        lines = [f"vcompare fuzz: seed {self.seed}, {self.inputs} inputs in {self.seconds:.1f} s",
                 "", f"{'target':<10} {'inputs':>7} {'accepted':>9} {'refused':>8} {'escapes':>8}"]
        for target, counts in sorted(self.per_target.items()):
            total = sum(counts.values())
            lines.append(f"{target:<10} {total:>7} {counts['accepted']:>9} {counts['refused']:>8} "
                         f"{counts['escape']:>8}")
        lines += ["", f"distinct error kinds: {len(self.kinds)}"]
        lines += [f"{count:>7}  {kind}" for kind, count in self.kinds.most_common()]
        lines += ["", f"escapes: {self.escapes}"]
        lines += self.escape_details
        return "\n".join(lines) + "\n"

    def as_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "inputs": self.inputs, "seconds": round(self.seconds, 1),
                "per_target": {t: dict(c) for t, c in self.per_target.items()},
                "error_kinds": dict(self.kinds.most_common()), "escapes": self.escapes,
                "escape_details": self.escape_details}


#: Share of the inputs per target (the rest are network runs).
WEIGHTS = {"dump-v2": 0.18, "dump-v1": 0.12, "npy": 0.16, "rule": 0.12, "mapping": 0.07, "network": 0.19,
           "sparse": 0.05, "names": 0.06, "tree": 0.05}


def run_one(target: str, corpus: Corpus, rng: random.Random, work: Path) -> Outcome:
    """One input of ``target``, under the :data:`DEADLINE` alarm (a hang is an escape)."""
    try:
        with deadline(DEADLINE):
            if target == "network":
                paths, rule_mutated, _ = damage_network(corpus, rng, work)
                if rng.random() < 0.2:
                    return cli_network(paths, rule_mutated)
                return check_network(paths, rule_mutated)
            if target == "sparse":
                return sparse_case(corpus, rng, work)
            if target == "names":
                return names_case(corpus, rng, work)
            if target == "tree":
                return tree_case(corpus, rng, work)
            return fuzz_file(target, corpus, rng, work)
    except Hang as exc:
        return Outcome("escape", "hang", f"{target}: {exc}")
    except MemoryError:
        return Outcome("escape", "MemoryError", traceback.format_exc())


def run(n: int, seed: int, *, keep: int = 5, progress: bool = False) -> Report:
    """Fuzz ``n`` inputs with ``random.Random(seed)``; return the report."""
    rng = random.Random(seed)
    report = Report(seed=seed)
    targets = list(WEIGHTS)
    weights = [WEIGHTS[t] for t in targets]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vcompare-fuzz-") as tmp:
        corpus = build_corpus(Path(tmp) / "corpus")
        work = Path(tmp) / "work"
        work.mkdir()
        for i in range(n):
            target = rng.choices(targets, weights)[0]
            case_rng = random.Random(rng.getrandbits(64))
            outcome = run_one(target, corpus, case_rng, work)
            report.add(target, outcome, keep)
            if progress and (i + 1) % 1000 == 0:
                print(f"  {i + 1} inputs, {report.escapes} escapes", file=sys.stderr)
    report.seconds = time.perf_counter() - start
    return report
