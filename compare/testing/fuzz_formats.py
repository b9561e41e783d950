"""Fuzz targets for the dump families and side files added after the first fuzzer (issue 27).

Each target takes a valid seed written by the project's own generators, damages it (byte-level
edits from :func:`compare.testing.fuzz.mutate_bytes` and structure-aware edits: deep nesting,
integers of 5,000 digits, ``1e400``, huge shapes, zero strides, a bad zip CRC, symlinks out of
the tree, FIFOs ...) and runs it through the code that reads it:

``nano``
    a folder of nano dumps (:func:`convert.codecs.nano_write.write_nano`) against ``.npy`` goldens, one
    nano file damaged (bytes, the head length, or rewritten with hostile shapes / data types /
    formats / origin names); ``run_network``.
``ffts``
    FFTS+ sliced ops (:func:`compare.testing.synthetic_ffts.write_sliced_op`) against goldens:
    the slice attribute JSON mutated, a slice file damaged, removed or duplicated; ``run_network``
    with and without ``ffts=True``.
``opdebug``
    an offline dump folder with an Opdebug file (:func:`convert.codecs.opdebug.write_opdebug_file`):
    the overflow structs damaged or re-encoded with hostile ids and lengths, or the dump replaced by
    its decoded JSON copy (``...output.N.json``), mutated; ``analyse_overflow``
    and, one time in three, ``vcompare -l ... --overflow`` through the command line.
``msprobe-json``
    an msprobe dump tree (:func:`compare.testing.synthetic_msprobe.write_msprobe_dump`), its
    ``dump.json`` mutated (JSON structure edits, deep nesting, huge numbers, text damage);
    ``run_network``. The index file is the run's description: a refusal (a ``CompareError``)
    is allowed.
``pt``
    the same tree with one ``.pt`` file damaged: bytes, a bad zip CRC, a storage dropped, huge
    offsets, shapes or zero / negative strides in the pickle, a hostile global, a symlink to a
    file out of the tree or to ``/dev/zero``; ``read_pt_header`` + ``load_pt`` (refusals allowed)
    and ``run_network`` (no exception allowed: a per-file problem is a row).
``policy``
    a policy TOML file: values replaced by huge numbers, ``1e400``, ``inf``, deep arrays and
    inline tables, pathological globs and regular expressions, bad dates, text damage;
    ``load_policy`` then ``regate`` of a saved result with it (half of the time one whose
    operator names are 6,000 characters long, for the globs and regular expressions).
``gate-json`` / ``gate-csv`` / ``gate-parquet``
    a saved result of the synthetic network (``--json``, ``-o .csv``, ``-o .parquet``) mutated
    (JSON structure, CSV cells / columns / quoting, parquet bytes or cells rewritten by pandas);
    ``regate`` (one time in five ``vcompare gate``: exit 0-3, no traceback). A CSV whose cells
    only were changed must give back every row.
``groups``
    a consistency group file (lines or JSON) or ``dp:K`` text: huge ranges, 5,000-digit ranks,
    deep nesting, FIFOs and ``/dev/zero`` links; ``parse_groups`` and ``GroupSpec.resolve``.
``url``
    the synthetic network's NPU folder behind an fsspec URL (``memory://`` or ``file://`` only,
    never a network protocol): a dump file damaged in the store, hostile names in the store
    (``..``, long, control characters), a ``file://`` tree with a FIFO and links out of it, or the
    URL text mutated; ``run_network`` with the mirror under the work folder.

What counts as an escape is the same as in :mod:`compare.testing.fuzz`: any exception that is not
a ``CompareError`` (any exception at all where only per-file damage was done), a hang (the
alarm), a ``MemoryError`` (every new target runs under :func:`compare.testing.fuzz.memory_cap`),
a row whose reason says "internal error", or an operator of the left folder in no row
(:func:`compare.testing.fuzz.network_problems`).
"""

from __future__ import annotations

import json
import os
import pickle
import random
import re
import shutil
import struct
import traceback
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from compare.testing.fuzz import (
    INTERESTING,
    Outcome,
    _guarded_run,
    error_kind,
    memory_cap,
    mutate_bytes,
    mutate_rule_object,
    network_problems,
)

#: Address space a new-target input may add before an allocation fails (a MemoryError escape).
HEADROOM = 3 * 2**30

#: Hostile literals for numbers in JSON / TOML / CSV text.
HUGE_LITERALS = ("9" * 5000, "-" + "9" * 5000, "1e400", "-1e400", "1e-400", "18446744073709551616",
                 "-9223372036854775809", "NaN", "Infinity", "-Infinity", "0.0", "-0", "1" + "0" * 30)

_NUMBER_IN_TEXT = re.compile(r"(?<![\w.\"])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.\"])")


def replace_numbers(text: str, rng: random.Random) -> str:
    """Replace one to three numbers of ``text`` with :data:`HUGE_LITERALS`."""
    spans = [m.span() for m in _NUMBER_IN_TEXT.finditer(text)]
    if not spans:
        return text
    for start, end in sorted(rng.sample(spans, k=min(len(spans), rng.randint(1, 3))), reverse=True):
        text = text[:start] + rng.choice(HUGE_LITERALS) + text[end:]
    return text


def deep(depth: int, kind: str = "[]") -> str:
    """A nested JSON / TOML array (``[]``) or inline table (``{}``) ``depth`` levels deep."""
    if kind == "[]":
        return "[" * depth + "1" + "]" * depth
    return "{a=" * depth + "1" + "}" * depth


