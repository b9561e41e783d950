"""Messages on stderr, as every vcompare line there is written (``vcompare: ...``)."""

from __future__ import annotations

import typer


def err(message: str) -> None:
    """Print ``vcompare: message`` on stderr."""
    typer.echo(f"vcompare: {message}", err=True)
