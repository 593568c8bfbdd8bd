"""Reading and writing one ``metadata_<k>.json`` losslessly.

Upstream's files are ``json.dumps(obj, indent=4, ensure_ascii=False)`` with CRLF line ends and no final newline;
80 of them are cp1252 rather than UTF-8 (``0x92``, ``0xb5``...), and a few were edited by hand. The reader
records the file's :class:`JsonStyle` (encoding, line end, indent, ASCII escapes, final newline) and keeps its
bytes; :func:`dump_metadata` gives back those very bytes while the content is unchanged, and otherwise renders
the content in the file's own style (in UTF-8 if the text no longer fits cp1252).

Every JSON text goes through :func:`exports.jsontext.load_json` (nesting limit, line/column of syntax errors);
repeated keys are refused rather than silently keeping the last.

A metadata file is read whole, so its size is capped (:data:`MAX_METADATA_BYTES`, 300 times upstream's largest,
28 KB), and so are its queries (:data:`MAX_QUERIES_PER_FILE`) and each text in it (:data:`MAX_FIELD_CHARS`): a
144 MB file of 10^6 queries, under the upload limit, once took an import past 10 GB of memory. Control
characters (NUL...) are refused with the line and field (:mod:`exports.control_chars`). UTF-8 with a byte-order
mark is read; UTF-16 is refused with a sentence naming it (it would have to be written back as UTF-16 to keep the
file byte-identical, and no upstream file is UTF-16).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from exports.control_chars import CONTROL, ESCAPED_CONTROL, describe_control, line_of
from exports.discoverybench.models import Metadata
from exports.errors import DiscoveryBenchFormatError, DiscoveryBenchProblem
from exports.jsontext import JsonTextError, RepeatedKey, load_json, refuse_repeated_keys

__all__ = [
    "DEFAULT_STYLE",
    "MAX_FIELD_CHARS",
    "MAX_METADATA_BYTES",
    "MAX_QUERIES_PER_FILE",
    "JsonStyle",
    "MetadataFile",
    "dump_metadata",
    "parse_metadata",
    "render_metadata",
]

METADATA_NAME = re.compile(r"metadata_(\d+)\.json")
#: Largest metadata file read (upstream's largest is 28 KB).
MAX_METADATA_BYTES = 8 * 2**20
#: Most queries in one metadata file (upstream's most is under 30).
MAX_QUERIES_PER_FILE = 10_000
#: Longest text (a question, a hypothesis, a description...) in characters.
MAX_FIELD_CHARS = 100_000
_MAX_PROBLEMS_SHOWN = 5


@dataclass(frozen=True)
class JsonStyle:
    """How a JSON file was laid out, so that it is written back the same way."""

    encoding: Literal["utf-8", "cp1252"] = "utf-8"
    bom: bool = False
    newline: Literal["\n", "\r\n"] = "\r\n"
    indent: int | None = 4
    ensure_ascii: bool = False
    final_newline: bool = False


#: DiscoveryBench's own layout, used for files that were not read from disk.
DEFAULT_STYLE = JsonStyle()


class MetadataFile(BaseModel):
    """One metadata file: its ``k`` (from ``metadata_<k>.json``), content and layout."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    k: int
    metadata: Metadata
    style: JsonStyle = DEFAULT_STYLE
    label: str = ""

    _source: bytes | None = PrivateAttr(default=None)
    _source_canonical: str | None = PrivateAttr(default=None)

    @property
    def file_name(self) -> str:
        return f"metadata_{self.k}.json"



def _problem(label: str, message: str, field: str | None = None) -> DiscoveryBenchFormatError:
    return DiscoveryBenchFormatError(DiscoveryBenchProblem(file=label, message=message, field=field))


def _utf16(content: bytes) -> str | None:
    """``"UTF-16"``/``"UTF-32"`` when the bytes are that (a byte-order mark, or ASCII text with zero bytes
    between its characters), else None."""
    if content.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if content.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    head = content[:64]
    if len(head) >= 4 and head.count(0) >= len(head) // 3:
        return "UTF-32" if head.count(0) >= len(head) * 2 // 3 else "UTF-16"
    return None


def _decode(content: bytes, label: str) -> tuple[str, JsonStyle]:
    wide = _utf16(content)
    if wide is not None:
        raise _problem(
            label, f"{label} is {wide} text; DiscoveryBench metadata is read as UTF-8 (or cp1252, as upstream "
            "ships some files). Save it as UTF-8 (with or without a byte-order mark) and import again."
        )
    bom = content.startswith(b"\xef\xbb\xbf")
    body = content[3:] if bom else content
    try:
        return body.decode("utf-8"), JsonStyle(encoding="utf-8", bom=bom)
    except UnicodeDecodeError as utf8_error:
        if bom:
            raise _problem(
                label, f"{label} starts with a UTF-8 byte-order mark but has an undecodable byte at offset "
                f"{utf8_error.start + 3}; save it as UTF-8."
            ) from utf8_error
        try:
            # Upstream ships cp1252 files (jazz-music_*, astronomy_*, fine-arts_*...).
            return body.decode("cp1252"), JsonStyle(encoding="cp1252")
        except UnicodeDecodeError as exc:
            raise _problem(
                label, f"{label} is neither UTF-8 nor cp1252 text (undecodable byte 0x{body[exc.start]:02x} at "
                f"offset {exc.start}); save it as UTF-8."
            ) from exc


