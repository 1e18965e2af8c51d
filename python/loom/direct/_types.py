# SPDX-License-Identifier: Apache-2.0
"""DataType, ParallelType and MemoryType under nvFuser's names, mapped onto Loom's.

A name nvFuser has and Loom does not (4-bit floats, stream parallelism, ...) raises
``loom.NotSupportedError`` naming it when it is looked up, so nothing is silently approximated.
"""

import enum

from .. import NotSupportedError, _C
from ._unsupported import UNSUPPORTED, error


def _unsupported_enum_meta(scope):
    class _Meta(enum.EnumMeta):
        def __getattr__(cls, name):
            if name in UNSUPPORTED[scope]:
                raise error(scope, name)
            return super().__getattr__(name)

    return _Meta


class DataType(enum.Enum, metaclass=_unsupported_enum_meta("DataType")):
    """nvFuser's DataType names; ``.loom`` is Loom's type (None for Null)."""

    Double = "Float64"
    Float = "Float32"
    Half = "Float16"
    BFloat16 = "BFloat16"
    Int = "Int64"
    # nvFuser's index type; Loom indexes with 64 bits, so it is Loom's Int64 as Int is. A member
    # of its own (not an alias of Int) only so that a scalar defined with it prints as
    # DataType.Index, as nvFuser prints it.
    Index = "Index"
    Int32 = "Int32"
    # The narrow and unsigned integers under nvFuser's C++ names (its Python enum has UInt64
    # only); Int8, Int16 and UInt8 are aliases under torch's names.
    Char = "Int8"
    Short = "Int16"
    Byte = "UInt8"
    UInt16 = "UInt16"
    UInt32 = "UInt32"
    UInt64 = "UInt64"
    Int8 = "Int8"
    Int16 = "Int16"
    UInt8 = "UInt8"
    Bool = "Bool"
    ComplexFloat = "ComplexFloat"
    ComplexDouble = "ComplexDouble"
    # The 8-bit floats (torch.float8_e4m3fn / float8_e5m2): stored in a byte, computed in f32.
    Float8_e4m3fn = "Float8_e4m3fn"
    Float8_e5m2 = "Float8_e5m2"
    Null = None

    @property
    def loom(self):
        if self.value is None:
            return None
        return getattr(_C.DataType, "Int64" if self.value == "Index" else self.value)

    def __repr__(self):
        return f"DataType.{self.name}"

    __str__ = __repr__


def to_loom_dtype(dtype, what="dtype"):
    """Loom's type for a DataType (or a torch dtype, or a loom._C.DataType). A value that is no
    type, or a torch dtype Loom has no type for, raises loom.UserTypeError (a TypeError) naming
    it."""
    if isinstance(dtype, DataType):
        if dtype is DataType.Null:
            raise _C.UserError(f"{what}: DataType.Null is not a type here")
        return dtype.loom
    if isinstance(dtype, _C.DataType):
        return dtype
    try:
        t = torch_to_dtype(dtype)
    except NotSupportedError as e:
        raise _C.UserTypeError(f"{what}: {e}") from None
    if t is not None:
        return t.loom
    if isinstance(getattr(dtype, "loom", None), _C.DataType):  # a Val's dtype (tv.dtype)
        return dtype.loom
    raise _C.UserTypeError(f"{what}: expected a DataType or a torch dtype, got {dtype!r}")


def torch_to_dtype(torch_dtype):
    """The DataType of a torch dtype, None when it is not a torch dtype; NotSupportedError for a
    torch dtype Loom has no type for."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return None
    if not isinstance(torch_dtype, torch.dtype):
        return None
    table = {
        torch.float64: DataType.Double,
        torch.float32: DataType.Float,
        torch.float16: DataType.Half,
        torch.bfloat16: DataType.BFloat16,
        torch.int64: DataType.Int,
        torch.int32: DataType.Int32,
        torch.int16: DataType.Short,
        torch.int8: DataType.Char,
        torch.uint8: DataType.Byte,
        torch.uint16: DataType.UInt16,
        torch.uint32: DataType.UInt32,
        torch.uint64: DataType.UInt64,
        torch.bool: DataType.Bool,
        torch.complex64: DataType.ComplexFloat,
        torch.complex128: DataType.ComplexDouble,
        torch.float8_e4m3fn: DataType.Float8_e4m3fn,
        torch.float8_e5m2: DataType.Float8_e5m2,
    }
    if torch_dtype not in table:
        raise NotSupportedError(
            f"torch dtype {torch_dtype} is not supported by Loom (Loom has bool, int8, int16, "
            "int32, int64, uint8, uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float16, "
            "bfloat16, float32, float64, complex64, complex128)"
        )
    return table[torch_dtype]


class ParallelType(enum.Enum, metaclass=_unsupported_enum_meta("ParallelType")):
    """nvFuser's ParallelType names; ``.loom`` is Loom's."""

    mesh_x = "DIDx"
    mesh_y = "DIDy"
    mesh_z = "DIDz"
    grid_x = "BIDx"
    grid_y = "BIDy"
    grid_z = "BIDz"
    block_x = "TIDx"
    block_y = "TIDy"
    block_z = "TIDz"
    vectorize = "Vectorize"
    unroll = "Unroll"
    unswitch = "Unswitch"
    serial = "Serial"
    # The box of a TMA copy (nvFuser's Bulk, named tma in its Python enum; bulk is an alias).
    tma = "Bulk"
    bulk = "Bulk"

    @property
    def loom(self):
        return getattr(_C.ParallelType, self.value)

    def __repr__(self):
        return f"ParallelType.{self.name}"


class LoadStoreOpType(enum.Enum, metaclass=_unsupported_enum_meta("LoadStoreOpType")):
    """How cache_after / cache_before copy: set (a plain copy) or tma (a bulk copy between global
    and shared memory, whose box is the copy's tma-parallel axes)."""

    set = "Set"
    tma = "TmaCopy"

    @property
    def loom(self):
        return getattr(_C.LoadStoreOpType, self.value)

    def __repr__(self):
        return f"LoadStoreOpType.{self.name}"


class MemoryType(enum.Enum, metaclass=_unsupported_enum_meta("MemoryType")):
    local = "Local"
    shared = "Shared"
    global_ = "Global"

    @property
    def loom(self):
        return getattr(_C.MemoryType, self.value)


# `global` is a keyword: MemoryType.global_ and getattr(MemoryType, "global") both work.
MemoryType._member_map_["global"] = MemoryType.global_
