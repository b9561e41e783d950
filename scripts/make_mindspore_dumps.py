#!/usr/bin/env python3
"""Write real MindSpore dump trees (written by MindSpore's own Dump feature) for tests.

Usage:
    python scripts/make_mindspore_dumps.py OUT_DIR [--variants base,perturb,...]
                                                   [--kernels Conv2D,MatMul,...]

Needs MindSpore (the CPU wheel is enough): ``pip install 'vcompare[mindspore]'``. Without it the
script exits 2 and says so. Each variant runs in its own subprocess (MindSpore reads
``MINDSPORE_DUMP_CONFIG`` once per process) in graph mode on CPU, O0 kernel-by-kernel, with
``saved_data: tensor`` and ``file_format: npy``, and writes ``OUT_DIR/{variant}/rank_0/...``.

The network (``_build_net``): Conv2d(1,4,3)+BatchNorm+ReLU, a residual block (2x Conv2d 3x3 +
BatchNorm, Add, ReLU), MaxPool, single-head self-attention (3 Dense, BatchMatMul, Softmax,
BatchMatMul, Add, LayerNorm), Flatten, Dense(100,16)+ReLU, Dense(16,10); sparse
SoftmaxCrossEntropyWithLogits, Momentum, TrainOneStepCell; input 2x1x12x12. The weights come
from numpy generators seeded by each parameter's name, so every variant starts from the same
weights without sharing a file.

Variants (``VARIANTS``):
    base           float32, one training step
    perturb        base with ``fc1.weight += 0.05 * N(0,1)`` (seeded)
    amp            base under ``mindspore.amp.auto_mixed_precision(net, "O2")``: MindSpore
                   inserts ``_OutputTo16__`` / ``_OutputTo32__`` into scope names and adds Casts
    graphs         two training steps then two inference calls in one process: graph 0 and
                   graph 1, two iterations each (``{net}/0/{0,1}`` and ``{net}/1/{0,1}``)
    long           a tiny net whose scope names exceed 255 characters: MindSpore writes
                   ``{digits}.npy`` files and a ``mapping.csv``; dump_mode 0 (Parameters too)
    long_perturb   ``long`` with every weight scaled by 1.01

Dumps are kept small with ``dump_mode: 1`` and a kernel list (``--kernels``, default
``DEFAULT_KERNELS``; MindSpore matches a type name against every kernel of that type and of
types that contain it, e.g. ``MatMul`` also dumps ``BatchMatMul``, and ``name-regex(.*fc1.*)``
adds the ``fc1`` Parameters, which no execution-order file lists). The absolute paths MindSpore
writes into ``graphs/*.ir``, ``graphs/*.pb`` and ``.dump_metadata/*`` (the dump folder, the
config, this script, the Python installation) are replaced by a neutral path of the same
length (``/generated/___...``), so the trees hold no path of the machine that made them;
``--drop-graphs`` leaves out ``graphs/`` (large, and read by no reader) as for
``fixtures/mindspore_real/``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

NET_NAME = "ResNetAttn"
LONG_NET_NAME = "LongNames"
DEFAULT_KERNELS = ("Conv2D", "MatMul", "Softmax", "LayerNorm", "Cast", "name-regex(.*fc1.*)")
INSTALL_HINT = "pip install 'vcompare[mindspore]'"


@dataclass(frozen=True)
class Variant:
    """One dump tree: which network, how it is changed and how long it runs."""

    name: str
    net: str              # "resnet_attn" or "long"
    perturb: bool = False
    amp: bool = False
    steps: int = 1
    eval_calls: int = 0
    dump_all: bool = False  # dump_mode 0 (every kernel and Parameter) instead of the kernel list


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("base", "resnet_attn"),
        Variant("perturb", "resnet_attn", perturb=True),
        Variant("amp", "resnet_attn", amp=True),
        Variant("graphs", "resnet_attn", steps=2, eval_calls=2),
        Variant("long", "long", dump_all=True),
        Variant("long_perturb", "long", perturb=True, dump_all=True),
    )
}


class GeneratorError(Exception):
    """The generator could not run; the message is the diagnosis."""


# --------------------------------------------------------------------------------------------
# parent process: configs, subprocesses, path scrubbing
# --------------------------------------------------------------------------------------------

def dump_config(path: Path, variant: Variant, kernels: tuple[str, ...]) -> dict[str, object]:
    """MindSpore's dump configuration for one variant, dumping into ``path``."""
    return {
        "common_dump_settings": {
            "op_debug_mode": 0,
            "dump_mode": 0 if variant.dump_all else 1,
            "path": str(path),
            "net_name": LONG_NET_NAME if variant.net == "long" else NET_NAME,
            "iteration": "all",
            "saved_data": "tensor",
            "input_output": 0,
            "kernels": [] if variant.dump_all else list(kernels),
            "support_device": [0, 1, 2, 3, 4, 5, 6, 7],
            "statistic_category": ["max", "min", "avg", "l2norm"],
            "file_format": "npy",
        },
        "e2e_dump_settings": {"enable": True, "trans_flag": True},
    }