def _detect_layout(text: str, style: JsonStyle) -> JsonStyle:
    newline: Literal["\n", "\r\n"] = "\r\n" if "\r\n" in text else "\n"
    final = text.endswith(("\n", "\r\n"))
    match = re.search(r"[\[{]\r?\n( +)\S", text)
    indent: int | None = len(match.group(1)) if match else None
    ensure_ascii = not any(ord(ch) > 127 for ch in text)
    return JsonStyle(
        encoding=style.encoding,
        bom=style.bom,
        newline=newline,
        indent=indent,
        ensure_ascii=ensure_ascii and bool(re.search(r"\\u[0-9a-fA-F]{4}", text)),
        final_newline=final,
    )


def _json_path(loc: tuple[int | str, ...], data: Any, *, missing: bool) -> str:
    """A JSON path (``queries[0][1].question``) from a pydantic location, skipping union tags."""
    path = ""
    node = data
    for index, part in enumerate(loc):
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            path += f"[{part}]"
            node = node[part]
        elif isinstance(part, str) and isinstance(node, Mapping) and part in node:
            path += f".{part}" if path else part
            node = node[part]
        elif missing and isinstance(part, str) and isinstance(node, Mapping) and index == len(loc) - 1:
            path += f".{part}" if path else part  # the missing key
        # else: a union tag ("nested", "object"...) or a type tag, not a place in the data
    return path or "(top level)"


