"""Text cells safe in every CSV and text table vcompare and vconvert write: one policy, one place.

Cells that come from the inputs (operator names and types, data types, file names in reasons,
``mapping.csv`` real names) may hold anything a file name or a JSON string can hold. Two
dangers, two rules, applied in this order by :func:`neutralise_text` (and :func:`neutralise`):

1. **Formulas.** A cell is *formula-like* when it starts with ``= + - @ %`` (or a full-width
   ``＝ ＋ － ＠``), or with a tab or CR, or when its first character after any leading blanks
   is one of those -- blanks being every Unicode space (``str.isspace``: space, tab, CR, LF,
   VT, FF, NBSP, ideographic space ...) and the invisible BOM / zero-width characters, which
   a spreadsheet (or its "trim spaces" import option) may drop before it sees the ``=``. A
   formula-like cell is written with a leading ``'``: every spreadsheet then shows it as text.
   :func:`neutralise` exempts text that reads as a number the report computed (``-0.5``,
   ``-inf``); :func:`neutralise_text`, for text from the inputs, does not (an op named ``+1`` is
   written ``'+1``). A cell that already starts with ``'`` is left as it is, so applying the
   policy twice changes nothing.
2. **Line structure.** Every character that ends a line for some reader -- the line breaks of
   ``str.splitlines``: CR, LF, VT, FF, the file/group/record separators ``\\x1c-\\x1e``, NEL
   and the Unicode line and paragraph separators -- is replaced by a visible backslash escape:
   ``\\r``, ``\\n``, else ``\\xNN`` / ``\\u2028``. One record is then exactly one line in
   every file: Python's ``csv`` module, ``pandas.read_csv``, spreadsheets, ``grep``, ``wc -l``
   and ``splitlines`` all see the rows that were written, whatever the writer's line terminator
   (Python's ``csv.writer`` with ``lineterminator="\\n"`` leaves a bare CR unquoted, and every
   reader splits the row there). The same cells go into the whitespace-aligned txt tables,
   which cannot quote at all. Other control characters (TAB, ``\\x01`` ...) end no line and are
   written as they are (a leading TAB is guarded by rule 1).

Finally a cell is made encodable as UTF-8 (:func:`encodable`: unpaired surrogates, from file
names that are not valid UTF-8, become ``\\xff`` escapes).

Edge-case policy: the escapes are for the reader's eyes and are not undone; a backslash that is
already in a name is written as it is, so ``a\\rb`` in a report may stand for either. The exact
text stays in the JSON result (``--json``) and the parquet table, which need neither rule. The
``'`` guard is undone by :func:`unguard` when vcompare reads its own files back (a saved CSV
result, vconvert's ``mapping.csv``); a name that really started with ``'=`` loses that quote.
Commas and double quotes are left to the CSV writer's quoting. The files are comma-separated:
a spreadsheet told to split on tabs, semicolons or spaces as well cuts a name that holds one
inside (``a;=1``) -- import them as comma-separated.
"""

from __future__ import annotations

import re

#: First characters that make a spreadsheet read a cell as a formula (or strip them first).
DANGEROUS_START = ("=", "+", "-", "@", "%", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")

#: Characters a spreadsheet may skip before it decides that a cell is a formula: every
#: ``str.isspace`` character, then the invisible ones (Mongolian vowel separator, zero-width
#: space / non-joiner / joiner, word joiner, BOM).
BLANKS = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
          "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
          "\u180e\u200b\u200c\u200d\u2060\ufeff")

_FLOAT_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(nan|inf|NaN|Infinity)$")
#: What ``str.splitlines`` breaks a line at.
_LINE_BREAK_RE = re.compile("[\n\x0b\x0c\r\x1c\x1d\x1e\x85\u2028\u2029]")
_NAMED_ESCAPES = {"\r": "\\r", "\n": "\\n"}


def encodable(cell: str) -> str:
    """``cell`` made encodable as UTF-8: unpaired surrogates become backslash escapes.

    File names that are not valid UTF-8 reach Python as surrogate escapes (``\\udcff`` for the
    byte 0xFF) and end up in reasons; written as they are, they would abort the report. They are
    shown as ``\\xff`` (the byte) or ``\\ud800`` (any other lone surrogate).
    """
    try:
        cell.encode("utf-8")
        return cell
    except UnicodeEncodeError:
        pass
    out = []
    for ch in cell:
        if "\ud800" <= ch <= "\udfff":
            code = ord(ch)
            out.append(f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_line_breaks(cell: str) -> str:
    """Every line break of ``cell`` (what ``str.splitlines`` splits at) as a backslash escape
    (``\\r``, ``\\n``, ``\\xNN``, ``\\u2028``); other text unchanged (rule 2 of the module doc)."""
    return _LINE_BREAK_RE.sub(_escape, cell)


def formula_like(cell: str) -> bool:
    """Whether a spreadsheet could take ``cell`` for a formula (rule 1 of the module doc)."""
    return cell.startswith(DANGEROUS_START) or cell.lstrip(BLANKS).startswith(DANGEROUS_START)


def _finish(cell: str) -> str:
    """Rule 2 and the UTF-8 guard; printable text (the common case) passes untouched."""
    if cell.isprintable():
        return cell
    return encodable(escape_line_breaks(cell))


def neutralise_text(cell: str) -> str:
    """A text cell from the inputs, safe for a CSV file, a text table and a spreadsheet.

    Formula-like text gets a leading ``'`` (numbers included: an op named ``-1`` is not a
    number the report computed), then line breaks become escapes (module doc).
    """
    if cell and formula_like(cell):
        cell = "'" + cell
    return _finish(cell)


def neutralise(cell: str) -> str:
    """Like :func:`neutralise_text`, for any cell of a report: text that reads as a number
    (``-0.500000``, ``-inf``, ``+1e-3``) is left alone, so computed values stay numbers."""
    if cell and formula_like(cell) and not _FLOAT_RE.match(cell):
        cell = "'" + cell
    return _finish(cell)


def unguard(cell: str) -> str:
    """Undo the ``'`` of rule 1 when reading a file vcompare or vconvert wrote (``'=x`` -> ``=x``);
    any other text is returned as it is."""
    if cell.startswith("'") and formula_like(cell[1:]):
        return cell[1:]
    return cell


__all__ = ["BLANKS", "DANGEROUS_START", "encodable", "escape_line_breaks", "formula_like", "neutralise",
           "neutralise_text", "unguard"]
