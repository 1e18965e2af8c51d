# SPDX-License-Identifier: Apache-2.0
"""Loom's dumps (``LOOM_DUMP``, ``execute(_enable_options=...)``) in Python.

The C++ dump sink is a buffer (python/csrc/dumps.cpp); every call into Loom that can dump runs
inside ``dump_output()``, which hands what the call wrote to ``sys.stdout`` when it returns (so
``contextlib.redirect_stdout``, pytest's capture and Jupyter see it), or keeps it as ``.text``
when asked to capture (``execute(capture_debug_output=True)``).
"""

import atexit
import sys

from . import _C


def _write(text):
    if text:
        sys.stdout.write(text)


class dump_output:
    """Around a call into Loom: its dumps go to sys.stdout, or into ``.text`` with capture."""

    def __init__(self, capture=False):
        self.capture = capture
        self.text = None

    def __enter__(self):
        # Dumps of an earlier call that nothing drained (a direct loom._C call) are its own.
        _write(_C._take_dump_output())
        return self

    def __exit__(self, exc_type, exc, tb):
        text = _C._take_dump_output()
        if self.capture:
            self.text = text
        else:
            _write(text)
        return False


atexit.register(lambda: _write(_C._take_dump_output()))
