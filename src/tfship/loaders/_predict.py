"""Input adapters: friendly inputs (records, columns, DataFrames, Examples) to a signature's feeds.

A signature is seen as a list of :class:`Field` s, the names a user writes: for a parsing
signature the features of its recovered ``tf.Example`` spec, otherwise its inputs. Conversion
goes in two steps: ``typed_columns`` checks and casts what the user gave (one array, or one
sparse triple, per field), then ``run_columns`` feeds those columns, either straight into the
``ParseExampleV2`` outputs (no serialization) or, when that is not possible, as serialized
``tf.train.Example`` s.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from tfship._wire import InputCheckError, cast_array, shape_text
from tfship.errors import ModelInputError, value_text
from tfship.records import Field
from tfship.records._shared import MISSING as _MISSING
from tfship.records._shared import Column, SparseColumn, coo_from_lengths, empty_sparse
from tfship.schema import coerce_value

Array = npt.NDArray[Any]
log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from tfship.inspect import SignatureInfo, TensorInfo


class _Model(Protocol):
    """What a ``SignatureAdapter`` uses of the ``LocalModel`` that builds it."""

    path: Path
    loader: str

    @property
    def schema_defaults(self) -> dict[str, Any]: ...

    def output_keys(self, signature: str | None, outputs: Sequence[str] | None) -> list[str]: ...

    def run(
        self,
        feeds: Mapping[str, Any],
        *,
        signature: str | None = None,
        outputs: Sequence[str] | None = None,
    ) -> dict[str, Array]: ...

    def _run_tensors(
        self,
        feed_names: Sequence[str],
        feed_values: Sequence[Array],
        fetch_infos: Sequence[TensorInfo],
        fetch_keys: Sequence[str],
    ) -> dict[str, Array]: ...


class SignatureAdapter:
    """Turns friendly inputs into a signature's feeds, and runs them. Built by ``LocalModel``."""

    def __init__(self, model: _Model, sig: SignatureInfo) -> None:
        self.model = model
        self.sig = sig
        self.where = f"signature {sig.key!r}"
        spec: Mapping[str, Any] | None = getattr(sig, "feature_spec", None)
        string_inputs = [k for k, i in sig.inputs.items() if i.dtype == "string"]
        self.parsing = spec is not None and len(sig.inputs) == 1 and len(string_inputs) == 1
        self.example_key = string_inputs[0] if self.parsing else None
        self._spec: Mapping[str, Any]
        if spec is not None and self.parsing:
            self.fields = {name: entry.field for name, entry in sorted(spec.items())}
            # Feeding the parsed tensors needs a session; TF2's object loader runs whole signatures.
            self._parsed_feeds = model.loader == "session" and all(
                _has_tensors(entry) for entry in spec.values()
            )
            self._spec = spec
        else:
            defaults = model.schema_defaults
            self.fields = {
                key: _input_field(key, info, defaults.get(key)) for key, info in sorted(sig.inputs.items())
            }
            self._parsed_feeds = False
            self._spec = {}
        self._noted: set[tuple[str, ...]] = set()
        self.split_sparse = _split_sparse_inputs(sig.inputs) if not self.parsing else {}
        for key, (values_key, shape_key) in self.split_sparse.items():
            del self.fields[values_key], self.fields[shape_key]
            values, indices_shape = sig.inputs[values_key], sig.inputs[key].shape
            assert indices_shape is not None and indices_shape[1] is not None  # checked above
            self.fields[key] = Field(key, values.dtype, (None,) * (indices_shape[1] - 1), True)

    # -- entry point ----------------------------------------------------------------------
    def predict(
        self, inputs: Any, outputs: Sequence[str] | None, ignore_unknown: bool = False
    ) -> dict[str, Array]:
        """Convert ``inputs`` (any accepted kind) and run the signature.

        ``ignore_unknown`` leaves out names the signature does not take (logged once as a
        warning naming them) instead of refusing them.
        """
        serialized = _serialized_examples(inputs, self.example_key)
        if serialized is not None:
            if self.parsing:
                return self.run_examples(object_array(serialized), outputs)
            columns: Mapping[str, Any] = self._columns_from_examples(serialized)
        elif isinstance(inputs, Mapping) and self._is_one_record(inputs):
            columns = {k: RecordColumn([v]) for k, v in inputs.items()}
        else:
            columns = _as_columns(inputs)
        return self.run_columns(self.typed_columns(columns, ignore_unknown), outputs)

    def _is_one_record(self, inputs: Mapping[str, Any]) -> bool:
        """Whether a dict holds one row: every dense value has exactly one row's rank."""
        dense = [(self.fields[k], v) for k, v in inputs.items() if k in self.fields]
        dense = [(f, v) for f, v in dense if not f.sparse]
        if not dense or any(f.shape is None for f, _ in dense):
            return False
        return all(_fits_one_row(f, v) for f, v in dense)

    def _columns_from_examples(self, serialized: list[bytes]) -> dict[str, Any]:
        """A raw signature takes features: read them out of the examples, by input name."""
        from tfship._tf import tf

        records: list[dict[str, Any]] = []
        for data in serialized:
            example = tf().train.Example.FromString(data)
            record: dict[str, Any] = {}
            for name, feature in example.features.feature.items():
                kind = feature.WhichOneof("kind")
                values = list(getattr(feature, kind).value) if kind else []
                fld = self.fields.get(name)
                scalar = fld is not None and not fld.sparse and fld.shape == ()
                record[name] = values[0] if scalar and len(values) == 1 else values
            records.append(record)
        return _records_to_columns(records)

    # -- runs ------------------------------------------------------------------------------
    def run_examples(self, serialized: Array, outputs: Sequence[str] | None) -> dict[str, Array]:
        """Run a parsing signature on serialized ``tf.Example`` s."""
        assert self.example_key is not None
        return self.model.run({self.example_key: serialized}, signature=self.sig.key, outputs=outputs)

    def run_columns(self, columns: Mapping[str, Column], outputs: Sequence[str] | None) -> dict[str, Array]:
        """Run on typed columns (as returned by :meth:`typed_columns`)."""
        keys = self.model.output_keys(self.sig.key, outputs)
        infos = [self.sig.outputs[k] for k in keys]
        if not self.parsing:
            feeds: dict[str, Any] = {}
            for key, col in columns.items():
                if key in self.split_sparse and isinstance(col, SparseColumn):
                    values_key, shape_key = self.split_sparse[key]
                    feeds.update({key: col.indices, values_key: col.values})
                    feeds[shape_key] = col.dense_shape
                else:
                    feeds[key] = tuple(col) if isinstance(col, SparseColumn) else col
            return self.model.run(feeds, signature=self.sig.key, outputs=keys)
        if self._parsed_feeds:
            names, values = self._parsed_feed_lists(columns)
            return self.model._run_tensors(names, values, infos, keys)
        return self.run_examples(self.serialize(columns), keys)

    def _parsed_feed_lists(self, columns: Mapping[str, Column]) -> tuple[list[str], list[Array]]:
        names: list[str] = []
        values: list[Array] = []
        for name, entry in self._spec.items():
            col = columns[name]
            tensors = entry.tensors
            if isinstance(col, SparseColumn):
                names += [tensors["indices"], tensors["values"], tensors["dense_shape"]]
                values += [col.indices, col.values, col.dense_shape]
            else:
                names.append(tensors["value"])
                values.append(col)
        return names, values

    def serialize(self, columns: Mapping[str, Column]) -> Array:
        """Serialized ``tf.train.Example`` s holding typed columns (one per row), encoded
        column by column by :func:`encode_examples` (no message object per row)."""
        rows = _row_count(columns, self.where)
        return encode_examples({name: self.fields[name].dtype for name in columns}, columns, rows)

    # -- checks and casts -------------------------------------------------------------------
    def typed_columns(self, columns: Mapping[str, Any], ignore_unknown: bool = False) -> dict[str, Column]:
        """Check names, fill defaults, cast safely; one array or sparse column per field.

        A name the signature does not take is an error, or with ``ignore_unknown`` left out
        with a warning that names it.
        """
        columns = self.known_columns(columns, ignore_unknown)
        rows = _given_rows(columns, self.fields, self.where)
        typed: dict[str, Column] = {}
        for name, fld in self.fields.items():
            if name not in columns or columns[name] is None:
                typed[name] = self._absent(fld, rows)
            elif fld.sparse:
                typed[name] = sparse_column(fld, columns[name], rows, self.where)
            else:
                typed[name] = dense_column(fld, columns[name], rows, self.where)
        return typed

    def known_columns(self, columns: Mapping[str, Any], ignore_unknown: bool) -> Mapping[str, Any]:
        """``columns`` without the names the signature does not take, when ``ignore_unknown``.

        Without it such a name is a ``ModelInputError``; with it the names left out are logged,
        as a warning, the first time each set of them is seen.
        """
        unknown = sorted(set(columns) - set(self.fields))
        if not unknown:
            return columns
        names = ", ".join(map(repr, unknown))
        if not ignore_unknown:
            raise ModelInputError(
                f"{self.where}: unknown input {names}; valid names: {', '.join(self.fields)}"
                + (f" (or {self.example_key!r} with serialized examples)" if self.parsing else "")
                + "; ignore_unknown=True leaves out the names it does not take",
                path=str(self.model.path),
            )
        if tuple(unknown) not in self._noted:
            self._noted.add(tuple(unknown))
            log.warning("ignored %s: not inputs of %s", names, self.where)
        return {k: v for k, v in columns.items() if k in self.fields}

    def _absent(self, fld: Field, rows: int) -> Column:
        if fld.sparse:
            return empty_sparse(fld, rows)
        if fld.default is None:
            raise ModelInputError(
                f"{self.where}: missing required input {fld.name!r} ({fld.describe()}); "
                f"given: {rows} row(s) without it",
                path=str(self.model.path),
            )
        return np.broadcast_to(fld.default, (rows, *fld.default.shape)).copy()


