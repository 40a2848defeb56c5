"""Text from the tested process, written to files as valid UTF-8 and shown escaped.

File names and environment values are bytes on POSIX.  Python hands those that are not
UTF-8 over as *surrogateescape* strings (``b"flag\\xff.txt"`` is ``"flag\\udcff.txt"``), and
statesnap keeps them so: ``os.fsencode`` turns such a string back into the exact bytes, which
is how file staging and replays find the exact file.

Two rules follow, one per direction:

- **Files.** Every file statesnap writes is valid UTF-8: each writer encodes with
  :data:`FILE_ERRORS`.  For JSON text (the record, the summary, order and restore files) the
  escape it writes for a lone surrogate, ``\\udcff``, *is* JSON's own ``\\u`` escape, so a
  strict reader (``json.loads(line_bytes)``) accepts the line and gets the surrogateescape
  string back: lossless.
- **Display.** Names and values from the tested process may hold newlines, ANSI escape
  sequences, bidirectional overrides or bytes that are not text.  :func:`printable` escapes them
  before they reach a terminal, a Markdown block or the HTML report, so a test can neither
  forge lines nor send control sequences to the user's terminal.
"""

from __future__ import annotations

import functools
import re

#: The error handler of every text file statesnap writes: a lone surrogate (a byte that was
#: not UTF-8) becomes ``\\udcXX``, which in JSON text is the exact escape of that character.
FILE_ERRORS = "backslashreplace"

#: What :func:`printable` escapes: C0 controls, DEL and C1 controls, lone surrogates, Unicode
#: line and paragraph separators, and the bidirectional controls ("Trojan source").
_UNSAFE = "[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
#: :data:`_UNSAFE` less newlines and tabs: for text shown as a block of lines.
_UNSAFE_BLOCK = ("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e"
                 "\u2066-\u2069\ud800-\udfff]")


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    # Compiled on first need only: the surrogate range makes the compile cost ~10 M
    # instructions, and most sessions print nothing that is not printable.
    return re.compile(source)


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # surrogateescape: the byte it stands for
    return f"\\u{code:04x}"


def needs_escape(text: str) -> bool:
    """Whether :func:`printable` would change ``text``."""
    return not text.isprintable() and _pattern(_UNSAFE).search(text) is not None


def printable(text: str) -> str:
    """``text`` safe to print: control characters, surrogates and bidirectional controls
    escaped as Python writes them (``\\n``, ``\\x1b``, ``\\xff`` for a byte that was not
    UTF-8, ``\\u202e``); anything else unchanged.  A backslash is left as it is: the point is
    that nothing printed can act on the terminal, not that the text can be parsed back."""
    if text.isprintable():  # in C: most text, with nothing to escape
        return text
    return _pattern(_UNSAFE).sub(_escape, text)


def printable_block(text: str) -> str:
    """:func:`printable` for text whose newlines and tabs are its own (a replay log, an indented
    value in the HTML report): those are kept, anything else :func:`printable` escapes is
    escaped."""
    if text.isprintable():
        return text
    return _pattern(_UNSAFE_BLOCK).sub(_escape, text)


def file_bytes(text: str) -> bytes:
    """``text`` as UTF-8 for a file, every lone surrogate written as ``\\udcXX``."""
    return text.encode("utf-8", FILE_ERRORS)