_TYPE_WORDS = {
    "bool_type": "true or false",
    "int_type": "a whole number",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _describe(exc: ValidationError, data: Any, label: str) -> DiscoveryBenchFormatError:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for error in exc.errors():
        grouped.setdefault(_json_path(tuple(error["loc"]), data, missing=error["type"] == "missing"), []).append(dict(error))
    problems = []
    for path, errors in grouped.items():
        kinds = [str(e["type"]) for e in errors]
        if "missing" in kinds:
            what = (
                "is missing: every query needs its question text"
                if path.endswith(".question")
                else "is missing"
            )
        elif "too_short" in kinds:
            what = "must not be empty"
        elif all(kind in _TYPE_WORDS for kind in kinds):
            wanted = " or ".join(dict.fromkeys(_TYPE_WORDS[kind] for kind in kinds))
            if re.fullmatch(r"datasets\[\d+\]\.columns", path):
                wanted = 'an object with a "raw" list of columns, or a list of columns'
            elif path == "queries":
                wanted = "a list of queries, or a list of lists of queries"
            got = json.dumps(errors[0].get("input"), ensure_ascii=False, default=str)
            got = got if len(got) <= 60 else got[:57] + "..."
            what = f"must be {wanted}, not {got}"
        else:
            what = f": {errors[0]['msg']}"
        problems.append(
            DiscoveryBenchProblem(
                file=label,
                field=path,
                message=f"{label}: {path} {what}".replace(" :", ":") + ".",
            )
        )
    return DiscoveryBenchFormatError(problems[: _MAX_PROBLEMS_SHOWN * 4])


def _strings(data: Any) -> list[tuple[str, str]]:
    """Every key and string value of a parsed JSON document with its JSON path, in document order."""
    found: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            found.append((path or "(top level)", node))
        elif isinstance(node, dict):
            children = []
            for key, value in node.items():
                child = f"{path}.{key}" if path else str(key)
                if CONTROL.search(str(key)):
                    found.append((child, str(key)))
                children.append((child, value))
            stack.extend(reversed(children))
        elif isinstance(node, list):
            stack.extend(reversed([(f"{path}[{i}]", value) for i, value in enumerate(node)]))
    return found


def _check_texts(data: Any, text: str, label: str) -> None:
    """Refuse control characters and over-long texts, naming the line and the JSON path."""
    problems = []
    escapes = iter(ESCAPED_CONTROL.finditer(text))
    for path, value in _strings(data):
        if len(value) > MAX_FIELD_CHARS:
            problems.append(DiscoveryBenchProblem(
                file=label, field=path, message=f"{label}: {path} is {len(value):,} characters long; a text in a "
                f"metadata file may be at most {MAX_FIELD_CHARS:,}."))
        bad = CONTROL.findall(value)
        if bad:
            # the escapes are met in the text in the order the strings are walked
            match = next(escapes, None)
            for _ in bad[1:]:
                next(escapes, None)
            line = f" (line {line_of(text, match.start())})" if match else ""
            problems.append(DiscoveryBenchProblem(
                file=label, field=path, message=f"{label}{line}: {path} holds {describe_control(bad[0])}; control "
                "characters have no place in the benchmark's text (and PostgreSQL cannot store NUL): remove it."))
        if len(problems) >= _MAX_PROBLEMS_SHOWN:
            break
    if problems:
        raise DiscoveryBenchFormatError(problems)


def _check_queries(metadata: Metadata, label: str) -> None:
    problems = []
    seen: dict[int, str] = {}
    queries = metadata.query_list()
    if len(queries) > MAX_QUERIES_PER_FILE:
        raise _problem(label, f"{label} holds {len(queries):,} queries; a metadata file may hold at most "
                       f"{MAX_QUERIES_PER_FILE:,} (upstream's hold under 30). Split it into several metadata files.",
                       field="queries")
    if not queries:
        problems.append(
            DiscoveryBenchProblem(
                file=label, field="queries", message=f"{label}: queries is empty; a metadata file needs at least one query."
            )
        )
    for path, query in queries:
        if not query.question.strip():
            problems.append(
                DiscoveryBenchProblem(
                    file=label,
                    field=f"{path}.question",
                    message=f"{label}: {path}.question (qid {query.qid}) is empty; every query needs its "
                    "question text.",
                )
            )
        if query.qid in seen:
            problems.append(
                DiscoveryBenchProblem(
                    file=label,
                    field=f"{path}.qid",
                    message=f"{label}: {path}.qid repeats qid {query.qid} of {seen[query.qid]}; the answer keys "
                    "find a query by its qid, so each must be unique in its file.",
                )
            )
        seen.setdefault(query.qid, path)
    if problems:
        raise DiscoveryBenchFormatError(problems)


def parse_metadata(content: bytes, *, k: int, label: str = "metadata.json") -> MetadataFile:
    """Validate the bytes of a ``metadata_<k>.json``.

    Raises:
        DiscoveryBenchFormatError: neither UTF-8 nor cp1252; not JSON (line and column); too deep; a
            repeated key; not DiscoveryBench's layout (each problem with its JSON path); a query with no or an
            empty question; a qid used twice in the file.
    """
    if len(content) > MAX_METADATA_BYTES:
        raise _problem(label, f"{label} is {len(content):,} bytes; a metadata file may be at most "
                       f"{MAX_METADATA_BYTES:,} bytes (upstream's largest is 28 KB). Split its queries into several "
                       "metadata files.")
    text, style = _decode(content, label)
    try:
        data = load_json(text, label=label, object_pairs_hook=refuse_repeated_keys)
    except RepeatedKey as exc:
        raise _problem(
            label, f"{label} repeats the key {exc.key!r} in one object; a JSON reader would silently keep only "
            "the last one, so remove the other.", field=exc.key
        ) from exc
    except JsonTextError as exc:
        if exc.reason == "is empty":
            raise _problem(label, f"{label} is empty; it should hold a DiscoveryBench metadata object.") from exc
        raise _problem(label, str(exc)) from exc
    except ValueError as exc:  # an integer beyond Python's digit limit
        raise _problem(label, f"{label} cannot be read: {exc}.") from exc
    if not isinstance(data, dict):
        raise _problem(
            label, f"{label} must hold a JSON object with datasets and queries, but it holds a "
            f"{type(data).__name__}."
        )
    _check_texts(data, text, label)
    try:
        metadata = Metadata.model_validate(data)
    except ValidationError as exc:
        raise _describe(exc, data, label) from exc
    _check_queries(metadata, label)
    result = MetadataFile(k=k, metadata=metadata, style=_detect_layout(text, style), label=label)
    result._source = content
    result._source_canonical = json.dumps(data, ensure_ascii=False)
    return result


def render_metadata(metadata: Metadata, style: JsonStyle = DEFAULT_STYLE) -> bytes:
    """The content laid out in ``style`` (falls back to UTF-8 when the text does not fit cp1252)."""
    text = json.dumps(metadata.model_dump(mode="python"), indent=style.indent, ensure_ascii=style.ensure_ascii)
    if style.newline != "\n":
        text = text.replace("\n", style.newline)  # newlines inside strings are escaped, so only layout changes
    if style.final_newline:
        text += style.newline
    if style.encoding == "cp1252":
        try:
            return text.encode("cp1252")
        except UnicodeEncodeError:
            pass
    return (b"\xef\xbb\xbf" if style.bom else b"") + text.encode("utf-8")


def dump_metadata(file: MetadataFile) -> bytes:
    """The file's bytes: the original ones while the content is unchanged, else :func:`render_metadata`."""
    if file._source is not None and file._source_canonical is not None:
        current = json.dumps(file.metadata.model_dump(mode="python"), ensure_ascii=False)
        if current == file._source_canonical:
            return file._source
    return render_metadata(file.metadata, file.style)