def mutate_json_text(text: str, rng: random.Random) -> bytes:
    """A JSON document damaged: structure edits (with deep nesting), huge numbers or byte edits."""
    choice = rng.random()
    if choice < 0.15:
        return mutate_bytes(text.encode(), rng)
    if choice < 0.35:
        return replace_numbers(text, rng).encode()
    document, marker = mutate_rule_object(json.loads(text), rng)
    try:
        out = json.dumps(document)
    except (ValueError, TypeError):
        out = text
    if marker is not None:
        depth = rng.choice([50, 500, 5000, 100000])
        out = out.replace(json.dumps(marker), deep(depth), 1)
    return out.encode("utf-8", "surrogatepass")


def _outcome_of(fn: Callable[[], object], *, refusal_ok: bool) -> Outcome:
    """``fn()`` as an Outcome: accepted, refused (a CompareError when ``refusal_ok``) or escape."""
    result = _guarded_run(fn, refusal_ok=refusal_ok)
    return result if isinstance(result, Outcome) else Outcome("accepted")


def _network_outcome(run: Callable[[], Any], *, refusal_ok: bool) -> Outcome:
    """A network run: its exceptions (:func:`_guarded_run`) and the row invariants."""
    result = _guarded_run(run, refusal_ok=refusal_ok)
    if isinstance(result, Outcome):
        return result
    ids = [row.tensor_id or "" for row in result.rows]
    named = {tensor_id.rsplit(":", 2)[0] for tensor_id in ids if tensor_id.count(":") >= 2}
    problems = [p for p in network_problems(result) if not _lost_but_named(p, named)]
    if problems:
        return Outcome("escape", "Invariant: " + problems[0].split(":")[0], "\n".join(problems))
    return Outcome("accepted")


def _lost_but_named(problem: str, named: set[str]) -> bool:
    """A "lost operator" whose tensors have rows under their tensor id (an operator with no left
    tensor -- an emptied msprobe entry -- gets the right side's rows, ``*`` on the left)."""
    match = re.match(r"lost operator: left operator '(.*)' appears in no row$", problem)
    return match is not None and match.group(1) in named


def _fresh(path: Path) -> Path:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


# ============================================================================ the seeds


@dataclass
class FormatCorpus:
    """Seeds of the new targets, written once under ``root`` (copied before each damage)."""

    root: Path
    nano: dict[str, Path] = field(default_factory=dict)
    ffts: dict[str, Path] = field(default_factory=dict)
    opdebug: Path = Path()
    msprobe: dict[str, Path] = field(default_factory=dict)
    policy_text: str = ""
    saved: dict[str, Path] = field(default_factory=dict)
    saved_rows: int = 0
    network: dict[str, Path] = field(default_factory=dict)


#: Offline dump name timestamp base of the nano and Opdebug seeds.
TS = 1700000000000100
NANO_OPS = (("Conv2D", "conv1", 1), ("Relu", "relu1", 2), ("MatMul", "fc1", 3))

POLICY_SEED = """version = 1
strict = true

[defaults]
dtype = false
CosineSimilarity = ">= 0.99"
MaxAbsoluteError = "<= 1e-3"

[[rule]]
op_type = ["SoftmaxV2", "Pooling"]
note = "reductions"
CosineSimilarity = ">= 0.98"

[[rule]]
op_regex = "^fc[0-9]+$"
rank = 0
iteration = [1, 2]
RelativeEuclideanDistance = 0.05

[[waiver]]
op = "pool1*"
reason = "known fp16 accumulation issue"
expires = 2030-12-31
metrics = ["CosineSimilarity", "not-compared"]
"""


