#!/usr/bin/env python3
"""Write real msprobe dump trees (written by msprobe itself from a PyTorch training run) for tests.

Usage:
    python scripts/make_msprobe_dumps.py OUT_DIR --python VENV/bin/python
                                         [--trees t_L1_base,t_L1_perturb,...] [--steps 2]
                                         [--no-compare]

Needs ``mindstudio-probe`` and ``torch`` in the interpreter given by ``--python`` (default: this
one). They are not dependencies of vcompare; a separate venv keeps them apart (both install from
PyPI; the default torch wheel is ~6 GB with its CUDA libraries, CPU is all that is used)::

    python3 -m venv /tmp/msvenv && /tmp/msvenv/bin/pip install mindstudio-probe torch

Without them the script exits 2 and says so. Versions used for ``fixtures/msprobe_real/``:
mindstudio-probe 26.2.0, torch 2.14.1 (CPU run), Python 3.11.7, numpy 2.4.6; seed :data:`SEED`.

How a tree is made (``_dump_one``, one child process per tree: msprobe's ``PrecisionDebugger``
is a process-wide singleton): a ``config.json`` at the tree's root (task, level, summary mode;
``dump_path`` the tree), ``PrecisionDebugger(config_path=...)``, then for each of ``--steps``
steps ``debugger.start(model=model)``, forward, cross-entropy, backward, ``debugger.stop()``,
``debugger.step()``, then ``SGD.step()`` outside the dump (so step 1 sees updated weights).
msprobe writes ``{tree}/step{N}/proc{pid}/`` (``dump.json``, ``stack.json``, ``construct.json``
and, for task ``tensor``, ``dump_tensor_data/*.pt``).

The model (``_build_model``), deliberately small so that a tensor tree of two steps stays a few
hundred KB (a ``.pt`` file takes ~1.8 KB whatever its size): Conv2d(3,4,3)+BatchNorm2d+ReLU,
Conv2d(4,8,3,stride 2) -> 4 tokens of width 8, one pre-norm transformer block (LayerNorm,
single-head attention: qkv Linear, matmul, softmax, matmul, proj Linear; LayerNorm, MLP fc1
Linear(8,16) + GELU + fc2), a final LayerNorm, mean over tokens, a Linear(8,4) head,
cross-entropy, SGD(lr 0.1, momentum 0.9). Input 2x3x4x4; the weights, inputs and labels come from
``torch.Generator``s seeded by :data:`SEED` (and the step), so every tree starts from the same weights and sees the same batches.

Trees (:data:`TREES`, ``{t|s}_{level}[_{summary}]_{variant}``):
    t_*   task ``tensor``; s_* task ``statistics`` (summary ``statistics``, or ``md5`` when named)
    L1    APIs; L0 modules; mix both
    base      float32
    perturb   base with ``block.mlp.fc1.weight *= 1 + 1e-3 * N(0,1)`` (seeded) before training
    bf16      the forward under ``torch.autocast("cpu", dtype=torch.bfloat16)``

After the dumps, msprobe's own comparison of each pair of :data:`PAIRS` for each step:
``msprobe compare -tp LEFT/stepN -gp RIGHT/stepN -o OUT_DIR/msprobe_compare/{case}/stepN``.

Machine paths: every text file written (``dump.json``, ``stack.json``, ``construct.json``,
``config.json``, the CSVs) has the output folder, the venv, the Python installation and this
script's folder replaced by ``/home/user/msprobe_real``, ``/home/user/msvenv``,
``/home/user/python`` and ``/home/user/scripts``; nothing else is changed (the ``proc{pid}``
folder names and the CSVs' time-stamped names are msprobe's). Rerunning writes byte-identical
``.pt`` files and the same ``dump.json`` numbers (CPU, one thread, deterministic algorithms) under
new ``proc`` folder names; only the md5-mode CRC msprobe records for the in-place input of
``Tensor.add_.0.forward`` (an int64 0-d counter) changes from run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

SEED = 20261128
#: Classes of the head (labels drawn in [0, CLASSES)).
CLASSES = 4
INSTALL_HINT = "python3 -m venv VENV && VENV/bin/pip install mindstudio-probe torch"
#: Path replacements' targets (module doc).
NEUTRAL_OUT = "/home/user/msprobe_real"
NEUTRAL_VENV = "/home/user/msvenv"
NEUTRAL_PYTHON = "/home/user/python"
NEUTRAL_SCRIPTS = "/home/user/scripts"


@dataclass(frozen=True)
class Tree:
    """One dump tree: msprobe's task, level and summary mode, and how the run is changed."""

    name: str
    task: str          # "tensor" | "statistics"
    level: str         # "L0" | "L1" | "mix"
    variant: str       # "base" | "perturb" | "bf16"
    summary_mode: str = "statistics"   # "statistics" | "md5"


