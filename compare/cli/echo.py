"""Messages on stderr, as every vcompare line there is written (``vcompare: ...``).

Names in messages come from the inputs (file names, rule JSON, dump headers): a control
character in them could move the cursor, recolour or clear the terminal, or fake a line of
output. :func:`err` writes every control character except the line feed as a visible escape
(``\\r``, ``\\x1b``; :func:`visible`), so a message shows what the input holds and does nothing
else.
"""

from __future__ import annotations

import re

import typer

#: C0 controls but the line feed, DEL, and the C1 controls (ESC sequences' 8-bit forms).
_CONTROL_RE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\r": "\\r", "\t": "\\t"}


def visible(text: str) -> str:
    """``text`` with every control character but the line feed written as an escape."""
    if _CONTROL_RE.search(text) is None:
        return text
    return _CONTROL_RE.sub(lambda m: _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}"
                                                 if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"), text)


def err(message: str) -> None:
    """Print ``vcompare: message`` on stderr, control characters made visible (module doc)."""
    typer.echo(f"vcompare: {visible(message)}", err=True)