def build_format_corpus(root: Path, network: dict[str, Path]) -> FormatCorpus:
    """Write every seed of the new targets under ``root`` (``network``: the clean synthetic one)."""
    from compare.api import compare_network
    from compare.reports.network import write_report
    from compare.reports.parquet import write_parquet
    from compare.testing.synthetic_ffts import BASE_TIMESTAMP, write_sliced_op
    from compare.testing.synthetic_msprobe import write_msprobe_dump
    from convert.codecs.dumpwrite import write_dump
    from convert.codecs.ffts import FftsMode
    from convert.codecs.nano_write import NanoTensorSpec, write_nano
    from convert.codecs.opdebug import AccType, NewEntry, encode_new, write_opdebug_file

    corpus = FormatCorpus(root=root, network=network)
    rng = np.random.default_rng(0)
    left, right = _fresh(root / "nano" / "left"), _fresh(root / "nano" / "right")
    for op_type, name, task in NANO_OPS:
        x, y = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 3, 4)).astype(np.float32)
        write_nano(left / f"{op_type}.{name}.{task}.1.{TS + task}", inputs=[x.astype(np.float16)],
                   outputs=[NanoTensorSpec(y + 0.01, origin_name=f"net/{name}")])
        np.save(right / f"{name}.0.{TS + task}.npy", y)
    corpus.nano = {"left": left, "right": right}

    left, right = _fresh(root / "ffts" / "left"), _fresh(root / "ffts" / "right")
    auto2d = rng.integers(1, 9, (6, 4)).astype(np.float32)
    manual4d = rng.integers(1, 9, (1, 2, 6, 16)).astype(np.float32)
    write_sliced_op(left, auto2d, (3, 3), 0, name="auto2d", op_type="MatMul", inputs=[auto2d])
    write_sliced_op(left, manual4d, (1, 3, 2), 2, name="manual4d", op_type="Conv2D", mode=FftsMode.MANUAL)
    for name, full in (("auto2d", auto2d), ("manual4d", manual4d)):
        np.save(right / f"{name}.0.{BASE_TIMESTAMP}.npy", full)
    corpus.ffts = {"left": left, "right": right}

    folder = _fresh(root / "opdebug")
    data = np.array([[1, 65504], [-1, 2]], np.float16)
    for op_type, name, task in NANO_OPS:
        write_dump(folder / f"{op_type}.{name}.{task}.1.{TS + task}", inputs=[data], outputs=[data], op_name=name)
    entries = [NewEntry(AccType.AIC, {"task_id": 1, "stream_id": 1, "status": 1}),
               NewEntry(AccType.AIC, {"task_id": 3, "stream_id": 1, "status": 4})]
    write_opdebug_file(folder / f"Opdebug.Node_OpDebug.9.1.{TS + 50}", [encode_new(entries)])
    corpus.opdebug = folder

    left, right = root / "msprobe" / "left", root / "msprobe" / "right"
    write_msprobe_dump(left, noise=0.01)
    write_msprobe_dump(right)
    corpus.msprobe = {"left": left, "right": right, "json": left / "step0" / "rank0" / "dump.json"}

    corpus.policy_text = POLICY_SEED
    saved = _fresh(root / "saved")
    result = compare_network(network["left"], network["right"], network["fusion_rule"])
    corpus.saved = {"json": result.write_json(saved / "result.json"),
                    "csv": write_report(result.rows, saved / "result.csv", result.metrics),
                    "parquet": write_parquet(result.rows, saved / "result.parquet", result.metrics)}
    corpus.saved_rows = len(result.rows)
    long_names = saved / "long-names" / "result.json"  # names of 6,000 characters for the policy's globs
    long_names.parent.mkdir()
    long_names.write_text(corpus.saved["json"].read_text().replace('"pool1', '"' + "a" * 6000 + "pool1"))
    corpus.saved["json-long"] = long_names
    return corpus


# ============================================================================ nano


def _nano_structured(path: Path, rng: random.Random) -> None:
    """Rewrite a nano file with hostile specs (shapes, data types, formats, names) or its head length."""
    from convert.codecs.nano_write import NanoTensorSpec, write_nano

    choice = rng.randrange(3)
    if choice == 0:  # the uint64 head length
        data = bytearray(path.read_bytes())
        data[:8] = (rng.choice(INTERESTING) % 2**64).to_bytes(8, "little")
        path.write_bytes(bytes(data))
        return
    array = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    spec: dict[str, Any] = {}
    pick = rng.randrange(6)
    if pick == 0:
        spec["shape"] = tuple(rng.choice(INTERESTING) % 2**63 for _ in range(rng.randint(1, 4)))
    elif pick == 1:
        spec["shape"] = tuple(rng.randint(0, 3) for _ in range(rng.choice([0, 1, 9, 40])))
    elif pick == 2:
        spec["data_type"] = rng.choice([0, 2, 13, 27, 99, 255, 2**31 - 1])
    elif pick == 3:
        spec["format"] = rng.choice([0, 3, 29, 255, 2**31 - 1])
    elif pick == 4:
        spec["origin_name"] = rng.choice(["", "x" * 70000, "\x00\r=1+1", "\udcff".encode("utf-8", "surrogatepass")
                                          .decode("latin1")])
    else:
        spec["original_shape"] = tuple(rng.choice(INTERESTING) % 2**63 for _ in range(rng.randint(0, 9)))
    try:
        write_nano(path, inputs=[array] if choice == 1 else [], outputs=[NanoTensorSpec(array, **spec)])
    except (ValueError, OverflowError, TypeError, struct.error):
        path.write_bytes(mutate_bytes(path.read_bytes(), rng))


def nano_case(corpus: FormatCorpus, rng: random.Random, work: Path) -> Outcome:
    """One nano file of the left folder damaged; the run must give every operator a row."""
    from compare.runs.folders import run_network

    left = work / "nano"
    if left.exists():
        shutil.rmtree(left)
    shutil.copytree(corpus.nano["left"], left)
    victims = sorted(left.iterdir())
    for victim in rng.sample(victims, k=rng.randint(1, 2)):
        if rng.random() < 0.5:
            victim.write_bytes(mutate_bytes(victim.read_bytes(), rng))
        else:
            _nano_structured(victim, rng)
    return _network_outcome(lambda: run_network(left, corpus.nano["right"]), refusal_ok=False)


# ============================================================================ FFTS+


def _ffts_attr(rng: random.Random) -> str:
    """A damaged slice attribute JSON (built from a valid one)."""
    from convert.codecs.ffts import DimRange, SliceAttr

    attr = SliceAttr(thread_mode=True, slice_instance_num=2, output_cut_list=((2, 1),),
                     output_tensor_slice=(((DimRange(0, 3), DimRange(0, 4)),), ((DimRange(3, 6), DimRange(0, 4)),)))
    text = attr.to_json()
    return mutate_json_text(text, rng).decode("utf-8", "replace")  # the attribute is protobuf text: UTF-8