def _tree(name: str) -> Tree:
    parts = name.split("_")
    task = {"t": "tensor", "s": "statistics"}[parts[0]]
    summary = parts[2] if len(parts) == 4 else "statistics"
    return Tree(name, task, parts[1], parts[-1], summary)


TREES: dict[str, Tree] = {name: _tree(name) for name in (
    "t_L1_base", "t_L1_perturb", "t_L1_bf16", "t_mix_base", "t_mix_perturb", "t_L0_base", "t_L0_perturb",
    "s_L1_base", "s_L1_perturb", "s_L1_bf16", "s_L1_md5_base", "s_L1_md5_perturb", "s_mix_base",
    "s_mix_perturb")}


@dataclass(frozen=True)
class ComparePair:
    """A case of msprobe's own comparison: ``-tp left -gp right``."""

    case: str
    left: str
    right: str


PAIRS: tuple[ComparePair, ...] = (
    ComparePair("t_L1_perturb", "t_L1_perturb", "t_L1_base"),
    ComparePair("t_L1_bf16", "t_L1_bf16", "t_L1_base"),
    ComparePair("t_mix_perturb", "t_mix_perturb", "t_mix_base"),
    ComparePair("t_L0_perturb", "t_L0_perturb", "t_L0_base"),
    ComparePair("s_L1_perturb", "s_L1_perturb", "s_L1_base"),
    ComparePair("s_L1_bf16", "s_L1_bf16", "s_L1_base"),
    ComparePair("s_L1_md5", "s_L1_md5_perturb", "s_L1_md5_base"),
    ComparePair("s_mix_perturb", "s_mix_perturb", "s_mix_base"),
)


# --------------------------------------------------------------------------------------------
# the child: one tree, in the interpreter that has torch and msprobe
# --------------------------------------------------------------------------------------------

