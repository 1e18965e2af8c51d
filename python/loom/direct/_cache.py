# SPDX-License-Identifier: Apache-2.0
"""Compiled fusions under nvFuser's names: FusionExecutorCache (one fusion, compiled per input
layout, device and set of options) and LRUCache (fusions by their structure, least recently
used evicted), with nvFuser's LruFusionCache decorator over it.

A fusion's structure is its canonical text form (``fusion.to_text()``, docs/text-format.md):
the printer numbers nodes in print order and writes constants exactly, so two fusions built by
the same definition have one text, and one text is one fusion.
"""

import collections
import functools
import time

from .. import _C, to_torch_list
from .._dumps import dump_output
from . import _profiler
from ._unsupported import check_attribute


class FusionExecutorCache:
    """One fusion, scheduled and compiled on the first run of each input layout (and device,
    and set of _enable/_disable options); later runs of a layout only launch."""

    def __init__(self, fusion, fusion_id=0, auto_schedule=True):
        if not auto_schedule:
            from .. import NotSupportedError

            raise NotSupportedError(
                "FusionExecutorCache: auto_schedule=False is not supported by Loom; "
                "fd.manual_execute runs a hand-scheduled fusion"
            )
        self._fusion = fusion
        self._executor = _C.FusionExecutor(fusion)
        self.fusion_id = fusion_id
        # The property below; a FusionDefinition's fusion carries its add_output calls.
        self.returns = getattr(fusion, "returns", None)

    @property
    def returns(self):
        """What execute() returns, in nvFuser's order: ("output", name) for a fusion output,
        ("input", name) for an input returned as itself, one entry per fd.add_output(x) without
        alias_input (FusionDefinition fills this in). None: every output but the in-place ones
        (add_output(alias_input=)), whose values nvFuser returns only in their inputs."""
        return self._returns

    @returns.setter
    def returns(self, value):
        self._returns = value
        self._plan = None  # made at the next execute (return_plan): names are looked up once

    def fusion(self):
        return self._fusion

    def execute(self, inputs, device=None, *, _enable_options=(), _disable_options=(),
                _capture=None, _profile=False):
        """Runs the fusion; the outputs are torch tensors on the inputs' device (docs/python.md).
        `_capture`: a dump_output to collect the call's dumps in (FusionDefinition's
        capture_debug_output). Inside a PythonProfiler's block (or with `_profile`), the run is
        profiled: the profiler records it, and last_profile() reads it."""
        profiler = _profiler.current()
        profile = _profile or profiler is not None
        dumps = _capture if _capture is not None else dump_output()
        start = time.perf_counter() if profile else 0.0
        with dumps:
            outs = self._executor.run(
                inputs, device, list(_enable_options), list(_disable_options), profile
            )
        if profile:
            self._profile = _profiler.make_profile(
                self.fusion_id, self._executor.last_profile(), inputs,
                time.perf_counter() - start)
            if profiler is not None:
                profiler.profiles.append(self._profile)
        outs = to_torch_list(outs)
        # The plan is remade when outputs were added since (the key changes).
        key = (len(outs), -1 if self._returns is None else len(self._returns))
        if self._plan is None or self._plan[0] != key:
            self._plan = (key, return_plan(self._fusion, self._returns, len(outs)))
        plan = self._plan[1]
        if plan is _ALL_OUTPUTS:
            return outs
        return [outs[k] if from_output else inputs[k] for from_output, k in plan]

    def get_output_shardings(self):
        """nvFuser's output shardings: a multidevice.Sharding per output (axis_sharded_on), or
        an empty list for a fusion without device meshes."""
        from .multidevice import output_shardings

        return output_shardings(self._fusion)

    def last_cuda_code(self, intrinsic_code=False):
        return self._executor.last_cuda_code(intrinsic_code)

    def profile(self):
        """The FusionProfile of the last profiled execute (in a PythonProfiler's block)."""
        if self.__dict__.get("_profile") is None:
            from .. import UserError

            raise UserError("profile(): no execute of this fusion was profiled (run it inside "
                            "`with PythonProfiler():` or with profile=True)")
        return self._profile

    def last_schedulers(self):
        return self._executor.last_schedulers()

    def host_program(self):
        return self._executor.host_program()

    def validate_with_auto_inferred_outputs(self, fusion_outputs, args):
        """Compares `fusion_outputs` with the reference evaluator's outputs for `args`."""
        from . import _validate

        refs = _validate.reference_outputs(self._fusion, args)
        _validate.compare(self._fusion, fusion_outputs, refs, args, _validate.REFERENCE)

    def get_val_tolerances(self, args):
        """(atol, rtol) per output for `args`."""
        from . import _validate

        return _validate.tolerances(self._fusion, args)

    def __getattr__(self, name):
        check_attribute("FusionExecutorCache", "FusionExecutorCache", name)

    @property
    def hits(self):
        return self._executor.hits

    @property
    def misses(self):
        return self._executor.misses

    @property
    def num_runtimes(self):
        return self._executor.num_runtimes

    @property
    def plan_hits(self):
        """Runs served by the plan cache (a stored plan: nothing was segmented, scheduled or
        compiled for them; the last_* methods build their runtime when asked)."""
        return self._executor.plan_hits