def _fits_one_row(fld: Field, value: Any) -> bool:
    """Whether ``value`` has the shape of one row of ``fld`` (a scalar for a [1] field too)."""
    try:
        shape = () if isinstance(value, (str, bytes)) else np.shape(value)
    except ValueError:  # ragged nested lists
        return False
    if not shape:
        return all(d == 1 for d in fld.shape or ())
    want = fld.shape or ()
    return len(shape) == len(want) and all(w is None or w == g for w, g in zip(want, shape))


def _serialized_examples(inputs: Any, example_key: str | None) -> list[bytes] | None:
    """The serialized examples in ``inputs``, when they are Examples or bytes; else None."""
    if _is_example(inputs) or isinstance(inputs, bytes):
        inputs = [inputs]
    if isinstance(inputs, Mapping) and example_key is not None and set(inputs) == {example_key}:
        inputs = list(np.asarray(inputs[example_key], dtype=object).reshape(-1))
    if isinstance(inputs, np.ndarray) and inputs.dtype.kind in "OS" and inputs.ndim == 1:
        inputs = list(inputs)
    if not isinstance(inputs, (list, tuple)) or not inputs:
        return None
    if all(isinstance(x, bytes) for x in inputs):
        return list(inputs)
    if all(_is_example(x) for x in inputs):
        return [x.SerializeToString() for x in inputs]
    return None


