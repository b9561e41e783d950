"""The Ascend ``DumpData`` protobuf messages, built at run time (no protoc, no generated _pb2).

Schema (proto3, package ``toolkit.dumpdata``, file ``dump_data.proto``); field numbers in brackets::

    OriginalOp  name[1] string, output_index[2] uint32, data_type[3] OutputDataType,
                format[4] OutputFormat
    Shape       dim[1] repeated uint64
    DimRange    dim_start[1] uint64, dim_end[2] uint64
    OpOutput    data_type[1], format[2], shape[3] Shape, original_op[4] OriginalOp, data[5] bytes,
                size[6] uint64, original_shape[7] Shape, sub_format[8] int32, address[9] uint64,
                dim_range[10] repeated DimRange, offset[11] uint64
    OpInput     data_type[1], format[2], shape[3] Shape, data[4] bytes, size[5] uint64,
                original_shape[6] Shape, sub_format[7] int32, address[8] uint64, offset[9] uint64
    OpBuffer    buffer_type[1] BufferType, data[2] bytes, size[3] uint64
    OpAttr      name[1] string, value[2] string
    Workspace   type[1] Workspace.SpaceType, data[2] bytes, size[3] uint64
    DumpData    version[1] string, dump_time[2] uint64, output[3] repeated OpOutput,
                input[4] repeated OpInput, buffer[5] repeated OpBuffer, op_name[6] string,
                attr[7] repeated OpAttr, space[8] repeated Workspace

Enums: ``OutputDataType`` (``DT_*``), ``OutputFormat`` (``FORMAT_*``), ``BufferType`` (``L1`` = 0)
and ``Workspace.SpaceType`` (``LOG`` = 0). Their values come from :mod:`convert.codecs.dtypes`, the one
table of codes.

Descriptor-pool policy: the file is added to a private :class:`DescriptorPool` owned by this
module, so it never collides with another ``dump_data.proto`` registered in the default pool
(e.g. by a generated module of another tool), and re-importing this module (``importlib.reload``,
two import paths) simply builds a fresh pool instead of failing with "duplicate file name".
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from .dtypes import DataType, Format

PACKAGE = "toolkit.dumpdata"
FILE_NAME = "dump_data.proto"

_F = descriptor_pb2.FieldDescriptorProto
_OPTIONAL = _F.LABEL_OPTIONAL
_REPEATED = _F.LABEL_REPEATED

#: (name, number, type, label, type_name) per message; type_name is relative to the package.
_MESSAGES: dict[str, list[tuple[str, int, int, int, str]]] = {
    "OriginalOp": [
        ("name", 1, _F.TYPE_STRING, _OPTIONAL, ""),
        ("output_index", 2, _F.TYPE_UINT32, _OPTIONAL, ""),
        ("data_type", 3, _F.TYPE_ENUM, _OPTIONAL, "OutputDataType"),
        ("format", 4, _F.TYPE_ENUM, _OPTIONAL, "OutputFormat"),
    ],
    "Shape": [("dim", 1, _F.TYPE_UINT64, _REPEATED, "")],
    "DimRange": [
        ("dim_start", 1, _F.TYPE_UINT64, _OPTIONAL, ""),
        ("dim_end", 2, _F.TYPE_UINT64, _OPTIONAL, ""),
    ],
    "OpOutput": [
        ("data_type", 1, _F.TYPE_ENUM, _OPTIONAL, "OutputDataType"),
        ("format", 2, _F.TYPE_ENUM, _OPTIONAL, "OutputFormat"),
        ("shape", 3, _F.TYPE_MESSAGE, _OPTIONAL, "Shape"),
        ("original_op", 4, _F.TYPE_MESSAGE, _OPTIONAL, "OriginalOp"),
        ("data", 5, _F.TYPE_BYTES, _OPTIONAL, ""),
        ("size", 6, _F.TYPE_UINT64, _OPTIONAL, ""),
        ("original_shape", 7, _F.TYPE_MESSAGE, _OPTIONAL, "Shape"),
        ("sub_format", 8, _F.TYPE_INT32, _OPTIONAL, ""),
        ("address", 9, _F.TYPE_UINT64, _OPTIONAL, ""),
        ("dim_range", 10, _F.TYPE_MESSAGE, _REPEATED, "DimRange"),
        ("offset", 11, _F.TYPE_UINT64, _OPTIONAL, ""),
    ],
    "OpInput": [
        ("data_type", 1, _F.TYPE_ENUM, _OPTIONAL, "OutputDataType"),
        ("format", 2, _F.TYPE_ENUM, _OPTIONAL, "OutputFormat"),
        ("shape", 3, _F.TYPE_MESSAGE, _OPTIONAL, "Shape"),
        ("data", 4, _F.TYPE_BYTES, _OPTIONAL, ""),
        ("size", 5, _F.TYPE_UINT64, _OPTIONAL, ""),
        ("original_shape", 6, _F.TYPE_MESSAGE, _OPTIONAL, "Shape"),
        ("sub_format", 7, _F.TYPE_INT32, _OPTIONAL, ""),
        ("address", 8, _F.TYPE_UINT64, _OPTIONAL, ""),
        ("offset", 9, _F.TYPE_UINT64, _OPTIONAL, ""),
    ],
    "OpBuffer": [
        ("buffer_type", 1, _F.TYPE_ENUM, _OPTIONAL, "BufferType"),
        ("data", 2, _F.TYPE_BYTES, _OPTIONAL, ""),
        ("size", 3, _F.TYPE_UINT64, _OPTIONAL, ""),
    ],
    "OpAttr": [
        ("name", 1, _F.TYPE_STRING, _OPTIONAL, ""),
        ("value", 2, _F.TYPE_STRING, _OPTIONAL, ""),
    ],
    "Workspace": [
        ("type", 1, _F.TYPE_ENUM, _OPTIONAL, "Workspace.SpaceType"),
        ("data", 2, _F.TYPE_BYTES, _OPTIONAL, ""),
        ("size", 3, _F.TYPE_UINT64, _OPTIONAL, ""),
    ],
    "DumpData": [
        ("version", 1, _F.TYPE_STRING, _OPTIONAL, ""),
        ("dump_time", 2, _F.TYPE_UINT64, _OPTIONAL, ""),
        ("output", 3, _F.TYPE_MESSAGE, _REPEATED, "OpOutput"),
        ("input", 4, _F.TYPE_MESSAGE, _REPEATED, "OpInput"),
        ("buffer", 5, _F.TYPE_MESSAGE, _REPEATED, "OpBuffer"),
        ("op_name", 6, _F.TYPE_STRING, _OPTIONAL, ""),
        ("attr", 7, _F.TYPE_MESSAGE, _REPEATED, "OpAttr"),
        ("space", 8, _F.TYPE_MESSAGE, _REPEATED, "Workspace"),
    ],
}


def _proto_format_name(member: Format) -> str:
    """Proto spelling of a format: ``FORMAT_`` + the long name (15 and 20-24 differ)."""
    return "FORMAT_" + Format.proto_suffix(member)


def _add_enum(
    target: descriptor_pb2.EnumDescriptorProto, name: str, values: list[tuple[str, int]]
) -> None:
    target.name = name
    for value_name, number in values:
        target.value.add(name=value_name, number=number)


def build_file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The ``dump_data.proto`` file descriptor of the schema above (proto3)."""
    fdp = descriptor_pb2.FileDescriptorProto(name=FILE_NAME, package=PACKAGE, syntax="proto3")
    _add_enum(fdp.enum_type.add(), "OutputDataType", [(m.name, int(m)) for m in DataType])
    _add_enum(
        fdp.enum_type.add(), "OutputFormat", [(_proto_format_name(m), int(m)) for m in Format]
    )
    _add_enum(fdp.enum_type.add(), "BufferType", [("L1", 0)])
    for message_name, fields in _MESSAGES.items():
        message = fdp.message_type.add(name=message_name)
        if message_name == "Workspace":
            _add_enum(message.enum_type.add(), "SpaceType", [("LOG", 0)])
        for field_name, number, field_type, label, type_name in fields:
            field = message.field.add(name=field_name, number=number, type=field_type, label=label)
            if type_name:
                field.type_name = f".{PACKAGE}.{type_name}"
    return fdp


def _build_classes() -> dict[str, type]:
    pool = descriptor_pool.DescriptorPool()
    file_descriptor = pool.Add(build_file_descriptor())
    del file_descriptor
    return {
        name: GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in _MESSAGES
    }


_CLASSES = _build_classes()

OriginalOp = _CLASSES["OriginalOp"]
Shape = _CLASSES["Shape"]
DimRange = _CLASSES["DimRange"]
OpOutput = _CLASSES["OpOutput"]
OpInput = _CLASSES["OpInput"]
OpBuffer = _CLASSES["OpBuffer"]
OpAttr = _CLASSES["OpAttr"]
Workspace = _CLASSES["Workspace"]
DumpData = _CLASSES["DumpData"]

__all__ = [
    "DimRange",
    "DumpData",
    "OpAttr",
    "OpBuffer",
    "OpInput",
    "OpOutput",
    "OriginalOp",
    "Shape",
    "Workspace",
    "build_file_descriptor",
]