_ALL_OUTPUTS = "all outputs"  # a return plan: every output, in order (the common case)


def return_plan(fusion, returns, n_outputs):
    """Where each tensor execute() returns comes from, as (from_output, position) pairs (or
    _ALL_OUTPUTS): the `returns` names (see FusionExecutorCache.returns), a repeated output or
    input given each time it was added; with no `returns`, the outputs but the in-place ones.
    Made once per cache, so a run only indexes."""
    out_at = {v.name: k for k, v in enumerate(fusion.outputs())}
    if returns is None:
        aliased = {o.name for o, _ in fusion.aliases()}
        plan = [(True, k) for name, k in out_at.items() if name not in aliased]
    else:
        in_at = {v.name: k for k, v in enumerate(fusion.inputs())}
        plan = [(True, out_at[name]) if kind == "output" else (False, in_at[name])
                for kind, name in returns]
    if plan == [(True, k) for k in range(n_outputs)]:
        return _ALL_OUTPUTS
    return plan


def returned_outputs(fusion, returns, outputs, inputs):
    """The tensors execute() returns for a run's `outputs` (one per fusion output), by
    return_plan."""
    plan = return_plan(fusion, returns, len(outputs))
    if plan is _ALL_OUTPUTS:
        return list(outputs)
    return [outputs[k] if from_output else inputs[k] for from_output, k in plan]


class LRUCache:
    """Compiled fusions by structure: cache_compile(fusion) gives the FusionExecutorCache of a
    structurally equal fusion compiled before, or a new one; past `max_fusions` the least
    recently used goes."""

    def __init__(self, max_fusions=16384):
        max_fusions = int(max_fusions)
        if max_fusions < 1:
            raise _C.UserError(f"LRUCache: max_fusions must be at least 1, got {max_fusions}")
        self._max = max_fusions
        # (text form, returns) -> [FusionExecutorCache, visits]
        self._items = collections.OrderedDict()
        self._lookups = 0
        self._hits = 0
        self._compiled = 0

    def cache_compile(self, fusion):
        fusion = getattr(fusion, "fusion", fusion)  # a FusionDefinition works too
        if not isinstance(fusion, _C.Fusion):
            raise _C.UserError(
                f"LRUCache.cache_compile: expected a Fusion, got {type(fusion).__name__}"
            )
        # One structure returning other tensors (an output twice, an input) is another entry.
        returns = getattr(fusion, "returns", None)
        key = (fusion.to_text(), None if returns is None else tuple(map(tuple, returns)))
        self._lookups += 1
        item = self._items.get(key)
        if item is not None:
            self._hits += 1
            item[1] += 1
            self._items.move_to_end(key)
            return item[0]
        if len(self._items) >= self._max:
            self._items.popitem(last=False)
        # The cache owns a copy: the caller's fusion stays editable.
        fec = FusionExecutorCache(fusion.clone(), fusion_id=self._compiled)
        self._compiled += 1
        self._items[key] = [fec, 0]
        return fec

    def num_fusions(self):
        return len(self._items)

    def stats(self):
        lines = [f"Max Fusions Allowed: {self._max}"]
        if not self._items:
            return "\n".join(lines + ["The fusion cache is empty."]) + "\n"
        lines.append(f"Total Fusions in Cache: {len(self._items)}")
        lines.append(f"Total Unique Fusions Compiled: {self._compiled}")
        lines.append("Cache Hits by LRU ordering:")
        for i, (_, visits) in enumerate(reversed(self._items.values())):
            lines.append(f"\t{i} -> {visits} hits")
        rate = 100.0 * self._hits / self._lookups if self._lookups else 0.0
        lines += [f"Cache Lookups: {self._lookups}", f"Cache Hits: {self._hits}",
                  f"Hit Rate: {rate:g}%"]
        return "\n".join(lines) + "\n"


class LruFusionCache:
    """A decorator for a function that returns a FusionDefinition: the definition it returns
    executes through one LRUCache, so equal fusions compile once."""

    def __init__(self, max_fusions=16384):
        self.cache = LRUCache(max_fusions)

    def __call__(self, create_fusion_definition):
        @functools.wraps(create_fusion_definition)
        def wrapper(*args, **kwargs):
            fd = create_fusion_definition(*args, **kwargs)
            if not hasattr(fd, "fec"):
                fd.fec = self.cache.cache_compile(fd.fusion)
            return fd

        wrapper.stats = self.cache.stats
        wrapper.num_fusions = self.cache.num_fusions
        return wrapper