def object_array(items: Sequence[Any]) -> Array:
    """A 1-D object array of ``items`` (numpy would make a 2-D array of equal-length lists)."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


# -- fields from signatures ---------------------------------------------------------------------


def _has_tensors(entry: Any) -> bool:
    tensors = getattr(entry, "tensors", None) or {}
    if entry.kind == "fixed":
        return "value" in tensors
    if entry.kind == "var":
        return {"indices", "values", "dense_shape"} <= set(tensors)
    return False


def _input_field(key: str, info: Any, default: Any = None) -> Field:
    """The field of one raw input; ``default`` (the schema's, if any) fills a missing value."""
    if info.encoding == "coo_sparse":
        rank = None if info.shape is None else len(info.shape)
        return Field(key, info.dtype, None if rank is None else (None,) * (rank - 1), True)
    shape = None if info.shape is None else tuple(info.shape[1:])
    filled = None
    if default is not None and shape is not None and None not in shape:
        try:
            filled = np.broadcast_to(np.asarray(default, dtype=_np_dtype(info.dtype)), shape)
        except (TypeError, ValueError):  # a default the input cannot hold: leave it required
            filled = None
    return Field(key, info.dtype, shape, False, filled)


def _split_sparse_inputs(inputs: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """TF2 signatures flatten a SparseTensor argument ``s`` into ``s``, ``s_1``, ``s_2``.

    They are its indices (int64 [n, rank]), values ([n]) and dense shape (int64 [rank]);
    grouping them back lets users pass one sparse value under the argument's own name.
    """
    groups: dict[str, tuple[str, str]] = {}
    for key, info in inputs.items():
        values, shape = inputs.get(f"{key}_1"), inputs.get(f"{key}_2")
        if values is None or shape is None or info.encoding != "dense":
            continue
        rank = info.shape[1] if info.shape is not None and len(info.shape) == 2 else None
        if (
            rank is not None
            and info.dtype == "int64"
            and values.encoding == "dense"
            and values.shape == (None,)
            and shape.dtype == "int64"
            and shape.shape == (rank,)
        ):
            groups[key] = (f"{key}_1", f"{key}_2")
    return groups


def _np_dtype(name: str) -> Any:
    return object if name == "string" else np.dtype(name)


# -- inputs to columns ---------------------------------------------------------------------------


def _is_example(value: Any) -> bool:
    return hasattr(value, "SerializeToString") and hasattr(value, "features")


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, bytes)) or np.ndim(value) == 0


