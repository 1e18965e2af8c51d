# SPDX-License-Identifier: Apache-2.0
"""Loom, a fusion compiler for NVIDIA GPUs with a host backend, from Python.

``loom.direct`` speaks the dialect of nvFuser's direct bindings (docs/python.md). This module
holds what every part shares: the errors, the extension module and tensor exchange.

Errors from Loom's C++ arrive with the C++ message unchanged:

* ``loom.Error`` (a ``RuntimeError``): the base of all of them;
* ``loom.UserError`` (``Error`` and ``ValueError``): a bad argument, shape, dtype or schedule;
* ``loom.UserIndexError`` (``UserError`` and ``IndexError``): a dim or axis out of range;
* ``loom.UserTypeError`` (``UserError`` and ``TypeError``): an argument of the wrong kind, where
  nvFuser's bindings raise TypeError;
* ``loom.InternalError`` (``Error``): a bug in Loom;
* ``loom.UnavailableError`` (``Error``): a capability missing here (no GPU driver, no MPI);
* ``loom.NotSupportedError`` (``Error`` and ``NotImplementedError``): an nvFuser name or argument
  that Loom does not implement; the message names it.
* ``loom.ValidationError`` (``Error`` and ``AssertionError``): ``fd.validate`` found an output
  out of tolerance; the message names the output and its worst element.
* ``loom.UserAssertionError`` (``UserError`` and ``AssertionError``) and
  ``loom.UserNotImplementedError`` (``UserError`` and ``NotImplementedError``): misuses nvFuser
  reports with those types (a FusionDefinition run both ways; one that defines nothing).

LOOM_DUMP output goes to ``sys.stdout`` when each call returns (``loom._dumps``).
"""

from . import _C
from ._C import Error, InternalError, UnavailableError, UserError, UserIndexError, UserTypeError

__version__ = _C.__version__

from . import _dumps  # noqa: E402,F401 - dumps go to sys.stdout from here on


class NotSupportedError(Error, NotImplementedError):
    """An op, argument or option of nvFuser's bindings that Loom does not implement."""


class ValidationError(Error, AssertionError):
    """fd.validate: an output differs from the reference beyond the tolerance."""


class UserAssertionError(UserError, AssertionError):
    """A misuse nvFuser's bindings report with AssertionError (one FusionDefinition run both by
    execute() and by manual_execute())."""


class UserNotImplementedError(UserError, NotImplementedError):
    """nvFuser's NotImplementedError for running a FusionDefinition that defines no fusion."""


try:  # Outputs are torch tensors when torch is importable (docs/python.md).
    import torch as _torch
except ImportError:  # pragma: no cover - exercised only without torch
    _torch = None

if _torch is not None:
    _TORCH_FAST = _C._register_torch(_torch.Tensor)
else:
    _TORCH_FAST = False


def to_torch_list(outputs):
    """The extension's outputs as torch tensors: already so through torch's DLPack exchange API;
    an older torch converts each loom._C.Tensor with torch.from_dlpack (no copy either way)."""
    if _TORCH_FAST or _torch is None:
        return outputs
    return [None if t is None else _torch.from_dlpack(t) for t in outputs]


def from_dlpack(tensor):
    """A ``loom._C.Tensor`` viewing ``tensor`` (torch, numpy or any DLPack producer); no copy."""
    return _C.from_dlpack(tensor)


__all__ = [
    "Error",
    "UserError",
    "UserIndexError",
    "UserAssertionError",
    "UserNotImplementedError",
    "UserTypeError",
    "InternalError",
    "UnavailableError",
    "NotSupportedError",
    "ValidationError",
    "from_dlpack",
    "__version__",
]