def ffts_case(corpus: FormatCorpus, rng: random.Random, work: Path) -> Outcome:
    """FFTS+ slices with a damaged attribute or slice file; merged or apart, every op has a row."""
    from compare.runs.folders import run_network
    from compare.testing.synthetic_ffts import write_sliced_op

    left = work / "ffts"
    if left.exists():
        shutil.rmtree(left)
    shutil.copytree(corpus.ffts["left"], left)
    choice = rng.randrange(5)
    files = sorted(left.iterdir())
    if choice <= 1:
        for path in files:
            if ".auto2d." in path.name:
                path.unlink()
        full = np.arange(24, dtype=np.float32).reshape(6, 4)
        try:
            write_sliced_op(left, full, (3, 3), 0, name="auto2d", op_type="MatMul", attr_text=_ffts_attr(rng),
                            declared=rng.choice([None, 0, 1, 3, 2**31, 2**63 - 1]),
                            cut_list=rng.choice([None, (0, 1), (2, 0), (1000000, 1), (2,)]))
        except (ValueError, OverflowError, TypeError):
            write_sliced_op(left, full, (3, 3), 0, name="auto2d", op_type="MatMul", attr_text=_ffts_attr(rng))
    elif choice == 2:
        victim = rng.choice(files)
        victim.write_bytes(mutate_bytes(victim.read_bytes(), rng))
    elif choice == 3:
        rng.choice(files).unlink()
    else:  # a slice copied under another thread id / timestamp
        victim = rng.choice(files)
        parts = victim.name.split(".")
        parts[4] = str(int(parts[4]) + rng.choice([7, 10**6]))
        shutil.copy(victim, left / ".".join(parts))
    if rng.random() < 0.3:  # slices compared apart: against the clean slices
        return _network_outcome(lambda: run_network(left, corpus.ffts["left"], ffts=True), refusal_ok=False)
    return _network_outcome(lambda: run_network(left, corpus.ffts["right"]), refusal_ok=False)


# ============================================================================ Opdebug


def _opdebug_struct(rng: random.Random) -> bytes:
    from convert.codecs.opdebug import AccType, NewEntry, encode_new, encode_old

    if rng.random() < 0.25:
        return encode_old(tuple(rng.choice(INTERESTING) % 2**32 for _ in range(6)), status=rng.choice([0, 1, 4, 2**31]))
    entries = []
    for _ in range(rng.choice([0, 1, 2, 3, 50])):
        acc = rng.choice(list(AccType))
        values = {"task_id": rng.choice([1, 3, 9, 2**32 - 1, 2**64 - 1]), "stream_id": rng.choice([0, 1, 2**32 - 1]),
                  "status": rng.choice([0, 1, 4, 2**64 - 1])}
        try:
            entries.append(NewEntry(acc, values, valid=rng.choice([0, 1, 2, 2**32 - 1]),
                                    data_len=rng.choice([None, None, 0, 7, 2**32 - 1])))
            encode_new(entries[-1:])
        except ValueError:  # a field this accelerator lacks: drop it
            entries.pop()
    return encode_new(entries, version=rng.choice([1, 1, 0, 2, 2**32 - 1]), padding=rng.choice([0, 0, 3, 4096]))


def _opdebug_json_seeds() -> list[dict[str, Any]]:
    """Decoded JSON copies of an old-layout and a new-layout struct (as the dump tools write them)."""
    from convert.codecs.opdebug import ACC_FIELDS, AccType

    block = {"model_id": 0, "stream_id": 1, "task_id": 3, "task_type": 0, "pc_start": "0x1000", "para_base": "0x0",
             "status": 4}
    old = {"DHA Atomic Add": dict(block, status=0), "L2 Atomic Add": dict(block, status=0),
           "AI Core": dict(block, kernel_code="0xab", block_idx=5)}
    data: dict[str, Any] = {name: 0 for name in ACC_FIELDS[AccType.AIV]}
    data.update(task_id=3, stream_id=1, status=2, pc_start="0x10")
    new = {"magic": "0x5a5a5a5a", "version": 1,
           "acc_list": {"valid": 1, "acc_type": "AIV", "rsv": 0, "data_len": 8 * len(data), "data": data}}
    return [old, new]


def opdebug_case(corpus: FormatCorpus, rng: random.Random, work: Path) -> Outcome:
    """An Opdebug file damaged; ``analyse_overflow`` (or ``vcompare --overflow``) must not escape."""
    from compare.runs.overflow import analyse_overflow
    from convert.codecs.opdebug import write_opdebug_file

    folder = work / "opdebug"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(corpus.opdebug, folder)
    source = next(p for p in folder.iterdir() if p.name.startswith("Opdebug."))
    if rng.random() < 0.3:  # the decoded JSON copy instead of the dump (read only without it)
        copy = source.with_name(source.name + f".output.{rng.choice([0, 0, 1, 2**31])}.json")
        source.unlink()
        copy.write_bytes(mutate_json_text(json.dumps(rng.choice(_opdebug_json_seeds())), rng))
    elif rng.random() < 0.5:
        source.write_bytes(mutate_bytes(source.read_bytes(), rng))
    else:
        write_opdebug_file(source, [_opdebug_struct(rng) for _ in range(rng.choice([0, 1, 1, 2, 9]))],
                           version=rng.choice([1, 2]))
    if source.exists() and rng.random() < 0.1:  # a second record under a hashed name, mapped
        shutil.copy(source, folder / "4242")
        (folder / "mapping.csv").write_text(f"4242,Opdebug.Node_OpDebug.10.1.{TS + 60}\n")
    if rng.random() < 1 / 3:
        return _cli_overflow(folder, work)
    out = _fresh(work / "opdebug-out")
    return _outcome_of(lambda: analyse_overflow(folder, out, count=rng.randint(1, 5)), refusal_ok=True)


