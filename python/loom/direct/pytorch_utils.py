# SPDX-License-Identifier: Apache-2.0
"""nvFuser's ``nvfuser_direct.pytorch_utils`` under Loom: torch dtypes and Python number types
as DataType. A torch dtype or number type Loom has no DataType for raises
loom.NotSupportedError naming it (never KeyError)."""

import functools

from ._types import DataType, torch_to_dtype

# Python number types, as nvFuser maps them.
_NUMBER_TYPES = {bool: "Bool", int: "Int", float: "Double", complex: "ComplexDouble"}


def torch_dtype_to_nvfuser_dtype(dtype):
    """The DataType of a torch dtype or of a Python number type (bool, int, float, complex)."""
    if isinstance(dtype, type) and dtype in _NUMBER_TYPES:
        return getattr(DataType, _NUMBER_TYPES[dtype])
    t = torch_to_dtype(dtype)
    if t is None:
        from .. import UserError

        raise UserError(
            f"torch_dtype_to_nvfuser_dtype: expected a torch dtype or a Python number type, "
            f"got {dtype!r}"
        )
    return t


def python_scalar_to_nvfuser_dtype(value):
    """The DataType of a Python number."""
    return torch_dtype_to_nvfuser_dtype(type(value))


def retry_on_oom_or_skip_test(func):
    """nvFuser's test decorator: on torch.OutOfMemoryError, frees torch's cached memory and
    tries once more, then skips the test."""

    @functools.wraps(func)
    def retried(*args, **kwargs):
        import torch

        try:
            return func(*args, **kwargs)
        except torch.OutOfMemoryError:
            pass
        import gc

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        try:
            return func(*args, **kwargs)
        except torch.OutOfMemoryError as e:
            import pytest

            pytest.skip(f"out of memory twice: {e}")

    return retried


__all__ = [
    "torch_dtype_to_nvfuser_dtype",
    "python_scalar_to_nvfuser_dtype",
    "retry_on_oom_or_skip_test",
]
