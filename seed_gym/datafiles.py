"""Reading the data files users point envs at (catalogues, corpora, question and game files).

Every problem is one :class:`~seed_gym.core.DataError` naming the file, the line where there is
one, and the fix the caller gives: a file that is not UTF-8 (the line of the first bad byte), not
JSON (the line and column where parsing stopped, which for a file cut short is its end), or not
the shape asked for (a list, an object, a JSON object on every line). Nothing here knows an env;
what a record must hold is the loader's to check, with :func:`require_fields`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from seed_gym.core import DataError

_KINDS = {list: "a JSON list", dict: "a JSON object"}


def _kind_of(value: Any) -> str:
    return {list: "a list", dict: "an object", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def decode(path: Path, raw: bytes, fix: str, line: int | None = None) -> str:
    """``raw`` as UTF-8 text; otherwise a DataError at the line of the first bad byte (``line``:
    the line ``raw`` starts on, when it is one line of a bigger file)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        at = (line or 1) + raw[:error.start].count(b"\n")
        if error.reason == "unexpected end of data":  # the bytes stop inside a character
            raise DataError(path, "cut short inside a character (not UTF-8 text)", fix, at) from None
        raise DataError(path, f"not UTF-8 text (byte 0x{raw[error.start]:02x})", fix, at) from None


def read_json(path: Path, expect: type, fix: str) -> Any:
    """The JSON value in ``path``, which must be of type ``expect`` (``list`` or ``dict``)."""
    text = decode(path, path.read_bytes(), fix)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        cut = " (the file ends there: it was cut short)" if error.pos >= len(text.rstrip()) else ""
        raise DataError(path, f"not valid JSON: {error.msg} (column {error.colno}){cut}", fix, error.lineno) from None
    except RecursionError:
        raise DataError(path, "not valid JSON: nested too deeply", fix) from None
    if not isinstance(value, expect):
        raise DataError(path, f"expected {_KINDS[expect]}, found {_kind_of(value)}", fix)
    return value


def read_jsonl(path: Path, fix: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSON-lines file, read line by line
    (a corpus may be many gigabytes); every line must be one UTF-8 JSON object."""
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, 1):
            text = decode(path, raw, fix, line_no)
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as error:
                torn = "" if raw.endswith(b"\n") else " (the last line is cut short)"
                raise DataError(path, f"not valid JSON: {error.msg} (column {error.colno}){torn}", fix,
                                line_no) from None
            except RecursionError:
                raise DataError(path, "not valid JSON: nested too deeply", fix, line_no) from None
            if not isinstance(row, dict):
                raise DataError(path, f"expected a JSON object on every line, found {_kind_of(row)}", fix, line_no)
            yield line_no, row


def require_fields(path: Path, record: Any, fields: Iterable[str], what: str, fix: str,
                   line: int | None = None) -> None:
    """``record`` must be an object holding every one of ``fields`` (``what`` names it in the error)."""
    if not isinstance(record, Mapping):
        raise DataError(path, f"{what} is {_kind_of(record)}, not an object", fix, line)
    missing = [name for name in fields if name not in record]
    if missing:
        raise DataError(path, f"{what} has no {', '.join(map(repr, missing))}", fix, line)