def _cli_outcome(args: list[str]) -> Outcome:
    """The command line: no traceback, never exit 1 (no gate given)."""
    from typer.testing import CliRunner

    from compare.cli import app

    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return Outcome("escape", error_kind(result.exception), "".join(traceback.format_exception(result.exception)))
    if "Traceback (most recent call last)" in result.output:
        return Outcome("escape", "traceback printed", result.output[-2000:])
    if result.exit_code == 1:
        return Outcome("escape", "exit 1 without a gate", result.output[-2000:])
    return Outcome("accepted" if result.exit_code == 0 else "refused",
                   "" if result.exit_code == 0 else f"exit {result.exit_code}")


def _cli_overflow(folder: Path, work: Path) -> Outcome:
    return _cli_outcome(["-l", str(folder), "-r", str(folder), "--overflow", "-o", str(work / "overflow.csv")])


# ============================================================================ msprobe dump.json and .pt


def msprobe_json_case(corpus: FormatCorpus, rng: random.Random, work: Path) -> Outcome:
    """The left tree's dump.json mutated; a refusal is allowed, an accepted run keeps its invariants."""
    from compare.runs.folders import run_network

    left = work / "msprobe"
    if left.exists():
        shutil.rmtree(left)
    shutil.copytree(corpus.msprobe["left"], left)
    index = left / corpus.msprobe["json"].relative_to(corpus.msprobe["left"])
    index.write_bytes(mutate_json_text(index.read_text(), rng))
    return _network_outcome(lambda: run_network(left, corpus.msprobe["right"]), refusal_ok=True)


def _pt_pickle(rng: random.Random) -> bytes:
    """A tensor pickle with a hostile shape, stride, offset or storage count."""
    from compare.testing.synthetic_msprobe import tensor_pickle

    shape: tuple[int, ...] = (2, 3)
    stride: tuple[int, ...] = (3, 1)
    numel, offset = 6, 0
    pick = rng.randrange(6)
    if pick == 0:
        shape = tuple(rng.choice(INTERESTING) % 2**63 for _ in range(rng.randint(1, 4)))
        stride = tuple(1 for _ in shape)
    elif pick == 1:
        stride = (0, 0) if rng.random() < 0.5 else (rng.choice([-1, -3, 2**62]), 1)
    elif pick == 2:
        offset = rng.choice([1, 6, 2**40, 2**63 - 1, -1])
    elif pick == 3:
        numel = rng.choice([0, 1, 5, 2**40, 2**63 - 1])
    elif pick == 4:
        shape, stride = tuple([1] * rng.choice([0, 40, 64])), tuple([1] * rng.choice([0, 40, 64]))
    else:
        shape, stride = (2, -3), (3, 1)
    return tensor_pickle("FloatStorage", numel, shape, stride, offset,
                         extra_global=rng.choice([None, None, ("os", "system"), ("builtins", "eval"),
                                                  ("torch", "nothing")]))


def _damage_pt(path: Path, rng: random.Random, outside: Path) -> None:
    """One of the .pt damages of the module doc, in place."""
    from compare.testing.synthetic_msprobe import write_pt

    choice = rng.randrange(8)
    if choice <= 1:
        path.write_bytes(mutate_bytes(path.read_bytes(), rng))
    elif choice == 2:  # a bad CRC: a byte of the stored data changed, the directory left as it was
        data = bytearray(path.read_bytes())
        with zipfile.ZipFile(path) as archive:
            info = next(i for i in archive.infolist() if i.filename.endswith("/data/0"))
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        at = start + rng.randrange(max(info.file_size, 1))
        if at < len(data):
            data[at] ^= 0xFF
        path.write_bytes(bytes(data))
    elif choice == 3:
        stem = path.stem
        with zipfile.ZipFile(path, "w") as out:
            out.writestr(f"{stem}/data.pkl", _pt_pickle(rng))
            out.writestr(f"{stem}/byteorder", rng.choice(["little", "big", "middle", ""]))
            out.writestr(f"{stem}/data/0", np.arange(6, dtype=np.float32).tobytes())
            out.writestr(f"{stem}/version", "3\n")
    elif choice == 4:
        kwargs = rng.choice([{"drop_storage": True}, {"offset": rng.choice([1, 1000])}, {"compress": True},
                             {"byteorder": "big"}, {"extra_global": ("posix", "system")},
                             {"archive": rng.choice(["", "../x", "a/b", "\x00"])}])
        try:
            write_pt(path, np.zeros((2, 3), np.float32), **kwargs)
        except (IndexError, ValueError, OSError):  # an archive name zipfile will not write: bytes instead
            path.write_bytes(mutate_bytes(path.read_bytes(), rng))
    elif choice == 5:
        path.unlink()
        path.symlink_to(rng.choice([outside, Path("/dev/zero"), path.parent / "no-such", Path("/etc/passwd")]))
    elif choice == 6:  # a pickle that is not a tensor at all
        stem = path.stem
        with zipfile.ZipFile(path, "w") as out:
            out.writestr(f"{stem}/data.pkl", pickle.dumps(rng.choice([{"a": [1] * 10}, 2**200,
                                                                      "x", None, [[[[]]]]]), protocol=2))
            out.writestr(f"{stem}/version", "3\n")
    else:
        path.write_bytes(path.read_bytes()[: rng.randint(0, 200)])