def _as_columns(inputs: Any) -> Mapping[str, Any]:
    """A mapping name -> column for a dict of columns, one record, records or a DataFrame."""
    if hasattr(inputs, "to_dict") and hasattr(inputs, "columns") and hasattr(inputs, "iloc"):
        return {str(c): _frame_column(inputs[c].to_numpy()) for c in inputs.columns}
    if isinstance(inputs, Mapping):
        return inputs
    if isinstance(inputs, (list, tuple)) and inputs and all(isinstance(r, Mapping) for r in inputs):
        return _records_to_columns(inputs)
    if isinstance(inputs, (list, tuple)) and not inputs:
        raise ValueError("predict() needs at least one row; got an empty list")
    raise TypeError(
        "predict() takes a dict of columns, a list of record dicts, a pandas DataFrame, "
        f"tf.train.Example(s) or serialized examples; got {type(inputs).__name__}"
    )


def _frame_column(values: Array) -> Any:
    # pandas marks missing cells with NaN/None: handle them as missing record values
    # (default, or an error naming the row), as the CSV and JSON readers do. Object columns
    # (strings, lists per row) become lists, which numpy stacks row by row.
    if values.dtype == object or (values.dtype.kind == "f" and np.isnan(values).any()):
        return RecordColumn(values.tolist())
    return values


