"""msprobe data names: the keys of a ``dump.json``'s ``data`` object, and the dtype names it writes.

msprobe (the accuracy tool of Ascend's mstt repository) names each dumped call:

* an **API** call ``{Prefix}.{api}.{count}.{direction}`` -- ``Functional.relu.0.forward``,
  ``Tensor.__getitem__.3.backward``, ``Aten.add.Tensor.0.forward`` (``api`` may hold dots);
  ``count`` numbers the calls of that ``{Prefix}.{api}`` from 0, ``direction`` is ``forward`` or
  ``backward``. PyTorch prefixes: ``Tensor``, ``Torch``, ``Functional``, ``NPU``, ``VF``,
  ``Aten``, ``Distributed``, ``MindSpeed``, ``Triton``; MindSpore: ``Tensor``, ``Functional``,
  ``Mint``, ``MintFunctional``, ``Primitive``, ``Jit``, ``Distributed`` ...
* a **module** (PyTorch ``Module``) or **cell** (MindSpore ``Cell``) call
  ``{Module|Cell}.{path}.{Class}.{direction}.{count}`` -- ``Module.conv2.Conv2d.forward.0``
  (``path`` the attribute path, may hold dots; a leading ``{index}.`` when several models were
  given), and ``{Module|Cell}.{path}.{Class}.parameters_grad.{count}``.

Cross-framework key (:func:`api_key`, the ``msprobe API`` rung of the pairing ladder): PyTorch
and MindSpore name the same computation with different prefixes (``Torch.matmul`` /
``Mint.matmul``; ``Module.fc.Linear`` / ``Cell.fc.Dense``), so the key drops them: an API call
keys as ``{api}.{count}.{direction}``, a module or cell call as
``cell:{path}.{direction}.{count}`` (prefix *and* class dropped: the class names differ between
frameworks, the attribute path does not). A name in neither form has no key.

Item names (:func:`item_name`, msprobe's ``NPU Name`` / ``Data_name`` stem): an item of a call
is named ``{call}.{word}.{path}``: ``word`` is ``input`` for ``input_args`` / ``input_kwargs`` /
``input``, ``output`` for ``output``, ``parameters`` for ``parameters`` (``grad_input`` /
``grad_output`` keep their key); ``path`` is the item's place in the section, a list position or
an object key for each level (``Functional.conv2d.0.forward.input.3.0``: the first element of
the list given as the fourth positional argument; ``Torch.softmax.0.forward.input.dim``: the
keyword argument ``dim``; ``Module.conv1.Conv2d.forward.0.parameters.weight``). Keyword
arguments and parameters are named by their key alone. A ``parameters_grad`` entry names its
items ``{call}.{key}`` (``Module.head.Linear.parameters_grad.0.weight``), with the list
position added only when the key holds more than one tensor.

Dtype names (:func:`msprobe_dtype`): PyTorch writes ``str(tensor.dtype)`` (``torch.float32``),
MindSpore ``str(tensor.dtype)`` (``Float32``, ``BFloat16``); both become numpy-style names
(``float32``, ``bfloat16``); an unknown name is returned as written.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import Enum

from .mindspore import ms_dtype

_API_RE = re.compile(r"(?P<prefix>[A-Za-z][A-Za-z0-9_]*)\.(?P<api>.+)\.(?P<count>\d+)\.(?P<dir>forward|backward)")
_MODULE_RE = re.compile(r"(?P<prefix>Module|Cell)\.(?P<path>.+)\.(?P<cls>[^.]+)\."
                        r"(?P<dir>forward|backward|parameters_grad)\.(?P<count>\d+)")

#: ``torch.{name}`` -> numpy-style name (aliases included).
_TORCH_DTYPES = {
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16",
    "int64": "int64", "long": "int64", "int32": "int32", "int": "int32", "int16": "int16", "short": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool", "complex64": "complex64", "cfloat": "complex64",
    "complex128": "complex128", "cdouble": "complex128", "uint16": "uint16", "uint32": "uint32",
    "uint64": "uint64",
}


class CallKind(str, Enum):
    """Whether a data name is an API call or a module / cell call."""

    API = "api"
    MODULE = "module"


#: ``CallKind.API`` (a member read through its enum class is a Python-level lookup: ~65 ns; the
#: loader asks :attr:`MsprobeName.op_type` once a call, 10^5 times a side).
_API = CallKind.API


@dataclass(frozen=True, slots=True)
class MsprobeName:
    """The parts of a ``dump.json`` data name (module doc). ``api`` is the API name, or
    ``{path}.{Class}`` for a module; ``path`` the module path (empty for an API)."""

    kind: CallKind
    prefix: str
    api: str
    count: int
    direction: str
    path: str = ""

    @property
    def op_type(self) -> str:
        """The API name (``relu``), or the module's class (``Conv2d``)."""
        return self.api if self.kind is _API else self.api.rsplit(".", 1)[-1]


@functools.lru_cache(maxsize=1 << 17)
def parse_msprobe_name(name: str) -> MsprobeName | None:
    """The parts of an msprobe data name, or None when it is in neither form. Remembered (a frozen
    record; up to 131,072 names, ~300 bytes each): the loader, the pairing and the call graph each
    ask, and both sides share most names."""
    module = _MODULE_RE.fullmatch(name)
    if module is not None:
        return MsprobeName(CallKind.MODULE, module["prefix"], f"{module['path']}.{module['cls']}",
                           int(module["count"]), module["dir"], module["path"])
    api = _API_RE.fullmatch(name)
    if api is not None:
        return MsprobeName(CallKind.API, api["prefix"], api["api"], int(api["count"]), api["dir"])
    return None


def api_key(name: str) -> str | None:
    """The cross-framework key of a data name (module doc), None when it has none."""
    parsed = parse_msprobe_name(name)
    if parsed is None:
        return None
    if parsed.kind is CallKind.MODULE:
        return f"cell:{parsed.path}.{parsed.direction}.{parsed.count}"
    return f"{parsed.api}.{parsed.count}.{parsed.direction}"


#: ``dump.json`` section -> the word of its items' names (module doc).
SECTION_WORDS = {"input_args": "input", "input_kwargs": "input", "input": "input", "output": "output",
                 "parameters": "parameters", "grad_input": "grad_input", "grad_output": "grad_output"}


def item_name(call: str, section: str, path: tuple[str | int, ...]) -> str:
    """msprobe's name of an item of ``call`` (module doc): ``section`` a ``dump.json`` key
    (``input_args`` ...; a ``parameters_grad`` key names itself), ``path`` its list positions
    and object keys below the section, outermost first. A section not in :data:`SECTION_WORDS`
    keeps its key as the word."""
    word = SECTION_WORDS.get(section, section)
    return ".".join((call, word, *(str(p) for p in path)))


def msprobe_dtype(text: str) -> str:
    """A ``dump.json`` dtype (``torch.float32``, ``Float32``) as a numpy-style name; unknown: as written."""
    if text.startswith("torch."):
        return _TORCH_DTYPES.get(text[len("torch."):], text)
    return ms_dtype(text) or text


__all__ = ["SECTION_WORDS", "CallKind", "MsprobeName", "api_key", "item_name", "msprobe_dtype", "parse_msprobe_name"]
