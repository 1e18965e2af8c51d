# SPDX-License-Identifier: Apache-2.0
"""nvFuser's ``nvfuser_direct.nvfuser_direct_version``: the Version that version() returns."""

import re

_PART = re.compile(r"(\d+)")


class Version(str):
    """A version string ("major.minor.patch", maybe with a suffix) that compares by its numbers
    with another Version or a plain string: version() > "0.0.0", version() >= Version("0.1")."""

    def _key(self):
        head = str.split(self, "+")[0]
        nums = [int(m.group(1)) for m in (_PART.match(p) for p in head.split(".")) if m]
        while nums and nums[-1] == 0:
            nums.pop()
        return tuple(nums)

    @staticmethod
    def _other(other):
        if isinstance(other, Version):
            return other._key()
        if isinstance(other, str):
            return Version(other)._key()
        return None

    def __eq__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self._key() == k

    def __ne__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self._key() != k

    def __lt__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self._key() < k

    def __le__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self._key() <= k

    def __gt__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self._key() > k

    def __ge__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self._key() >= k

    def __hash__(self):
        return hash(self._key())


__all__ = ["Version"]