def _build_model(torch):  # noqa: ANN001 - torch is imported in the child only
    nn, functional = torch.nn, torch.nn.functional

    class Attention(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.scale = width ** -0.5

        def forward(self, x):  # noqa: ANN001, ANN201
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            weights = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * self.scale, dim=-1)
            return self.proj(torch.matmul(weights, v))

    class Mlp(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.fc1 = nn.Linear(width, 2 * width)
            self.fc2 = nn.Linear(2 * width, width)

        def forward(self, x):  # noqa: ANN001, ANN201
            return self.fc2(functional.gelu(self.fc1(x)))

    class Block(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(width)
            self.attn = Attention(width)
            self.ln2 = nn.LayerNorm(width)
            self.mlp = Mlp(width)

        def forward(self, x):  # noqa: ANN001, ANN201
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class TinyNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(4)
            self.conv2 = nn.Conv2d(4, 8, 3, stride=2, padding=1)
            self.block = Block(8)
            self.norm = nn.LayerNorm(8)
            self.head = nn.Linear(8, CLASSES)

        def forward(self, x):  # noqa: ANN001, ANN201
            x = functional.relu(self.bn1(self.conv1(x)))
            x = self.conv2(x).flatten(2).transpose(1, 2)
            x = self.norm(self.block(x))
            return self.head(x.mean(dim=1))

    return TinyNet()


def _dump_one(spec: dict) -> None:
    """Write one tree (module doc); runs in the child interpreter."""
    tree, steps, out = Tree(**spec["tree"]), int(spec["steps"]), Path(spec["out"])
    import torch  # noqa: PLC0415 - the child's interpreter has torch, this one need not
    from msprobe.pytorch import PrecisionDebugger  # noqa: PLC0415

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    root = out / tree.name
    root.mkdir(parents=True, exist_ok=False)
    section = {"scope": [], "list": [], "data_mode": ["all"]}
    config = {"task": tree.task, "dump_path": str(root), "rank": [], "step": [], "level": tree.level,
              "async_dump": False, "statistics": {**section, "summary_mode": tree.summary_mode},
              "tensor": dict(section)}
    (root / "config.json").write_text(json.dumps(config, indent=2))

    model = _build_model(torch)
    weights = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for _, parameter in sorted(model.named_parameters()):
            if parameter.dim() > 1:
                parameter.copy_(torch.randn(parameter.shape, generator=weights) * parameter.shape[1] ** -0.5)
            else:
                parameter.copy_(torch.randn(parameter.shape, generator=weights) * 0.1)
        if tree.variant == "perturb":
            noise = torch.Generator().manual_seed(SEED + 1)
            fc1 = model.block.mlp.fc1.weight
            fc1.mul_(1 + 1e-3 * torch.randn(fc1.shape, generator=noise))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    debugger = PrecisionDebugger(config_path=str(root / "config.json"))
    for step in range(steps):
        batch = torch.Generator().manual_seed(SEED + 100 + step)
        x = torch.randn((2, 3, 4, 4), generator=batch)
        labels = torch.randint(0, CLASSES, (2,), generator=batch)
        debugger.start(model=model)
        optimizer.zero_grad()
        if tree.variant == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(x)
        else:
            logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        loss.backward()
        debugger.stop()
        debugger.step()
        optimizer.step()  # outside the dump: its per-parameter in-place calls would double the tree


# --------------------------------------------------------------------------------------------
# the parent: children, msprobe's comparisons, neutral paths
# --------------------------------------------------------------------------------------------

def _child_facts(python: str) -> dict:
    """Versions and prefixes of the child interpreter, or exit 2 when torch / msprobe are missing."""
    probe = ("import json, sys, importlib.metadata as m\n"
             "import torch, msprobe\n"
             "print(json.dumps({'prefix': sys.prefix, 'base_prefix': sys.base_prefix,"
             " 'python': sys.version.split()[0], 'torch': torch.__version__,"
             " 'msprobe': m.version('mindstudio-probe'), 'numpy': m.version('numpy')}))")
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        print(f"make_msprobe_dumps: {python} cannot import torch and msprobe ({last}); install them with: "
              f"{INSTALL_HINT}, then pass --python VENV/bin/python", file=sys.stderr)
        raise SystemExit(2)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _msprobe_command(python: str) -> list[str]:
    """The ``msprobe`` entry point beside ``python`` (a venv's bin folder), else ``python -m``."""
    beside = Path(python).parent / "msprobe"
    return [str(beside)] if beside.exists() else [python, "-m", "msprobe.msprobe"]


def _neutral_paths(out: Path, facts: dict) -> list[tuple[str, str]]:
    """(machine path, neutral path), longest first, so that a prefix never shadows a longer one."""
    pairs = {str(out.resolve()): NEUTRAL_OUT, str(Path(facts["prefix"])): NEUTRAL_VENV,
             str(Path(facts["base_prefix"])): NEUTRAL_PYTHON, str(Path(__file__).resolve().parent): NEUTRAL_SCRIPTS}
    return sorted(pairs.items(), key=lambda item: -len(item[0]))


def _neutralise(folder: Path, replacements: list[tuple[str, str]]) -> int:
    """Replace machine paths in every text file below ``folder``; return the files changed."""
    changed = 0
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix not in (".json", ".csv", ".log"):
            continue
        text = path.read_text(encoding="utf-8")
        new = text
        for machine, neutral in replacements:
            new = new.replace(machine, neutral)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed += 1
    return changed


def _compare(out: Path, pair: ComparePair, steps: int, python: str) -> None:
    for step in range(steps):
        target = out / "msprobe_compare" / pair.case / f"step{step}"
        target.mkdir(parents=True, exist_ok=True)
        command = [*_msprobe_command(python), "compare", "-tp", str(out / pair.left / f"step{step}"),
                   "-gp", str(out / pair.right / f"step{step}"), "-o", str(target)]
        done = subprocess.run(command, capture_output=True, text=True)
        made = sorted(target.glob("compare_result_*"))
        print(f"msprobe compare {pair.case} step{step}: exit {done.returncode}, {len(made)} file(s)")
        if done.returncode != 0 or not made:
            print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"msprobe compare failed for {pair.case} step{step}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", help="output folder (created; must not hold the trees)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch and mindstudio-probe")
    parser.add_argument("--trees", default=",".join(TREES), help=f"comma-separated, of {', '.join(TREES)}")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--no-compare", action="store_true", help="write the trees only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _dump_one(json.loads(args.child))
        return 0
    if args.out is None:
        parser.error("OUT_DIR is required")
    names = [n for n in args.trees.split(",") if n]
    unknown = [n for n in names if n not in TREES]
    if unknown:
        parser.error(f"unknown tree(s) {unknown}; known: {', '.join(TREES)}")
    facts = _child_facts(args.python)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONHASHSEED": "0", "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "CUDA_VISIBLE_DEVICES": ""}
    for name in names:
        if (out / name).exists():
            shutil.rmtree(out / name)
        spec = json.dumps({"tree": asdict(TREES[name]), "steps": args.steps, "out": str(out)})
        done = subprocess.run([args.python, str(Path(__file__).resolve()), "--child", spec], env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"dumping {name} failed (exit {done.returncode})")
        print(f"{name}: {sum(1 for _ in (out / name).rglob('*.pt'))} .pt file(s)")
    if not args.no_compare:
        for pair in PAIRS:
            if pair.left in names and pair.right in names:
                _compare(out, pair, args.steps, args.python)
    facts_out = {k: facts[k] for k in ("python", "torch", "msprobe", "numpy")}
    (out / "versions.json").write_text(json.dumps({**facts_out, "seed": SEED, "steps": args.steps}, indent=2) + "\n")
    print(f"paths made neutral in {_neutralise(out, _neutral_paths(out, facts))} file(s); versions: {facts_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