def neutral_path(path: str) -> str:
    """A path of exactly ``len(path)`` characters that names nothing on the machine:
    ``/generated`` padded with ``_`` (or cut, for a path shorter than that)."""
    stem = "/generated/"
    return (stem + "_" * max(0, len(path) - len(stem)))[: len(path)]


def scrub_paths(tree: Path, secrets: tuple[str, ...]) -> int:
    """Replace every occurrence of each path in ``secrets`` in the files of ``tree`` (bytes, so
    that .pb files keep their lengths) by ``neutral_path`` of the same length; returns how many
    files changed. Longest paths first, so that a prefix never leaves a tail behind."""
    changed = 0
    ordered = sorted({s for s in secrets if s}, key=len, reverse=True)
    for file in sorted(p for p in tree.rglob("*") if p.is_file() and p.suffix != ".npy"):
        data = file.read_bytes()
        new = data
        for secret in ordered:
            new = new.replace(secret.encode(), neutral_path(secret).encode())
        if new != data:
            file.write_bytes(new)
            changed += 1
    return changed


def run_variant(out_dir: Path, variant: Variant, kernels: tuple[str, ...],
                drop_graphs: bool = False) -> Path:
    """Run one variant in a fresh interpreter with its own MINDSPORE_DUMP_CONFIG; returns the
    tree ``out_dir / variant.name`` (without ``rank_*/graphs/`` when ``drop_graphs``)."""
    target = out_dir / variant.name
    with tempfile.TemporaryDirectory(prefix="ms_dump_") as work:
        work_dir = Path(work)
        dump_dir = work_dir / "dump"
        config = work_dir / "config.json"
        config.write_text(json.dumps(dump_config(dump_dir, variant, kernels), indent=2))
        env = dict(os.environ, MINDSPORE_DUMP_CONFIG=str(config), GLOG_v="3")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", variant.name]
        proc = subprocess.run(cmd, env=env, cwd=work_dir, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise GeneratorError(f"variant {variant.name!r}: MindSpore run failed "
                                 f"(exit {proc.returncode}):\n{tail}")
        if not dump_dir.is_dir():
            raise GeneratorError(f"variant {variant.name!r}: MindSpore wrote no dump into "
                                 f"{dump_dir} (is the Dump feature available in this build?)")
        here = Path(__file__).resolve()
        scrub_paths(dump_dir, (str(dump_dir), str(config), str(work_dir), str(here),
                               str(here.parent), sys.prefix, sys.base_prefix))
        if drop_graphs:
            for graphs in dump_dir.glob("rank_*/graphs"):
                shutil.rmtree(graphs)
        if target.exists():  # replaced only once the new run succeeded
            shutil.rmtree(target)
        shutil.copytree(dump_dir, target)
    normalise_modes(target)
    return target


def normalise_modes(tree: Path) -> None:
    """MindSpore writes its files read-only for the owner (0400); make them ordinary (files
    0644, folders 0755) so that the trees can be copied, committed and regenerated."""
    tree.chmod(0o755)
    for path in tree.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def mindspore_available() -> bool:
    """Whether ``import mindspore`` can work in this interpreter (without importing it)."""
    return importlib.util.find_spec("mindspore") is not None


def parse_list(text: str, allowed: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Comma-separated names, stripped; unknown names (when ``allowed`` is given) are refused."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise GeneratorError(f"empty list: {text!r}")
    if allowed is not None:
        unknown = [n for n in names if n not in allowed]
        if unknown:
            raise GeneratorError(f"unknown variant(s) {', '.join(unknown)}; "
                                 f"known: {', '.join(allowed)}")
    return names


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", nargs="?", type=Path, help="folder for the dump trees")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated, from {', '.join(VARIANTS)} (default: all)")
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS),
                        help="kernel types or names to dump (dump_mode 1), comma-separated")
    parser.add_argument("--drop-graphs", action="store_true",
                        help="leave out rank_*/graphs/ (.ir/.pb; read by no reader)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not mindspore_available():
        print(f"make_mindspore_dumps: MindSpore is not importable in {sys.executable}; "
              f"install it with: {INSTALL_HINT}", file=sys.stderr)
        return 2
    if args.worker:
        return worker(VARIANTS[args.worker])
    if args.out_dir is None:
        parser.error("OUT_DIR is required")
    try:
        names = parse_list(args.variants, tuple(VARIANTS))
        kernels = parse_list(args.kernels)
        args.out_dir.mkdir(parents=True, exist_ok=True)
        for name in names:
            tree = run_variant(args.out_dir, VARIANTS[name], kernels, args.drop_graphs)
            count = sum(1 for p in tree.rglob("*.npy"))
            print(f"{name:13s} {tree}  ({count} .npy files)", flush=True)
    except GeneratorError as exc:
        print(f"make_mindspore_dumps: {exc}", file=sys.stderr)
        return 2
    return 0


# --------------------------------------------------------------------------------------------
# worker process: MindSpore itself (imported only here)
# --------------------------------------------------------------------------------------------

def _seeded_weights(net: object, scale: float, extra_seed: int) -> None:
    """Set every weight/bias/gamma/beta from a generator seeded by crc32 of the parameter name
    (so the values do not depend on parameter order or on MindSpore's initialisers)."""
    import numpy as np
    from mindspore import Tensor

    for p in net.get_parameters():
        shape = tuple(p.shape)
        rng = np.random.default_rng(zlib.crc32(p.name.encode()) + extra_seed)
        if p.name.endswith("moving_mean"):
            val = np.zeros(shape, np.float32)
        elif p.name.endswith(("moving_variance", "gamma")):
            val = np.ones(shape, np.float32)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else max(shape[0], 1)
            val = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
        p.set_data(Tensor(val * np.float32(scale)))


def _build_net(variant: Variant) -> object:
    """The conv + residual + attention network (see the module docstring)."""
    import numpy as np
    from mindspore import nn, ops

    class Residual(nn.Cell):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.conv_a = nn.Conv2d(c, c, 3, pad_mode="same", has_bias=False)
            self.bn_a = nn.BatchNorm2d(c)
            self.conv_b = nn.Conv2d(c, c, 3, pad_mode="same", has_bias=False)
            self.bn_b = nn.BatchNorm2d(c)
            self.relu = nn.ReLU()

        def construct(self, x):
            y = self.relu(self.bn_a(self.conv_a(x)))
            return self.relu(self.bn_b(self.conv_b(y)) + x)

    class SelfAttention(nn.Cell):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.query = nn.Dense(d, d)
            self.key = nn.Dense(d, d)
            self.value = nn.Dense(d, d)
            self.norm = nn.LayerNorm((d,))
            self.softmax = nn.Softmax(axis=-1)
            self.scores = ops.BatchMatMul(transpose_b=True)
            self.mix = ops.BatchMatMul()
            self.scale = float(1.0 / np.sqrt(d))

        def construct(self, x):
            weights = self.softmax(self.scores(self.query(x), self.key(x)) * self.scale)
            return self.norm(x + self.mix(weights, self.value(x)))

    class ConvAttnNet(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(1, 4, 3, pad_mode="valid", has_bias=True)   # 12x12 -> 10x10
            self.bn0 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU()
            self.block = Residual(4)
            self.pool = nn.MaxPool2d(kernel_size=2, stride=2)                  # -> 5x5
            self.attn = SelfAttention(25)                                      # 4 tokens, d=25
            self.flatten = nn.Flatten()
            self.fc1 = nn.Dense(100, 16)
            self.fc2 = nn.Dense(16, 10)

        def construct(self, x):
            x = self.pool(self.block(self.relu(self.bn0(self.stem(x)))))
            x = self.attn(x.reshape(x.shape[0], 4, 25))
            return self.fc2(self.relu(self.fc1(self.flatten(x))))

    net = ConvAttnNet()
    _seeded_weights(net, 1.0, 0)
    if variant.perturb:
        from mindspore import Tensor

        fc1 = net.fc1.weight
        noise = np.random.default_rng(7).standard_normal(tuple(fc1.shape)).astype(np.float32)
        fc1.set_data(Tensor(fc1.asnumpy() + np.float32(0.05) * noise))
    return net


def _build_long_net(variant: Variant) -> object:
    """Nested cells with long class and attribute names: kernel scope names over 255 chars."""
    from mindspore import nn

    class InnermostDenseLayerWithAnUnusuallyLongClassNameForDumpTests(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.projection_with_a_long_attribute_name_that_makes_scopes_long = nn.Dense(8, 8)

        def construct(self, x):
            return self.projection_with_a_long_attribute_name_that_makes_scopes_long(x)

    class MiddleContainerCellWhoseClassNameIsAlsoVeryLongOnPurpose(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.middle_attribute_holding_the_inner_dense_block_of_the_test = (
                InnermostDenseLayerWithAnUnusuallyLongClassNameForDumpTests())
            self.relu = nn.ReLU()

        def construct(self, x):
            return self.relu(self.middle_attribute_holding_the_inner_dense_block_of_the_test(x))

    class OutermostNetworkCellWithAnotherLongNameToPushScopesPast255(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.outer_attribute_with_a_long_name_wrapping_the_middle_container = (
                MiddleContainerCellWhoseClassNameIsAlsoVeryLongOnPurpose())

        def construct(self, x):
            return self.outer_attribute_with_a_long_name_wrapping_the_middle_container(x)

    net = OutermostNetworkCellWithAnotherLongNameToPushScopesPast255()
    _seeded_weights(net, 1.01 if variant.perturb else 1.0, 11)
    return net


def worker(variant: Variant) -> int:
    """Run one variant inside MindSpore (MINDSPORE_DUMP_CONFIG is already in the environment)."""
    import numpy as np
    import mindspore as ms
    from mindspore import Tensor, nn

    ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O0"})
    ms.set_device("CPU")
    ms.set_seed(1)
    if variant.net == "long":
        net = _build_long_net(variant)
        x = Tensor(np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32))
        print(f"{variant.name}: sum={float(net(x).asnumpy().sum()):.6f}", flush=True)
        return 0
    net = _build_net(variant)
    if variant.amp:
        net = ms.amp.auto_mixed_precision(net, "O2")
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
    train.set_train()
    rng = np.random.default_rng(0)
    for step in range(variant.steps):
        x = Tensor(rng.standard_normal((2, 1, 12, 12)).astype(np.float32))
        y = Tensor(rng.integers(0, 10, size=(2,)).astype(np.int32))
        loss = train(x, y)
        print(f"{variant.name}: step {step} loss={float(loss.asnumpy()):.6f}", flush=True)
    net.set_train(False)
    for call in range(variant.eval_calls):
        x = Tensor(rng.standard_normal((2, 1, 12, 12)).astype(np.float32))
        out = net(x)
        print(f"{variant.name}: eval {call} out00={float(out.asnumpy()[0, 0]):.6f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
