#!/usr/bin/env python3
"""Write the overflow fixture (seedless, deterministic) into fixtures/overflow.

Usage: python scripts/make_overflow_fixtures.py [OUT_DIR]   (default: fixtures/overflow)

``OUT_DIR/dump/0/`` is a small offline dump folder (version 2 dumps) with four overflow records,
``Opdebug.Node_OpDebug.*``, whose name order (39 < 40 < 41 < 42) differs from their time-stamp
order (40, 41, 39, 42). ``vcompare overflow -d OUT_DIR/dump -o OUT -n 3`` analyses the first three:

- record 40 (new layout, one AIV entry, task 77): no op dump has task 77 -- a block without an op
  line or tensor lines;
- record 41 (old layout, L2 Atomic Add task 5 and AI Core task 6 flagged): two status lines, the
  AI Core block's task links the ``Add`` dump (int32 and uint8 inputs, a float32 output with NaN);
- record 39 (old layout, DHA Atomic Add task 99 and L2 Atomic Add task 5 flagged, AI Core not):
  the last flagged block, L2, links the ``MatMul`` dump (float16 with 65504, float32, a float16
  output with inf);
- record 42 (new layout, AIC task 7, the ``Relu`` dump) is beyond ``-n 3``.

Each dump records an op name (``layer2/MatMul``) other than its file name's (``layer2_MatMul``), as
real dumps do. ``OUT_DIR/expected_summary.txt`` is the summary text that run must write
(``tests/compare/cli/test_overflow_fixture.py``; rewrite it with ``--update-golden`` and review the
diff). The reference tool's own output on such folders is checked by
``tests/compare/cli/test_overflow_reference.py`` (``../shared/cases/overflow_reference``).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from convert.codecs.dumpwrite import TensorSpec, write_dump  # noqa: E402
from convert.codecs.opdebug import AccType, NewEntry, encode_new, encode_old, write_opdebug_file  # noqa: E402

TS = 1700000000000000  # microsecond time stamps, as in real dump names
NO_ID = 65535  # context_id / thread_id of a task that is not an FFTS+ sub-task
#: ``-n`` of the fixture's run.
COUNT = 3


def _new(acc: AccType, task: int, stream: int, status: int) -> bytes:
    return encode_new([NewEntry(acc, {"model_id": 1, "stream_id": stream, "task_id": task, "task_type": 0,
                                      "context_id": NO_ID, "thread_id": NO_ID, "pc_start": 0x1000 + task,
                                      "para_base": 0x2000 + task, "status": status})])


def make_dump(folder: Path) -> Path:
    """The dump folder (module docstring); returns ``folder``."""
    leaf = folder / "0"
    leaf.mkdir(parents=True)
    h, f = np.float16, np.float32
    write_dump(leaf / f"MatMul.layer2_MatMul.5.1.{TS + 10}", op_name="layer2/MatMul", dump_time=TS + 10,
               inputs=[TensorSpec(np.array([[1, -2, 65504], [0.5, 3, -1]], h)),
                       TensorSpec(np.arange(6, dtype=f).reshape(1, 1, 3, 2) * f(0.1), format="NCHW")],
               outputs=[TensorSpec(np.array([[np.inf, 1], [2, 3]], h))])
    write_dump(leaf / f"Add.layer2_Add.6.1.{TS + 20}", op_name="layer2/Add", dump_time=TS + 20,
               inputs=[TensorSpec(np.array([1, 2, 3, 100000], np.int32)), TensorSpec(np.array([7, 0, 255, 1], np.uint8))],
               outputs=[TensorSpec(np.array([np.nan, 1, 2], f))])
    write_dump(leaf / f"Relu.layer2_Relu.7.1.{TS + 30}", op_name="layer2/Relu", dump_time=TS + 30,
               inputs=[TensorSpec(np.array([-1, 1], h))], outputs=[TensorSpec(np.array([0, 1], h))])
    write_opdebug_file(leaf / f"Opdebug.Node_OpDebug.40.1.{TS + 50}", [_new(AccType.AIV, 77, 1, 1)],
                       dump_time=TS + 50)
    write_opdebug_file(leaf / f"Opdebug.Node_OpDebug.41.1.{TS + 100}",
                       [encode_old((1, 1, 6, 0, 0x3000, 0x4000), l2=(1, 1, 5, 0, 0x5000, 0x6000), l2_status=2,
                                   kernel_code=0x3000, block_idx=2, status=4)], dump_time=TS + 100)
    write_opdebug_file(leaf / f"Opdebug.Node_OpDebug.39.1.{TS + 150}",
                       [encode_old(dha=(1, 1, 99, 0, 0x7000, 0x8000), dha_status=1,
                                   l2=(1, 1, 5, 0, 0x5000, 0x6000), l2_status=1)], dump_time=TS + 150)
    write_opdebug_file(leaf / f"Opdebug.Node_OpDebug.42.1.{TS + 400}", [_new(AccType.AIC, 7, 1, 1)],
                       dump_time=TS + 400)
    return folder


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "fixtures" / "overflow"
    dump = out / "dump"
    if dump.exists():
        shutil.rmtree(dump)
    make_dump(dump)
    print(f"dump {dump} (expected summary of -n {COUNT}: {out / 'expected_summary.txt'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
