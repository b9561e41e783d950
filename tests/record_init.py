"""What the tests of hand-written record ``__init__`` s share (imported as ``record_init``: ``tests/``
is on the path through its conftest): the parameters are the dataclass fields, and the record the
dataclass's own generated constructor would build."""

from __future__ import annotations

import dataclasses
import inspect


def assert_init_is_the_fields(record: type) -> None:
    """Every field is a parameter of ``record.__init__``, in the field order, with the field's
    default (no field forgotten when one is added; no factory default written out)."""
    params = list(inspect.signature(record.__init__).parameters.values())[1:]
    fields = dataclasses.fields(record)
    assert [p.name for p in params] == [f.name for f in fields]
    for param, f in zip(params, fields):
        assert param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        expected = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert param.default == expected, f.name
        assert f.default_factory is dataclasses.MISSING, f"{f.name}: a factory default is not written out"


def generated(record: type) -> type:
    """The same fields, with the constructor :func:`dataclasses.dataclass` generates."""
    fields = [(f.name, f.type, dataclasses.field(default=f.default, compare=f.compare, hash=f.hash, repr=f.repr))
              for f in dataclasses.fields(record)]
    return dataclasses.make_dataclass(f"Generated{record.__name__}", fields, frozen=True)