def pt_case(corpus: FormatCorpus, rng: random.Random, work: Path) -> Outcome:
    """One or two .pt files damaged: read directly (refusal allowed), then a run (rows, no exception)."""
    from compare.runs.folders import run_network
    from convert.codecs.torch_pt import load_pt, read_pt_header

    left = work / "pt"
    if left.exists():
        shutil.rmtree(left)
    shutil.copytree(corpus.msprobe["left"], left, symlinks=True)
    outside = work / "outside.pt"
    if not outside.exists():
        outside.write_bytes(b"PK\x03\x04" + b"\x00" * 60)
    files = sorted(left.rglob("*.pt"))
    victims = rng.sample(files, k=rng.randint(1, 2))
    for victim in victims:
        _damage_pt(victim, rng, outside)
    first = victims[0]
    direct = _outcome_of(lambda: load_pt(first, read_pt_header(first)), refusal_ok=True)
    if direct.verdict == "escape":
        return direct
    return _network_outcome(lambda: run_network(left, corpus.msprobe["right"]), refusal_ok=False)


# ============================================================================ policy TOML

_POLICY_VALUES = ('"' + "*" * 5000 + '"', '"' + "[" * 300 + '"', '"(a+)+$"', '"(a|a)*b"', '"' + "a*" * 200 + 'b"',
                  '"\\\\"', '"\\u0000"', "9999-12-31", "0001-01-01", "1979-05-27T07:32:00Z", "true", "[]", "{}",
                  '">= nan"', '"<= inf"', '">= 1e400"', '"== 1"', '"off"', '">="', '"' + "x" * 70000 + '"',
                  '["' + '", "'.join(["*"] * 1000) + '"]', "inf", "nan", "-inf")


def mutate_policy(text: str, rng: random.Random) -> bytes:
    """A damaged policy TOML: values replaced by hostile ones, deep nesting, huge numbers, text damage."""
    choice = rng.random()
    if choice < 0.15:
        return mutate_bytes(text.encode(), rng)
    if choice < 0.3:
        return replace_numbers(text, rng).encode()
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(len(lines))
        if "=" not in lines[k]:
            continue
        key = lines[k].split("=", 1)[0]
        pick = rng.random()
        if pick < 0.2:
            value = deep(rng.choice([50, 500, 5000]), rng.choice(["[]", "{}"]))
        elif pick < 0.35:
            value = rng.choice(HUGE_LITERALS)
        else:
            value = rng.choice(_POLICY_VALUES)
        lines[k] = f"{key}= {value}"
    if rng.random() < 0.2:
        lines.append(rng.choice(["[[rule]]", "[[waiver]]", "[defaults]", "[rule]", "unknown = 1",
                                 '[[rule]]\nop = "*"\nCosineSimilarity = "off"', "[[waiver]]\nreason = \"\"",
                                 '[[rule]]\nop_regex = "' + "(" * 500 + '"']))
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def policy_case(corpus: FormatCorpus, rng: random.Random, work: Path) -> Outcome:
    """A damaged policy file: loaded, then used to regate the saved JSON result."""
    from compare.api import regate
    from compare.verdict.policy_file import load_policy

    path = work / "policy.toml"
    if path.is_symlink() or path.exists():
        path.unlink()
    path.write_bytes(mutate_policy(corpus.policy_text, rng))
    outcome = _outcome_of(lambda: load_policy(path), refusal_ok=True)
    if outcome.verdict != "accepted":
        return outcome
    saved = corpus.saved[rng.choice(["json", "json-long"])]
    return _outcome_of(lambda: regate(saved, policy=path), refusal_ok=True)


# ============================================================================ saved results (gate)

_CSV_CELLS = ("", "nan", "NaN", "inf", "-inf", "1e400", "9" * 5000, "-" + "9" * 5000, "=cmd", "[1, 2]", "(-1,)",
              "(99999999999999999999, 9)", "()", "(" + "1," * 5000 + ")", "True", "\x00", "\"", "a\nb",
              "compared", "not-compared", "x" * 70000, "0x10", "1_000", "１")


def mutate_csv(text: str, rng: random.Random) -> tuple[bytes, bool]:
    """A damaged CSV result; ``(bytes, cells_only)`` -- True when only cell values changed."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    choice = rng.random()
    if choice < 0.15:
        return mutate_bytes(text.encode(), rng), False
    cells_only = choice < 0.75
    if cells_only:
        for _ in range(rng.randint(1, 4)):
            row = rng.choice(rows[1:]) if len(rows) > 1 else rows[0]
            row[rng.randrange(len(row))] = rng.choice(_CSV_CELLS)
    else:
        pick = rng.randrange(5)
        if pick == 0:
            column = rng.randrange(len(rows[0]))
            rows = [r[:column] + r[column + 1:] for r in rows]
        elif pick == 1:
            rows[0][rng.randrange(len(rows[0]))] = rng.choice(rows[0])
        elif pick == 2:
            rng.choice(rows[1:]).extend(["extra"] * rng.randint(1, 3))
        elif pick == 3:
            rows = rows[:1]
        else:
            rows[0] = [c.lower() if rng.random() < 0.5 else c + " " for c in rows[0]]
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass"), cells_only


def mutate_parquet(path: Path, rng: random.Random) -> None:
    """Damage a saved parquet: bytes, or a column rewritten with pyarrow (dropped, retyped, hostile
    values, nested lists, no rows, duplicated) -- the schema's vcompare metadata kept or damaged."""
    if rng.random() < 0.3:
        path.write_bytes(mutate_bytes(path.read_bytes(), rng))
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    metadata = dict(table.schema.metadata or {})
    k = rng.randrange(table.num_columns)
    name = table.column_names[k]
    rows = table.num_rows
    pick = rng.randrange(7)
    try:
        if pick == 0:
            table = table.remove_column(k)
        elif pick == 1:
            table = table.set_column(k, name, pa.array([str(v) for v in table.column(k).to_pylist()]))
        elif pick == 2:
            value = rng.choice([float("nan"), float("inf"), -1e308, 2**62, -1, "", "x" * 5000, None, True])
            table = table.set_column(k, name, pa.array([value] * rows))
        elif pick == 3:
            table = table.set_column(k, name, pa.array([[1, 2]] * rows))
        elif pick == 4:
            table = table.slice(0, 0)
        elif pick == 5:
            table = table.append_column(name, table.column(k))
        else:
            key = rng.choice(list(metadata) or [b"vcompare"])
            metadata[key] = rng.choice([b"", b"{", b"null", b"[]", b'{"version": 99}', b"9" * 5000,
                                        mutate_bytes(metadata.get(key, b"{}"), rng)])
        pq.write_table(table.replace_schema_metadata(metadata), path)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        path.write_bytes(mutate_bytes(path.read_bytes(), rng))


