"""Streaming writers for batch jobs: JSONL, CSV, Parquet and TFRecord of ``PredictionLog``.

Writers take one chunk at a time (pass-through columns plus model outputs) and write to a
temporary sibling of the target, renamed into place by ``close``: a reader never sees half a
file. JSONL and Parquet keep each output's per-row shape (``class_ids`` stays ``[1]``, as TF
Serving's REST API answers); CSV has one cell per value: ``probabilities_0``,
``probabilities_1``, ... or just ``class_ids`` when a row holds one value; a per-class output
is named by class (``probabilities_Adelie``) when the signature answers the class names.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import numpy.typing as npt

from tfship._files import AtomicFile
from tfship._wire import CLASSIFY_METHOD, REGRESS_METHOD, ours, protos
from tfship.errors import InputError

if TYPE_CHECKING:
    from tfship.inspect import SignatureInfo

Array = npt.NDArray[Any]
WRITE_FORMATS = ("jsonl", "csv", "parquet", "tfrecord")


# -- what a row of output holds ------------------------------------------------------------------


@dataclass(frozen=True)
class OutputView:
    """The columns a batch job writes per row, from the signature outputs ``keys`` it fetches.

    ``kind`` is ``"raw"`` (the outputs as the signature returns them), ``"scores"`` (a classify
    signature's ``classes`` and ``scores``: every row holds the whole vocabulary, so the row's
    answer is the class of the highest score), ``"class_ids"`` (a ``tf.estimator`` head's
    predict outputs: ``classes``, ``class_ids``, ``probabilities``), ``"value"`` (a
    regression's one value per row) or ``"by_class"`` (CSV: raw outputs, a per-class one
    spread over columns named by class; see :func:`by_class`). Classifiers write ``class``
    and ``probability``, regressions ``prediction``, whichever signature answers.

    Example:
        >>> view = OutputView(("classes", "scores"), "scores")
        >>> view.columns({"classes": np.array([[b"a", b"b"]], dtype=object),
        ...               "scores": np.array([[0.2, 0.8]])})
        {'class': array([b'b'], dtype=object), 'probability': array([0.8])}
    """

    keys: tuple[str, ...]
    kind: str = "raw"
    #: ``"by_class"`` (CSV): the outputs written, the one whose rows name the classes (fetched,
    #: and written only when asked for), and those written as one column per class.
    written: tuple[str, ...] = ()
    vocabulary: str = ""
    per_class: tuple[str, ...] = ()

    def columns(self, outputs: Mapping[str, Array]) -> dict[str, Array]:
        """The written columns of one batch of ``outputs`` (a dict of the fetched ``keys``)."""
        if self.kind == "raw":
            return dict(outputs)
        if self.kind == "by_class":
            return self._by_class(outputs)
        if self.kind == "value":
            (key,) = self.keys
            return {"prediction": outputs[key].reshape(-1)}
        if self.kind == "scores":
            scores = outputs["scores"]
            best = scores.argmax(axis=1)
            rows = np.arange(scores.shape[0])
            return {"class": outputs["classes"][rows, best], "probability": scores[rows, best]}
        probabilities = outputs["probabilities"]
        ids = outputs["class_ids"].reshape(-1)
        rows = np.arange(probabilities.shape[0])
        return {"class": outputs["classes"].reshape(-1), "probability": probabilities[rows, ids]}

    def _by_class(self, outputs: Mapping[str, Array]) -> dict[str, Array]:
        classes = outputs[self.vocabulary]
        names = [_label(v) for v in classes[0]] if len(classes) else None
        written: dict[str, Array] = {}
        for key in self.written:
            if key in self.per_class and names is not None:
                written.update((f"{key}_{name}", outputs[key][:, i]) for i, name in enumerate(names))
            else:
                written[key] = outputs[key]
        return written


def by_class(sig: SignatureInfo, keys: tuple[str, ...]) -> OutputView:
    """The outputs ``keys`` for CSV, a float output with one value per class spread over
    columns named by class (``probabilities_Adelie``) when the signature also answers the class
    names of every row (a ``tf.estimator`` head's ``all_classes``, a classify signature's
    ``classes``); by index (``probabilities_0``) otherwise, as the CSV writer names them.
    """
    found = [k for k in ("all_classes", "classes") if _width(sig, k, "string")]
    if not found:
        return OutputView(keys)
    vocabulary = found[0]
    width = _width(sig, vocabulary, "string")
    per_class = tuple(k for k in keys if _width(sig, k, "float") == width)
    if not per_class:
        return OutputView(keys)
    fetched = keys if vocabulary in keys else (*keys, vocabulary)
    return OutputView(fetched, "by_class", keys, vocabulary, per_class)


def _width(sig: SignatureInfo, key: str, dtype: str) -> int | None:
    """The known width of output ``key`` of shape [batch, width] and of ``dtype``, else None."""
    info = sig.outputs.get(key)
    if info is None or info.encoding != "dense" or info.shape is None or len(info.shape) != 2:
        return None
    if not info.dtype.startswith(dtype):
        return None
    width: int | None = info.shape[1]
    return width if width is not None and width > 1 else None


def output_view(sig: SignatureInfo, outputs: Sequence[str] | None, fmt: str) -> OutputView:
    """What a batch job writes for ``sig``: the ``outputs`` asked for, else the row's answer.

    Without ``outputs``, a classifier's rows get their predicted class and its probability and
    a regression's its value (no output that is the same on every row, such as a classify
    signature's ``classes`` or ``all_classes``); a signature of another shape gets all its
    outputs, and so does a ``tfrecord`` of ``PredictionLog`` s, which logs what TF Serving answers.
    """
    if outputs is not None or fmt == "tfrecord":
        keys = tuple(outputs) if outputs is not None else tuple(sorted(sig.outputs))
        return by_class(sig, keys) if fmt == "csv" else OutputView(keys)
    outs = sig.outputs

    def has(key: str, dtype: str, width: int | None = None) -> bool:
        info = outs.get(key)
        if info is None or info.encoding != "dense" or info.shape is None or len(info.shape) != 2:
            return False
        kind_ok = info.dtype == dtype if dtype == "string" else info.dtype.startswith(dtype)
        return kind_ok and (width is None or info.shape[1] == width)

    if sig.method_name == CLASSIFY_METHOD and has("classes", "string") and has("scores", "float"):
        width = outs["classes"].shape[1]  # type: ignore[index]
        if width is not None and outs["scores"].shape[1] == width:  # type: ignore[index]
            return OutputView(("classes", "scores"), "scores")
    if has("classes", "string", 1) and has("class_ids", "int", 1) and has("probabilities", "float"):
        return OutputView(("class_ids", "classes", "probabilities"), "class_ids")
    if sig.method_name == REGRESS_METHOD and has("outputs", "float", 1):
        return OutputView(("outputs",), "value")
    if has("predictions", "float", 1) and "probabilities" not in outs:
        return OutputView(("predictions",), "value")
    return by_class(sig, tuple(sorted(outs))) if fmt == "csv" else OutputView(tuple(sorted(outs)))


#: the output path that means standard output, as for most command-line tools.
STDOUT = "-"


def is_stdout(path: Path | str) -> bool:
    """Whether ``path`` is ``-``, standard output."""
    return str(path) == STDOUT


class _Borrowed(io.RawIOBase):
    """Standard output lent to a writer: its ``close`` flushes and leaves the stream open."""

    def __init__(self, stream: BinaryIO) -> None:
        super().__init__()
        self.stream = stream

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.stream.write(data)
        return len(data)

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        if not self.closed:
            self.stream.flush()
        super().close()


class StdoutFile:
    """Standard output where an ``AtomicFile`` would be: rows go out as they are written."""

    path = Path(STDOUT)

    def open(self) -> BinaryIO:
        return _Borrowed(sys.stdout.buffer)  # type: ignore[return-value]

    def commit(self) -> None:
        sys.stdout.flush()

    def abort(self) -> None:
        sys.stdout.flush()


class Writer:
    """Base of the output writers: ``write`` chunks in order, then ``close`` (or ``abort``).

    The path ``-`` is standard output (JSONL and CSV only).
    """

    def __init__(self, path: Path) -> None:
        self.file: AtomicFile | StdoutFile = StdoutFile() if is_stdout(path) else AtomicFile(path)
        self.rows = 0

    @property
    def path(self) -> Path:
        """The file the user named (``-`` for standard output)."""
        return self.file.path

    @property
    def tmp(self) -> Path:
        """The temporary file of a writer that writes by path (not to standard output)."""
        if not isinstance(self.file, AtomicFile):
            raise InputError(f"{type(self).__name__} cannot write to standard output")
        return self.file.tmp

    def write(
        self,
        keep: Mapping[str, Any],
        outputs: Mapping[str, Array],
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """Flush and close the underlying stream (before the rename)."""

    def commit(self) -> None:
        """Rename the finished file into place."""
        self.file.commit()

    def close(self) -> None:
        self.finish()
        self.commit()

    def abort(self) -> None:
        """Remove the temporary file, even when closing it fails too (a full disk)."""
        try:
            with contextlib.suppress(Exception):  # the error that made us abort is the one to report
                self.finish()
        finally:
            self.file.abort()


def make_writer(
    fmt: str,
    path: Path,
    *,
    signature: str = "serving_default",
    model_name: str = "",
    method: str = "",
) -> Writer:
    """The writer for ``fmt`` (jsonl, csv, parquet, tfrecord)."""
    if fmt == "jsonl":
        return JsonlWriter(path)
    if fmt == "csv":
        return CsvWriter(path)
    if fmt == "parquet":
        return ParquetWriter(path)
    if fmt == "tfrecord":
        return PredictionLogWriter(path, signature=signature, model_name=model_name, method=method)
    raise InputError(f"unknown output format {fmt!r}; choose one of: {', '.join(WRITE_FORMATS)}")


def format_for(path: Path, fmt: str | None) -> str:
    """The output format: ``fmt`` if given, else from the suffix of ``path`` (``-``: jsonl).

    Raises:
        InputError: no format and an unknown suffix, or a binary format to standard output.
    """
    if is_stdout(path):
        if fmt not in (None, "jsonl", "csv"):
            raise InputError(f"{fmt} output cannot go to standard output ('-'): give a file name")
        return fmt or "jsonl"
    if fmt is not None:
        return fmt
    guess = {
        ".jsonl": "jsonl",
        ".json": "jsonl",
        ".csv": "csv",
        ".parquet": "parquet",
        ".tfrecord": "tfrecord",
        ".tfrecords": "tfrecord",
    }.get(path.suffix.lower())
    if guess is None:
        raise InputError(
            f"cannot tell the output format of {str(path)!r} from its suffix; "
            f"pass --format ({', '.join(WRITE_FORMATS)})"
        )
    return guess


# -- value helpers ------------------------------------------------------------------------------


def _text(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            # JSON has no bytes: TF Serving's REST API uses the same {"b64": ...} wrapper.
            return {"b64": base64.b64encode(value).decode("ascii")}
    return value


def _json_values(array: Array) -> list[Any]:
    if array.dtype == object:
        # Class names repeat on every row: each distinct value is decoded once.
        flat = array.reshape(-1).tolist()
        texts: dict[Any, Any] = {}
        try:
            decoded = [texts[v] if v in texts else texts.setdefault(v, _text(v)) for v in flat]
        except TypeError:  # an unhashable value (a list in an object array)
            return [_decode_nested(row) for row in array.tolist()]
        out = np.empty(len(decoded), dtype=object)
        out[:] = decoded
        values: list[Any] = out.reshape(array.shape).tolist()
        return values
    rows: list[Any] = array.tolist()
    return rows


def _decode_nested(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode_nested(v) for v in value]
    return _text(value)


def _keep_values(column: Any) -> list[Any]:
    if hasattr(column, "to_pylist"):
        return column.to_pylist()  # type: ignore[no-any-return]
    if isinstance(column, np.ndarray):
        return _json_values(column)
    return [None if v is _missing_sentinel() else v for v in column]


def _missing_sentinel() -> Any:
    from tfship.records._shared import MISSING as _MISSING

    return _MISSING


# -- JSONL --------------------------------------------------------------------------------------


class JsonlWriter(Writer):
    """One JSON object per row: pass-through columns, then outputs (per-row shapes kept).

    Rows are encoded by orjson (in C, about as fast as the Arrow CSV writer); a chunk holding
    a value orjson writes differently from ``json`` (NaN or an infinity, which orjson writes as
    null) or cannot write is encoded by ``json``, so the file says the same either way.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.stream: BinaryIO = self.file.open()

    def write(
        self,
        keep: Mapping[str, Any],
        outputs: Mapping[str, Array],
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        columns: dict[str, Any] = {k: _keep_values(v) for k, v in keep.items()}
        columns.update({k: _fast_values(v) for k, v in outputs.items()})
        rows = len(next(iter(outputs.values()))) if outputs else len(next(iter(columns.values()), []))
        data = None if _non_finite(outputs) else _orjson_lines(columns, rows)
        if data is None:
            columns.update({k: _json_values(v) for k, v in outputs.items()})
            names = list(columns)
            text = "".join(
                json.dumps(dict(zip(names, values)), ensure_ascii=False, separators=(",", ":")) + "\n"
                for values in zip(*columns.values())
            )
            data = text.encode("utf-8")
        self.stream.write(data)
        self.rows += rows

    def finish(self) -> None:
        self.stream.close()


class _Same:
    """An output whose rows are all the same (a classifier's ``all_classes``): encoded once."""

    def __init__(self, row: Any) -> None:
        self.row = row


class _OneEach:
    """The values of a [batch, 1] output, one per row: written as one-element lists."""

    def __init__(self, values: list[Any]) -> None:
        self.values = values


def _fast_values(array: Array) -> Any:
    """An output as ``_orjson_lines`` takes it: numbers stay an array (no Python object per
    value), text is decoded, and rows that are all the same are one ``_Same``."""
    if array.ndim >= 2 and array.shape[0] > 1 and bool((array == array[:1]).all()):
        return _Same(_json_values(array[:1])[0] if array.dtype == object else array[0])
    if array.dtype == object and array.ndim == 2 and array.shape[1] == 1:
        return _OneEach(_json_values(array.reshape(-1)))  # a class per row: [batch, 1]
    return _json_values(array) if array.dtype == object else array


def _non_finite(outputs: Mapping[str, Array]) -> bool:
    return any(a.dtype.kind == "f" and not np.isfinite(a).all() for a in outputs.values())


#: where one element of an indented JSON list ends and the next begins (deeper levels are
#: indented further), and the indentation inside an element. A JSON string never holds a raw
#: newline, so neither pattern can match inside a string.
_TOP_LEVEL = re.compile(rb",\n  (?! )")
_INDENT = re.compile(rb"\n +")


def _orjson_lines(columns: Mapping[str, Any], rows: int) -> bytes | None:
    """The rows of ``columns`` as JSON lines; None when a value needs ``json`` (see JsonlWriter).

    Each column is encoded by one orjson call (one call per value costs more than the
    encoding itself) and cut into its rows' texts; a row is then one ``%`` of a template
    holding the keys and the values that are the same on every row.
    """
    import orjson

    if rows == 0:
        return b""
    template: list[bytes] = []
    per_row: list[list[bytes]] = []
    for position, (name, values) in enumerate(columns.items()):
        encoded = _orjson_values(orjson, values)
        if encoded is None:
            return None
        texts, around = encoded
        key = (b"{" if position == 0 else b",") + orjson.dumps(name) + b":"
        if isinstance(texts, bytes):  # the same text on every row
            template.append(_literal(key + around[0] + texts + around[1]))
            continue
        if len(texts) != rows:
            return None
        template += [_literal(key + around[0]), b"%b", _literal(around[1])]
        per_row.append(texts)
    line = b"".join(template) + b"}\n"
    if not per_row:
        return (line % ()) * rows
    return b"".join([line % values for values in zip(*per_row)])


def _literal(text: bytes) -> bytes:
    """``text`` as a literal part of a ``%`` template."""
    return text.replace(b"%", b"%%")


#: bytes written before and after each row's text (the brackets split off a 2-D array's rows).
_NOTHING = (b"", b"")
_BRACKETS = (b"[", b"]")


def _orjson_values(orjson: Any, values: Any) -> tuple[Any, tuple[bytes, bytes]] | None:
    """The JSON text of each row of ``values`` (a list, a ``_Same`` or a numeric array: a
    float32 is written as its shortest text, as the CSV writer writes it), or one text for a
    ``_Same``, and what goes around each text."""
    try:
        if isinstance(values, _Same):
            return orjson.dumps(values.row, option=orjson.OPT_SERIALIZE_NUMPY), _NOTHING
        if isinstance(values, _OneEach):
            texts = _orjson_values(orjson, values.values)
            return None if texts is None else (texts[0], _BRACKETS)
        if isinstance(values, np.ndarray) and values.ndim <= 2 and values.size:
            # Numbers hold no comma or bracket: the compact text splits where rows meet.
            text: bytes = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)
            if values.ndim == 1:
                return text[1:-1].split(b","), _NOTHING
            return text[2:-2].split(b"],["), _BRACKETS
        text = orjson.dumps(values, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
    except TypeError:  # a value orjson does not write (a Decimal, an int beyond 64 bits)
        return None
    if not (text.startswith(b"[\n  ") and text.endswith(b"\n]")):
        return None
    body = text[4:-2]
    if b"\n    " not in body:  # scalars: no element spans lines
        return _TOP_LEVEL.split(body), _NOTHING
    if b"\n      " not in body:  # a list of scalars per row, the usual [batch, k] output
        flat = body.replace(b"[\n    ", b"[").replace(b",\n    ", b",").replace(b"\n  ]", b"]")
        flat = flat.replace(b"{\n    ", b"{").replace(b"\n  }", b"}")
        return flat.split(b",\n  "), _NOTHING
    # One newline between elements, none inside them, then one split.
    return _INDENT.sub(b"", _TOP_LEVEL.sub(b"\n", body)).split(b"\n"), _NOTHING


# -- Arrow based (CSV, Parquet) -----------------------------------------------------------------


def _arrow_output(key: str, array: Array, flatten: bool) -> list[tuple[str, Any]]:
    import pyarrow as pa

    rows = array.shape[0]
    per_row = int(np.prod(array.shape[1:])) if array.ndim > 1 else 1
    flat = array.reshape(rows, per_row) if array.ndim != 1 else array.reshape(rows, 1)
    if flatten:
        if array.ndim == 1 or per_row == 1:
            return [(key, _arrow_values(flat[:, 0]))]
        return [(f"{key}_{i}", _arrow_values(flat[:, i])) for i in range(per_row)]
    if array.ndim == 1:
        return [(key, _arrow_values(array))]
    values = _arrow_values(array.reshape(-1))
    nested = values
    for size in reversed(array.shape[1:]):
        nested = pa.FixedSizeListArray.from_arrays(nested, size)
    return [(key, nested)]


def _arrow_values(values: Array) -> Any:
    import pyarrow as pa

    if values.dtype == object:
        binary = pa.array(values, type=pa.binary()) if _all_bytes(values) else None
        if binary is not None:
            try:
                return binary.cast(pa.string())
            except pa.ArrowInvalid:
                return binary
        return pa.array([_text(v) if isinstance(v, bytes) else v for v in values.tolist()])
    return pa.array(values)


def _all_bytes(values: Array) -> bool:
    return all(isinstance(v, bytes) for v in values[:16])


def _arrow_keep(column: Any, as_text: bool) -> Any:
    import pyarrow as pa

    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        return column.cast(pa.string()) if as_text else column
    values = _keep_values(column)
    if as_text:
        # CSV cells are text anyway; files of one job may type an id column differently.
        return pa.array([None if v is None else _cell(v) for v in values], type=pa.string())
    return pa.array(values)


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _table(keep: Mapping[str, Any], outputs: Mapping[str, Array], flatten: bool) -> Any:
    import pyarrow as pa

    names: list[str] = []
    arrays: list[Any] = []
    for name, column in keep.items():
        names.append(name)
        arrays.append(_arrow_keep(column, as_text=flatten))
    for key, array in outputs.items():
        for name, column in _arrow_output(key, array, flatten):
            names.append(name)
            arrays.append(column)
    return pa.Table.from_arrays(arrays, names=names)


class _ArrowWriter(Writer):
    """Base of the Arrow table writers: the first chunk's table schema opens the file."""

    flatten = False

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writer: Any = None

    def write(
        self,
        keep: Mapping[str, Any],
        outputs: Mapping[str, Array],
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        table = _table(keep, outputs, flatten=self.flatten)
        if self.writer is None:
            self.writer = self._open(table.schema)
        self.writer.write_table(self._conform(table))
        self.rows += table.num_rows

    def _open(self, schema: Any) -> Any:
        raise NotImplementedError

    def _conform(self, table: Any) -> Any:
        """The chunk's table as the open file takes it."""
        return table


class CsvWriter(_ArrowWriter):
    """CSV with a header; one cell per output value (``scores_0``, ``scores_1``, ...)."""

    flatten = True

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.stream: BinaryIO = self.file.open()

    def _open(self, schema: Any) -> Any:
        import pyarrow.csv as pacsv

        options = pacsv.WriteOptions(quoting_style="needed")
        return pacsv.CSVWriter(self.stream, schema, write_options=options)

    def finish(self) -> None:
        try:
            if self.writer is not None:
                self.writer, writer = None, self.writer
                writer.close()
        finally:
            self.stream.close()


class ParquetWriter(_ArrowWriter):
    """Parquet; multi-valued outputs are fixed-size list columns."""

    def _open(self, schema: Any) -> Any:
        import pyarrow.parquet as pq

        return pq.ParquetWriter(str(self.tmp), schema)

    def _conform(self, table: Any) -> Any:
        # A Parquet file has one schema: the first chunk's.
        return table.cast(self.writer.schema)

    def finish(self) -> None:
        if self.writer is not None:
            self.writer, writer = None, self.writer
            writer.close()


# -- TFRecord of PredictionLog ----------------------------------------------------------------


class PredictionLogWriter(Writer):
    """A TFRecord of ``PredictionLog``, one per row, as TF Serving logs requests (and tfx-bsl).

    A classify signature fed with examples gets a ``ClassifyLog`` (request: the row's
    ``tf.train.Example``; response: one ``Classification`` of (label, score) classes), a
    regress signature a ``RegressLog``; any other signature a ``PredictLog`` whose request
    holds the row's inputs (its serialized example for a parsing signature) and whose response
    holds the row's outputs.
    """

    def __init__(self, path: Path, *, signature: str, model_name: str, method: str = "") -> None:
        super().__init__(path)
        from tfship._tf import tf

        self.tf = tf()
        self.signature = signature
        self.model_name = model_name
        self.method = method
        self.writer = self.tf.io.TFRecordWriter(str(self.tmp))

    def write(
        self,
        keep: Mapping[str, Any],
        outputs: Mapping[str, Array],
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        rows = next(iter(outputs.values())).shape[0] if outputs else 0
        examples = _only_examples(inputs)
        if examples is not None and self._classifies(outputs):
            logs = self._classify_logs(examples, outputs)
        elif examples is not None and self.method == REGRESS_METHOD and "outputs" in outputs:
            logs = self._regress_logs(examples, outputs["outputs"])
        else:
            logs = self._predict_logs(rows, outputs, inputs or {})
        for log in logs:
            with self._io_errors():
                self.writer.write(log.SerializeToString())
        self.rows += rows

    def _classifies(self, outputs: Mapping[str, Array]) -> bool:
        keys = set(outputs)
        return self.method == CLASSIFY_METHOD and bool(keys) and keys <= {"classes", "scores"}

    def _pair(self, request_cls: Any, response_cls: Any) -> tuple[Any, Any]:
        """A new request and response, both naming this model and signature."""
        request = request_cls()
        request.model_spec.name = self.model_name
        request.model_spec.signature_name = self.signature
        response = response_cls()
        response.model_spec.CopyFrom(request.model_spec)
        return request, response

    def _classify_logs(self, examples: Array, outputs: Mapping[str, Array]) -> list[Any]:
        classification_pb2 = protos().classification_pb2
        n = len(examples)
        labels = _per_row(outputs.get("classes"), n)
        scores = _per_row(outputs.get("scores"), n)
        width = next(a.shape[1] for a in (labels, scores) if a is not None)
        logs = []
        for i, data in enumerate(examples):
            request, response = self._pair(
                classification_pb2.ClassificationRequest, classification_pb2.ClassificationResponse
            )
            request.input.example_list.examples.add().ParseFromString(data)
            result = response.result.classifications.add()
            for j in range(width):
                entry = result.classes.add()
                if labels is not None:
                    entry.label = _label(labels[i, j])
                if scores is not None:
                    entry.score = float(scores[i, j])
            logs.append(_prediction_log("classify_log", request, response))
        return logs

    def _regress_logs(self, examples: Array, values: Array) -> list[Any]:
        regression_pb2 = protos().regression_pb2
        flat = values.reshape(len(examples), -1)
        logs = []
        for i, data in enumerate(examples):
            request, response = self._pair(
                regression_pb2.RegressionRequest, regression_pb2.RegressionResponse
            )
            request.input.example_list.examples.add().ParseFromString(data)
            response.result.regressions.add(value=float(flat[i, 0]))
            logs.append(_prediction_log("regress_log", request, response))
        return logs

    def _predict_logs(self, rows: int, outputs: Mapping[str, Array], inputs: Mapping[str, Any]) -> list[Any]:
        predict_pb2 = protos().predict_pb2

        def make(array: Array) -> Any:  # TensorFlow's TensorProto, taken by its bytes
            return ours(self.tf.make_tensor_proto(array))

        logs = []
        for i in range(rows):
            request, response = self._pair(predict_pb2.PredictRequest, predict_pb2.PredictResponse)
            for key, column in inputs.items():
                if isinstance(column, np.ndarray):
                    request.inputs[key].CopyFrom(make(column[i : i + 1]))
            for key, array in outputs.items():
                response.outputs[key].CopyFrom(make(array[i : i + 1]))
            logs.append(_prediction_log("predict_log", request, response))
        return logs

    def finish(self) -> None:
        if self.writer is not None:
            self.writer, writer = None, self.writer
            with self._io_errors():
                writer.close()

    @contextlib.contextmanager
    def _io_errors(self) -> Iterator[None]:
        """TensorFlow's error of a write (a full disk) as the ``OSError`` it is, naming the
        file the user gave; TensorFlow names the temporary: ``<tmp>; File too large``."""
        try:
            yield
        except self.tf.errors.OpError as exc:
            cause = str(exc.message).rsplit("; ", 1)[-1]
            raise OSError(None, cause, str(self.path)) from exc


def _prediction_log(kind: str, request: Any, response: Any) -> Any:
    """A ``PredictionLog`` whose ``kind`` (``classify_log``, ...) holds request and response."""
    log = protos().prediction_log_pb2.PredictionLog()
    entry = getattr(log, kind)
    entry.request.CopyFrom(request)
    entry.response.CopyFrom(response)
    return log


def _only_examples(inputs: Mapping[str, Any] | None) -> Array | None:
    """The serialized examples when the request is exactly one string input of them."""
    if not inputs or len(inputs) != 1:
        return None
    (column,) = inputs.values()
    if isinstance(column, np.ndarray) and column.dtype == object and column.ndim == 1:
        return column if all(isinstance(v, bytes) for v in column[:4]) else None
    return None


def _per_row(array: Array | None, rows: int) -> Array | None:
    return None if array is None else array.reshape(rows, -1)


def _label(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class RejectsWriter:
    """The rejects file: one JSON object per rejected row (file, line, reason, record).

    ``finish`` closes it (where a full disk shows), ``commit`` renames it into place; ``close``
    does both. ``abort`` removes the temporary file, even when closing it fails.
    """

    def __init__(self, path: Path) -> None:
        self.file = AtomicFile(path)
        try:
            self.stream = open(self.file.tmp, "w", encoding="utf-8")  # noqa: SIM115
        except BaseException:
            self.file.abort()
            raise

    @property
    def path(self) -> Path:
        return self.file.path

    def write(self, reject: Any) -> None:
        self.stream.write(json.dumps(reject.to_dict(), ensure_ascii=False) + "\n")

    def finish(self) -> None:
        self.stream.close()

    def commit(self) -> None:
        self.file.commit()

    def close(self) -> None:
        self.finish()
        self.commit()

    def abort(self) -> None:
        try:
            with contextlib.suppress(OSError):  # the error that made us abort is the one to report
                self.stream.close()
        finally:
            self.file.abort()
