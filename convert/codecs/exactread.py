"""Reading an exact byte range of an open file, for the dump readers (:mod:`convert.codecs.dumpfile`,
:mod:`convert.codecs.nano`).

``os.pread`` may return fewer bytes than asked (a file truncated while it is read, a signal): the
range is read until it is complete or the file ends, and a file that ends sooner is a
:class:`~convert.errors.DumpFormatError` naming the byte where it ends.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import DumpFormatError


def pread_exact(path: Path, fd: int, offset: int, count: int, *, label: str = "") -> bytes:
    """Exactly ``count`` bytes at ``offset`` (``count`` checked against the file's size by the
    caller); a file that ends sooner (truncated while it is read) is a DumpFormatError whose
    message starts with ``label`` (``"nano dump: "``, or nothing)."""
    data = os.pread(fd, count, offset)
    while len(data) < count:
        more = os.pread(fd, count - len(data), offset + len(data))
        if not more:
            end = offset + len(data)
            problem = f"{label}file ends at byte {end}, within the {count} bytes at byte {offset} (truncated while read?)"
            raise DumpFormatError(path, problem, offset=end)
        data += more
    return data