def gate_case(fmt: str, corpus: FormatCorpus, rng: random.Random, work: Path) -> Outcome:
    """A damaged saved result (``json`` / ``csv`` / ``parquet``) regated; refusals allowed."""
    from compare.api import regate

    seed = corpus.saved[fmt]
    path = work / f"saved{seed.suffix}"
    if path.is_symlink() or path.exists():
        path.unlink()
    cells_only = False
    if fmt == "json":
        path.write_bytes(mutate_json_text(seed.read_text(), rng))
    elif fmt == "csv":
        data, cells_only = mutate_csv(seed.read_text(encoding="utf-8"), rng)
        path.write_bytes(data)
    else:
        shutil.copy(seed, path)
        mutate_parquet(path, rng)
    gates = [rng.choice(["CosineSimilarity>=0.99", "cos>=0.9999", "MaxAbsoluteError<=1e-3", "MaxRelDiff<=1"])]
    if rng.random() < 0.2:
        return _cli_gate(path, gates[0], work)
    result = _guarded_run(lambda: regate(path, gates=gates), refusal_ok=True)
    if isinstance(result, Outcome):
        return result
    if cells_only and len(result.rows) != corpus.saved_rows:
        return Outcome("escape", "Invariant: lost rows",
                       f"a CSV whose cells only changed gave {len(result.rows)} rows of {corpus.saved_rows}")
    return Outcome("accepted")