def _records_to_columns(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    names: dict[str, None] = {}
    for record in records:
        names.update(dict.fromkeys(record))
    columns: dict[str, Any] = {}
    for name in names:
        columns[name] = RecordColumn([r.get(name, _MISSING) for r in records])
    return columns


class RecordColumn(list):  # type: ignore[type-arg]
    """The values of one name across records; ``_MISSING`` (or None) where a record lacks it."""


def _missing(value: Any) -> bool:
    if value is _MISSING or value is None:
        return True
    return isinstance(value, float) and math.isnan(value)


# -- dense columns -----------------------------------------------------------------------------


def _given_rows(columns: Mapping[str, Any], fields: Mapping[str, Field], where: str) -> int:
    counts: dict[str, int] = {}
    for name, col in columns.items():
        if col is None:
            continue
        fld = fields[name]
        if fld.sparse and _is_sparse_triple(col):
            counts[name] = int(np.asarray(_triple(col)[2])[0])
        elif fld.sparse or isinstance(col, RecordColumn) or isinstance(col, (list, tuple)):
            counts[name] = len(col)
        else:
            arr = np.asarray(col)
            if arr.ndim == 0:
                raise ModelInputError(
                    f"{where} input {name!r}: expected one value per row "
                    f"({fld.describe()}), got a scalar; pass a list or a record dict"
                )
            counts[name] = arr.shape[0]
    if not counts:
        raise ValueError("predict() needs at least one input column")
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{k!r}: {v}" for k, v in sorted(counts.items()))
        raise ModelInputError(f"{where}: inputs have different numbers of rows ({detail})")
    return next(iter(counts.values()))


def dense_column(fld: Field, value: Any, rows: int, where: str) -> Array:
    """Check and safely cast one dense column; ``ModelInputError`` names the field.

    Python values (records, a list per column) follow the schema's rule for a value; typed
    arrays the cast rule."""
    if isinstance(value, list) and not isinstance(value, RecordColumn):
        value = RecordColumn(value)
    if isinstance(value, RecordColumn):
        value = _record_values(fld, _fill_records(fld, value, where), where)
    arr = _to_array(fld, value, where)
    arr = _fit_rank(fld, arr, where)
    return safe_cast(fld, arr, where)


def _fill_records(fld: Field, values: RecordColumn, where: str) -> list[Any]:
    gaps = [i for i, v in enumerate(values) if _missing(v)]
    if not gaps:
        return list(values)
    if fld.default is None:
        raise ModelInputError(
            f"{where}: record {gaps[0]}: missing required input {fld.name!r} ({fld.describe()})"
        )
    filled = list(values)
    given = next((v for v in values if not _missing(v)), None)
    # Fill in the shape the other rows use: a scalar for a [1] feature given as scalars.
    default: Any = fld.default
    if given is not None and np.ndim(given) == 0 and fld.default.size == 1:
        default = fld.default.reshape(-1)[0]
    for i in gaps:
        filled[i] = default
    return filled


def _record_values(fld: Field, values: list[Any], where: str) -> list[Any]:
    """Each record's value by the schema's one rule for a value (``coerce_value``): ``"81"``
    is 81 for a number, as in every file reader; typed arrays keep their dtype for the cast."""
    out: list[Any] = []
    for i, value in enumerate(values):
        try:
            out.append(_coerce_nested(fld.dtype, value))
        except (TypeError, ValueError) as exc:
            raise ModelInputError(
                f"{where} input {fld.name!r}: record {i}: expected {fld.dtype}, "
                f"found {value_text(value)} ({exc})"
            ) from None
    return out


def _coerce_nested(dtype: str, value: Any) -> Any:
    if value is None:  # missing: a sparse row without values
        return None
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OSU":
            return [_coerce_nested(dtype, v) for v in value.tolist()]
        return value
    if isinstance(value, (list, tuple)):
        return [_coerce_nested(dtype, v) for v in value]
    if isinstance(value, np.generic) and value.dtype.kind in "iuf":
        return value  # a typed number: the cast rule judges its dtype
    if dtype == "string" and isinstance(value, bytes):
        return value  # bytes are fed as they are (an image, a serialized proto)
    return coerce_value(dtype, value)


def _to_array(fld: Field, value: Any, where: str) -> Array:
    if fld.dtype == "string":
        try:
            arr = np.asarray(value)
        except ValueError as exc:
            raise _ragged_error(fld, where) from exc
        if arr.dtype.kind == "U":
            return arr.astype(object)
        return arr
    try:
        return np.asarray(value)
    except ValueError as exc:
        raise _ragged_error(fld, where) from exc


def _ragged_error(fld: Field, where: str) -> ModelInputError:
    return ModelInputError(
        f"{where} input {fld.name!r}: expected {fld.describe()}, got rows of different lengths"
    )


def _fit_rank(fld: Field, arr: Array, where: str) -> Array:
    if fld.shape is None:
        return arr
    row_shape = arr.shape[1:]
    if len(row_shape) == len(fld.shape) and all(w is None or w == g for w, g in zip(fld.shape, row_shape)):
        return arr
    # One value per row for a [1] (or [1, 1]) feature: the canned numeric_column's default shape.
    known = [d for d in fld.shape if d is not None]
    if arr.ndim == 1 and len(known) == len(fld.shape) and math.prod(known) == 1:
        return arr.reshape((arr.shape[0], *known))
    raise ModelInputError(
        f"{where} input {fld.name!r}: expected {fld.describe()} "
        f"(array shape {shape_text((None, *fld.shape))}), got shape {list(arr.shape)}"
    )


def safe_cast(fld: Field, arr: Array, where: str) -> Array:
    """Cast ``arr`` to the field's dtype under the one cast rule (``tfship._wire``'s, the
    serving client's): a value may change only by float rounding. Records add one convenience
    of their own: an integer given for a string input is its decimal text (an id written
    without quotes). ``ModelInputError`` otherwise, in the client's words."""
    want = fld.dtype
    kind = arr.dtype.kind
    if want == "string":
        if kind in "OS":
            return _check_strings(fld, arr, where)
        if kind in "iu":
            return arr.astype(str).astype(object)
        raise _cast_error(fld, arr, where, "numbers are not cast to strings except integers")
    if kind == "O":
        arr = _numbers_from_objects(fld, arr, where)
    try:
        return cast_array(arr, want, where=f"{where} input {fld.name!r}")
    except InputCheckError as exc:
        raise ModelInputError(str(exc)) from None


def _check_strings(fld: Field, arr: Array, where: str) -> Array:
    if arr.dtype.kind == "S":
        return arr.astype(object)
    flat = arr.reshape(-1)
    for i, v in enumerate(flat):
        if not isinstance(v, (str, bytes)):
            if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
                flat = np.array([str(x) if isinstance(x, (int, np.integer)) else x for x in flat])
                return flat.astype(object).reshape(arr.shape)
            raise ModelInputError(
                f"{where} input {fld.name!r}: expected strings, "
                f"got {type(v).__name__} {value_text(v)} at position {i}"
            )
    return arr


def _numbers_from_objects(fld: Field, arr: Array, where: str) -> Array:
    flat = arr.reshape(-1)
    for i, v in enumerate(flat):
        if isinstance(v, (str, bytes)) or not isinstance(v, (int, float, np.number, bool)):
            raise ModelInputError(
                f"{where} input {fld.name!r}: expected {fld.dtype}, got {type(v).__name__} "
                f"{value_text(v)} at position {i}"
            )
    return np.array(flat.tolist()).reshape(arr.shape)


def _cast_error(fld: Field, arr: Array, where: str, why: str) -> ModelInputError:
    got = "string" if arr.dtype.kind in "OSU" else arr.dtype.name
    return ModelInputError(
        f"{where} input {fld.name!r}: dtype {got} does not match the signature's {fld.dtype} "
        f"and cannot be cast to it ({why})"
    )


# -- sparse columns ---------------------------------------------------------------------------


def _is_sparse_triple(value: Any) -> bool:
    if all(hasattr(value, a) for a in ("indices", "values", "dense_shape")):
        return True
    return isinstance(value, tuple) and len(value) == 3 and not isinstance(value, RecordColumn)


def _triple(value: Any) -> tuple[Any, Any, Any]:
    if isinstance(value, tuple):
        return value[0], value[1], value[2]
    return value.indices, value.values, value.dense_shape


def sparse_column(fld: Field, value: Any, rows: int, where: str) -> SparseColumn:
    """A sparse column from lists of values per row, or from an (indices, values, shape) triple."""
    if isinstance(value, (str, bytes)):  # iterating it would make one row per character
        raise ModelInputError(
            f"{where} input {fld.name!r} is sparse (variable-length): expected one list of "
            f"values per row, got the string {value_text(value)}; pass [{value_text(value)}] for one row"
        )
    if _is_sparse_triple(value):
        indices, values, dense_shape = (np.asarray(_as_numpy(x)) for x in _triple(value))
        vals = safe_cast(fld, _to_array(fld, values, where), where).reshape(-1)
        if indices.size == 0:
            indices = indices.astype(np.int64)
        try:
            idx = cast_array(indices, "int64", where=f"{where} input {fld.name + '.indices'!r}")
        except InputCheckError as exc:
            raise ModelInputError(str(exc)) from None
        return SparseColumn(idx.reshape(-1, dense_shape.size), vals, dense_shape.astype(np.int64))
    if isinstance(value, RecordColumn):  # records: each value by the one rule, as dense ones
        value = _record_values(fld, [None if _missing(v) else v for v in value], where)
    lengths: list[int] = []
    flat: list[Any] = []
    for v in value:
        if _missing(v):
            lengths.append(0)
        elif _is_scalar(v):
            lengths.append(1)
            flat.append(v)
        else:
            items = list(v)
            lengths.append(len(items))
            flat.extend(items)
    return sparse_from_lengths(fld, np.asarray(lengths, np.int64), flat, where)


def sparse_from_lengths(fld: Field, lengths: Array, flat: Any, where: str) -> SparseColumn:
    """The COO form of a variable-length column given its row lengths and flattened values."""
    if len(flat) == 0:
        values = np.zeros(0, dtype=_np_dtype(fld.dtype))
    else:
        values = safe_cast(fld, _to_array(fld, flat, where), where).reshape(-1)
    return coo_from_lengths(lengths, values)


def _as_numpy(value: Any) -> Any:
    return value.numpy() if hasattr(value, "numpy") else value


# -- examples --------------------------------------------------------------------------------


def _row_count(columns: Mapping[str, Column], where: str) -> int:
    for col in columns.values():
        return col.rows if isinstance(col, SparseColumn) else int(col.shape[0])
    raise ValueError(f"{where}: no columns")


def _varint(value: int) -> bytes:
    """A protobuf base-128 varint of a non-negative value below 2**64."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _row_values(col: Column, rows: int) -> tuple[Array, Array]:
    """A column's values flat, in row order, and where each row's values start (rows + 1)."""
    if isinstance(col, SparseColumn):
        counts = np.bincount(col.indices[:, 0].astype(np.int64), minlength=rows) if col.values.size else None
        counts = np.zeros(rows, dtype=np.int64) if counts is None else counts
        order = np.lexsort(col.indices.T[::-1]) if col.values.size else np.zeros(0, dtype=np.int64)
        values = col.values[order]
    else:
        width = int(np.prod(col.shape[1:], dtype=np.int64))
        counts = np.full(rows, width, dtype=np.int64)
        values = col.reshape(-1)
    starts = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return values, starts


def _feature_lists(dtype: str, values: Array, starts: Array, rows: int) -> list[bytes]:
    """Each row's ``tf.train.Feature`` message: its values as one list of the dtype's kind."""
    bounds = starts.tolist()
    if dtype.startswith("float"):
        # FloatList: its values packed as little-endian float32 (field 1); the Feature's field 2
        data = np.ascontiguousarray(values, dtype="<f4").tobytes()
        bodies = [data[4 * a : 4 * b] for a, b in zip(bounds, bounds[1:])]
        lists = [b"\x0a" + _varint(len(body)) + body if body else b"" for body in bodies]
        return [b"\x12" + _varint(len(x)) + x for x in lists]
    if dtype == "string":
        # BytesList: each value a field 1; the Feature's field 1
        texts = [v if isinstance(v, bytes) else str(v).encode() for v in values.tolist()]
        items = [b"\x0a" + _varint(len(t)) + t for t in texts]
        lists = [b"".join(items[a:b]) for a, b in zip(bounds, bounds[1:])]
        return [b"\x0a" + _varint(len(x)) + x for x in lists]
    # Int64List: its values packed as varints (negative ones in two's complement); field 3
    cache: dict[int, bytes] = {}
    digits = [
        cache[v] if v in cache else cache.setdefault(v, _varint(v & 0xFFFFFFFFFFFFFFFF))
        for v in values.astype(np.int64).tolist()
    ]
    bodies = [b"".join(digits[a:b]) for a, b in zip(bounds, bounds[1:])]
    lists = [b"\x0a" + _varint(len(body)) + body if body else b"" for body in bodies]
    return [b"\x1a" + _varint(len(x)) + x for x in lists]


def encode_examples(dtypes: Mapping[str, str], columns: Mapping[str, Column], rows: int) -> Array:
    """Serialized ``tf.train.Example`` s of typed columns, one per row, encoded on the wire by
    hand, column by column: a string field's values as a ``BytesList``, a float's as a
    ``FloatList`` (float32), an integer's as an ``Int64List``. A row without values of a
    sparse field holds an empty list, as the messages built one by one did.

    Example:
        >>> encode_examples({"x": "float32"}, {"x": np.array([1.5], dtype="float32")}, 1)[0].hex()
        '0a0f0a0d0a0178120812060a040000c03f'
    """
    entries: list[list[bytes]] = []
    for name, col in columns.items():
        values, starts = _row_values(col, rows)
        key = b"\x0a" + _varint(len(name.encode())) + name.encode() + b"\x12"
        entry = [key + _varint(len(f)) + f for f in _feature_lists(dtypes[name], values, starts, rows)]
        entries.append([b"\x0a" + _varint(len(e)) + e for e in entry])
    out = np.empty(rows, dtype=object)
    features = [b"".join(parts) for parts in zip(*entries)] if entries else [b""] * rows
    out[:] = [b"\x0a" + _varint(len(f)) + f for f in features]
    return out