def _cli_gate(path: Path, gate: str, work: Path) -> Outcome:
    """``vcompare gate``: no traceback; exit 0, 1 (a bound violated), 2 (refused) or 3 (incomplete)."""
    from typer.testing import CliRunner

    from compare.cli import app

    result = CliRunner().invoke(app, ["gate", str(path), "--gate", gate, "--json", str(work / "regated.json"),
                                      "--quiet"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return Outcome("escape", error_kind(result.exception), "".join(traceback.format_exception(result.exception)))
    if "Traceback (most recent call last)" in result.output:
        return Outcome("escape", "traceback printed", result.output[-2000:])
    if result.exit_code not in (0, 1, 2, 3):
        return Outcome("escape", f"exit {result.exit_code}", result.output[-2000:])
    return Outcome("refused" if result.exit_code == 2 else "accepted", f"exit {result.exit_code}")


# ============================================================================ consistency groups

_GROUP_SEEDS = ("0,1,2,3\n4-7\n", "0 1\n2 3 # comment\n", "[[0, 1], [2, 3]]",
                '{"groups": [[0, 1, 2, 3], [4, 5, 6, 7]]}')
_GROUP_TOKENS = ("0-99999999999", "0-" + "9" * 5000, "9" * 5000, "-1", "3-1", "1e400", "0x10", "1.5", "a", "0-1-2",
                 "5-5", "0,0", ",,,", "\x00", "１", "0-" + str(2**63), "1" * 4300)


def group_source(rng: random.Random, work: Path) -> str | Path:
    """A damaged group file (or a ``dp:K`` text, a FIFO, a ``/dev/zero`` link) for ``parse_groups``."""
    pick = rng.random()
    if pick < 0.1:
        return rng.choice(["dp:" + "9" * 5000, "dp:0", "dp:1", "dp:2", "dp:-1", "dp:" + str(2**63), "dp:", "DP:8",
                           "dp:1e400"])
    path = work / rng.choice(["groups.txt", "groups.json"])
    for old in (work / "groups.txt", work / "groups.json"):
        if old.is_symlink() or old.exists():
            old.unlink()
    if pick < 0.15:
        if rng.random() < 0.5:
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
        return path
    text = rng.choice(_GROUP_SEEDS)
    choice = rng.random()
    if choice < 0.15:
        data = mutate_bytes(text.encode(), rng)
    elif text.lstrip().startswith(("[", "{")):
        if choice < 0.3:
            data = (deep(rng.choice([50, 500, 5000, 100000])) if rng.random() < 0.5
                    else text.replace("[0, 1]", deep(rng.choice([50, 5000])), 1)).encode()
        else:
            data = mutate_json_text(text, rng)
    else:
        lines = text.splitlines()
        k = rng.randrange(len(lines))
        tokens = lines[k].split(",") if "," in lines[k] else lines[k].split()
        tokens[rng.randrange(len(tokens))] = rng.choice(_GROUP_TOKENS)
        lines[k] = ",".join(tokens)
        if rng.random() < 0.2:
            lines *= rng.choice([2, 1000])
        data = "\n".join(lines).encode("utf-8", "surrogatepass")
    path.write_bytes(data)
    return path


def groups_case(corpus: FormatCorpus, rng: random.Random, work: Path) -> Outcome:
    """A damaged group source parsed and resolved against a few ranks; refusals allowed."""
    from compare.consistency.groups import parse_groups

    source = group_source(rng, work)
    ranks = rng.choice([range(8), range(0), range(2), [0, 10**6]])
    return _outcome_of(lambda: parse_groups(source).resolve(ranks), refusal_ok=True)


# ============================================================================ URLs (memory:// and file:// only)

#: URL forms that are never a network protocol.
_URL_FORMS = ("memory://{name}/left", "memory://{name}/left/", "memory://{name}/left/../left", "memory://{name}",
              "memory://{name}/nothing", "memory://", "memory:/{name}/left", "memory://{name}/left?x=1#y",
              "memory://{name}/left%2F..", "simplecache::memory://{name}/left", "nosuch-proto-xyz://{name}/left",
              "zz://a", "file://{local}", "file://{local}/../left", "file:///nonexistent-{name}", "file://",
              "memory://{name}/left/" + "a" * 5000, "memory://{name}/l\x00eft", "memory://{name}/left\n")


def url_case(corpus: FormatCorpus, rng: random.Random, work: Path) -> Outcome:
    """The NPU folder behind a ``memory://`` / ``file://`` URL, damaged (module doc ``url``)."""
    import fsspec

    from compare.runs.folders import run_network

    os.environ["VCOMPARE_REMOTE_CACHE"] = str(work / "remote-cache")
    network = corpus.network
    name = f"/vcompare-fuzz-{uuid.uuid4().hex}"
    memory = fsspec.filesystem("memory")
    local = work / "url-tree"
    if local.exists():
        shutil.rmtree(local)
    shutil.copytree(network["leaf"], local / "left")
    files = sorted((local / "left").iterdir())
    choice = rng.randrange(4)
    refusal_ok = choice != 0  # hostile names, special files or a mutated URL: the URL may be refused whole
    if choice == 0:  # a dump damaged in the store
        healthy = ("Data.", "Conv2D.conv1", "TransData")  # pairing keeps something to compare
        victim = rng.choice([p for p in files if not p.name.startswith(healthy)] or files)
        victim.write_bytes(mutate_bytes(victim.read_bytes(), rng))
    for path in files:
        if path.exists():
            memory.pipe(f"{name}/left/{path.name}", path.read_bytes())
    if choice == 1:  # hostile names in the store
        for _ in range(rng.randint(1, 3)):
            bad = rng.choice(["../escape", "../../etc/x", "a/../../../y", "/abs", "x" * 300, "\x00nul", "\r=1+1",
                              "Relu.r." + "9" * 5000 + ".1.1", "sub/" * 50 + "deep"])
            memory.pipe(f"{name}/left/{bad}", b"\x00" * rng.choice([0, 8, 100]))
    url = f"memory://{name}/left"
    if choice == 2:  # a file:// tree with a FIFO and links out of it
        for kind in rng.sample(["fifo", "zero", "out", "loop"], k=rng.randint(1, 3)):
            target = local / "left" / f"Relu.hostile_{kind}.99.1.1704110400009999"
            if kind == "fifo":
                os.mkfifo(target)
            elif kind == "zero":
                target.symlink_to("/dev/zero")
            elif kind == "out":
                target.symlink_to("/etc/passwd")
            else:
                target.symlink_to(local)
        url = (local / "left").as_uri()
    elif choice == 3:
        url = rng.choice(_URL_FORMS).format(name=name.lstrip("/"), local=local / "left")
    try:
        return _network_outcome(lambda: run_network(url, network["right"], network["fusion_rule"]),
                                refusal_ok=refusal_ok)
    finally:
        try:
            memory.rm(name, recursive=True)
        except (FileNotFoundError, OSError):
            pass
        shutil.rmtree(work / "remote-cache", ignore_errors=True)


# ============================================================================ the table

#: Target name -> the function of one input (``corpus, rng, work -> Outcome``).
FORMAT_TARGETS: dict[str, Callable[[FormatCorpus, random.Random, Path], Outcome]] = {
    "nano": nano_case,
    "ffts": ffts_case,
    "opdebug": opdebug_case,
    "msprobe-json": msprobe_json_case,
    "pt": pt_case,
    "policy": policy_case,
    "gate-json": lambda c, r, w: gate_case("json", c, r, w),
    "gate-csv": lambda c, r, w: gate_case("csv", c, r, w),
    "gate-parquet": lambda c, r, w: gate_case("parquet", c, r, w),
    "groups": groups_case,
    "url": url_case,
}


def run_format_target(target: str, corpus: FormatCorpus, rng: random.Random, work: Path) -> Outcome:
    """One input of a new target under the memory cap (the caller holds the hang alarm)."""
    with memory_cap(HEADROOM):
        return FORMAT_TARGETS[target](corpus, rng, work)


__all__ = ["FORMAT_TARGETS", "FormatCorpus", "HUGE_LITERALS", "build_format_corpus", "deep", "mutate_csv",
           "mutate_json_text", "mutate_parquet", "mutate_policy", "replace_numbers", "run_format_target"]
