"""One feature schema: the spine that the trainer, receivers, loaders and warmup share.

A schema is one JSON file::

    {"version": 1,
     "label": {"name": "species", "kind": "multiclass", "vocabulary": ["Adelie", "Gentoo"]},
     "features": [
       {"name": "bill_length_mm", "dtype": "float32", "shape": [], "default": 43.9,
        "use": {"kind": "numeric", "normalize": {"mean": 43.9, "std": 5.4}}},
       {"name": "island", "dtype": "string", "default": "",
        "use": {"kind": "categorical", "vocabulary": ["Biscoe", "Dream"], "as": "indicator"}}
     ],
     "crosses": [{"features": ["island", "sex"], "hash_buckets": 16, "as": "indicator"}],
     "groups": {"user": ["island"], "item": ["bill_length_mm"]}}

``dtype`` is ``float32``, ``int64`` or ``string``. ``shape`` is ``[]`` (one value per example, the
default), ``[k]`` (exactly k values) or ``null`` (any number of values: a sparse feature).
``use.kind`` is ``numeric`` (optional ``normalize`` with ``mean``/``std``), ``bucketized``
(``boundaries``), ``categorical`` (``vocabulary`` or ``vocabulary_file``), ``identity``
(``num_buckets``) or ``hash`` (``buckets``); a numeric or bucketized feature, and a regression
label, may record the ``range`` (``[min, max]``) seen in the data; categorical kinds are shown
to the model ``as`` ``indicator`` or ``embedding`` (with ``dimension``). ``groups`` name feature groups (the
``two_tower`` model's ``user`` and ``item`` towers).

Example:
    >>> s = Schema.from_dict({"label": {"name": "y", "kind": "regression"},
    ...                       "features": [{"name": "x", "dtype": "float32", "default": 0.0}]})
    >>> s.convert_record({"x": "2.5"})
    {'x': [2.5]}
    >>> s.convert_record({"x": "NA"}, csv=CsvMissing())
    {'x': [0.0]}
"""

from __future__ import annotations

import csv
import difflib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tfship._files import write_atomically

# The value and missing rules have their one home in ``tfship._values``; these are their
# public spellings.
from tfship._values import (
    NA_VALUES,
    CsvMissing,
    coerce_value,
    csv_column_dtype,
    field_values,
    is_missing,
    overflows,
)
from tfship.errors import DataError, SchemaError

__all__ = [
    "CsvLineError",
    "CsvMissing",
    "DTYPES",
    "Feature",
    "HEADER_REPEATED",
    "LABEL_KINDS",
    "Label",
    "MissingColumnError",
    "NA_VALUES",
    "Schema",
    "USE_KINDS",
    "coerce_value",
    "csv_column_dtype",
    "csv_line_cells",
    "did_you_mean",
    "field_values",
    "is_missing",
    "nearest_name",
    "overflows",
    "read_csv_header",
]

DTYPES = ("float32", "int64", "string")
"""The dtypes a feature may have."""
LABEL_KINDS = ("binary", "multiclass", "regression")
"""The kinds of label, each with its ``tf.estimator`` Head."""
USE_KINDS = ("numeric", "bucketized", "categorical", "identity", "hash")
"""The ways a feature is shown to the model (its ``use.kind``)."""
_CATEGORICAL_KINDS = ("categorical", "identity", "hash")
_SHOWN_AS = ("indicator", "embedding")

# Python's csv module refuses a cell over 128 KiB unless told otherwise, and a free-text
# column can hold more; every CSV reader of tfship imports this module, so none has the cap.
CSV_FIELD_LIMIT = 2**31 - 1
csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))


@dataclass(frozen=True)
class Label:
    """The label: what the model predicts, and so which ``tf.estimator`` Head trains it.

    Example:
        >>> Label("species", "multiclass", ("Adelie", "Gentoo")).dtype
        'string'
    """

    name: str
    kind: str
    vocabulary: tuple[str, ...] | None = None
    #: a regression label's (mean, std) in the training data: the model learns the label
    #: standardised and answers in its own units
    scale: tuple[float, float] | None = None
    #: a regression label's smallest and largest value in the training data; written as
    #: integers (2700, not 2700.0) they say the label is a whole number
    range: tuple[float, float] | None = None

    @property
    def dtype(self) -> str:
        """The label's dtype in data: strings with a vocabulary, 0/1 ints, or floats."""
        if self.vocabulary is not None:
            return "string"
        return "int64" if self.kind != "regression" else "float32"

    @property
    def n_classes(self) -> int:
        """Number of classes (1 for regression, where the model has one output)."""
        if self.kind == "binary":
            return 2
        if self.kind == "multiclass":
            return len(self.vocabulary or ())
        return 1

    def to_dict(self) -> dict[str, Any]:
        """The label as it appears in the schema file."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.vocabulary is not None:
            out["vocabulary"] = list(self.vocabulary)
        if self.scale is not None:
            out["scale"] = {"mean": self.scale[0], "std": self.scale[1]}
        if self.range is not None:
            out["range"] = list(self.range)
        return out


@dataclass(frozen=True)
class Feature:
    """One input feature: its dtype, shape, default and how the model uses it.

    Example:
        >>> f = Feature("age", "float32", (), 30.0, {"kind": "numeric"})
        >>> f.is_sparse, f.required
        (False, False)
    """

    name: str
    dtype: str = "float32"
    shape: tuple[int, ...] | None = ()
    default: Any = None
    use: Mapping[str, Any] = field(default_factory=lambda: {"kind": "numeric"})

    @property
    def is_sparse(self) -> bool:
        """True for variable-length features (``shape: null``), parsed as SparseTensors."""
        return self.shape is None

    @property
    def required(self) -> bool:
        """True when a record must carry this feature (fixed shape and no default)."""
        return self.shape is not None and self.default is None

    @property
    def size(self) -> int | None:
        """Number of values per example, or None for variable length."""
        return None if self.shape is None else math.prod(self.shape)

    def to_dict(self) -> dict[str, Any]:
        """The feature as it appears in the schema file."""
        out: dict[str, Any] = {
            "name": self.name,
            "dtype": self.dtype,
            "shape": None if self.shape is None else list(self.shape),
        }
        if self.default is not None:
            out["default"] = self.default
        out["use"] = dict(self.use)
        return out


@dataclass(frozen=True)
class Schema:
    """Features and label of a model, read once and used by every part of tfship.

    Example:
        >>> s = Schema.from_dict({"label": {"name": "y", "kind": "binary"},
        ...                       "features": [{"name": "x"}]})
        >>> s.feature_names
        ['x']
    """

    label: Label
    features: tuple[Feature, ...]
    crosses: tuple[Mapping[str, Any], ...] = ()
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    base_dir: str | None = None

    # ---- reading and writing -------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Schema:
        """Read and validate a schema JSON file.

        Raises:
            SchemaError: the file is missing, not JSON, or describes an invalid feature.
        """
        p = Path(path)
        try:
            data = json.loads(p.read_text())
        except FileNotFoundError:
            raise SchemaError(f"schema file {p} does not exist") from None
        except json.JSONDecodeError as exc:
            raise SchemaError(f"schema file {p} is not valid JSON: {exc}") from None
        return cls.from_dict(data, base_dir=str(p.resolve().parent))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, base_dir: str | None = None) -> Schema:
        """Build and validate a schema from its JSON form.

        Raises:
            SchemaError: naming the feature (or label) and what is wrong with it.
        """
        if not isinstance(data, Mapping):
            raise SchemaError(f"a schema is a JSON object, found {type(data).__name__}")
        unknown = set(data) - {"version", "label", "features", "crosses", "groups"}
        if unknown:
            raise SchemaError(f"schema has unknown keys {sorted(unknown)}")
        if data.get("version", 1) != 1:
            raise SchemaError(f"schema version {data.get('version')!r} is not supported (1 is)")
        label = _parse_label(data.get("label"))
        raw_features = data.get("features")
        if not isinstance(raw_features, list) or not raw_features:
            raise SchemaError("schema 'features' must be a non-empty list")
        features = tuple(_parse_feature(f, i) for i, f in enumerate(raw_features))
        schema = cls(
            label=label,
            features=features,
            crosses=tuple(data.get("crosses") or ()),
            groups={k: tuple(v) for k, v in (data.get("groups") or {}).items()},
            base_dir=base_dir,
        )
        schema._validate_relations()
        return schema

    def to_dict(self) -> dict[str, Any]:
        """The schema's JSON form; ``Schema.from_dict(s.to_dict()) == s`` up to ``base_dir``."""
        return {
            "version": 1,
            "label": self.label.to_dict(),
            "features": [f.to_dict() for f in self.features],
            "crosses": [dict(c) for c in self.crosses],
            "groups": {k: list(v) for k, v in self.groups.items()},
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the schema as indented JSON, atomically."""
        write_atomically(path, json.dumps(self.to_dict(), indent=2) + "\n")

    # ---- lookup --------------------------------------------------------------------------
    @property
    def feature_names(self) -> list[str]:
        """Names of the features, in schema order."""
        return [f.name for f in self.features]

    def feature(self, name: str) -> Feature:
        """The feature called ``name``.

        Raises:
            KeyError: listing the feature names that exist.
        """
        for f in self.features:
            if f.name == name:
                return f
        raise KeyError(f"no feature {name!r}; features are {self.feature_names}")

    # ---- TensorFlow views ----------------------------------------------------------------
    def parse_spec(self, include_label: bool = False) -> dict[str, Any]:
        """The ``tf.io.parse_example`` spec of the features (and the label if asked).

        Example:
            >>> s = Schema.from_dict({"label": {"name": "y", "kind": "regression"},
            ...                       "features": [{"name": "x", "dtype": "float32", "default": 0.0}]})
            >>> s.parse_spec(include_label=True)
            {'x': FixedLenFeature(shape=(), dtype=tf.float32, default_value=0.0),
             'y': FixedLenFeature(shape=[], dtype=tf.float32, default_value=None)}
        """
        from tfship._tf import tf

        t = tf()
        spec: dict[str, Any] = {}
        for f in self.features:
            dtype = _tf_dtype(f.dtype)
            if f.shape is None:
                spec[f.name] = t.io.VarLenFeature(dtype)
            else:
                default = None if f.default is None else _default_tensor_value(f)
                spec[f.name] = t.io.FixedLenFeature(f.shape, dtype, default_value=default)
        if include_label:
            spec[self.label.name] = t.io.FixedLenFeature([], _tf_dtype(self.label.dtype))
        return spec

    def tensor_specs(self) -> dict[str, Any]:
        """One ``tf.TensorSpec`` (or ``SparseTensorSpec``) per feature, batch dimension first."""
        from tfship._tf import tf

        t = tf()
        specs: dict[str, Any] = {}
        for f in self.features:
            dtype = _tf_dtype(f.dtype)
            if f.shape is None:
                specs[f.name] = t.SparseTensorSpec([None, None], dtype)
            else:
                specs[f.name] = t.TensorSpec([None, *f.shape], dtype, name=f.name)
        return specs

    # ---- records -------------------------------------------------------------------------
    def convert_record(
        self, record: Mapping[str, Any], *, where: str = "", csv: CsvMissing | None = None
    ) -> dict[str, list[Any]]:
        """Turn one CSV or JSON record into lists of feature values, defaults filled in.

        Args:
            record: field name to value; CSV cells are strings, JSON values are typed.
            where: where the record came from (``file.csv:12``), for error messages.
            csv: for a CSV row, which cells are missing (and ``|`` splits multi-valued
                cells); ``None`` for typed records, where only None is missing.

        Raises:
            DataError: naming the record, the field and what was expected.
        """
        return {f.name: _convert_value(f, record.get(f.name), where, csv) for f in self.features}

    def convert_label(
        self, record: Mapping[str, Any], *, where: str = "", csv: CsvMissing | None = None
    ) -> Any:
        """The label value of a record, checked against the label's kind and vocabulary."""
        label = self.label
        feature = Feature(label.name, label.dtype, (), None, {"kind": "numeric"})
        (value,) = _convert_value(feature, record.get(label.name), where, csv)
        if label.vocabulary is not None and value not in label.vocabulary:
            raise DataError(
                f"{_at(where)}label {label.name!r}: {value!r} is not one of {list(label.vocabulary)}"
            )
        if label.vocabulary is None and label.kind == "binary" and value not in (0, 1):
            raise DataError(f"{_at(where)}label {label.name!r}: expected 0 or 1, found {value!r}")
        return value

    # ---- validation ----------------------------------------------------------------------
    def _validate_relations(self) -> None:
        names = self.feature_names
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SchemaError(f"features {dupes} are declared more than once")
        if self.label.name in names:
            raise SchemaError(f"label {self.label.name!r} is also declared as a feature")
        for i, cross in enumerate(self.crosses):
            _validate_cross(cross, i, set(names))
        for group, members in self.groups.items():
            missing = [m for m in members if m not in names]
            if missing:
                raise SchemaError(f"group {group!r} names unknown features {missing}")


def _at(where: str) -> str:
    return f"{where}: " if where else ""


def _tf_dtype(name: str) -> Any:
    from tfship._tf import tf

    return {"float32": tf().float32, "int64": tf().int64, "string": tf().string}[name]


def _default_tensor_value(f: Feature) -> Any:
    size = f.size or 1
    value = f.default if isinstance(f.default, list) else [f.default] * size
    return value if f.shape else value[0]


# ---- parsing the JSON form -------------------------------------------------------------------
def _parse_label(raw: Any) -> Label:
    if not isinstance(raw, Mapping):
        raise SchemaError("schema 'label' must be an object with 'name' and 'kind'")
    name, kind = raw.get("name"), raw.get("kind")
    if not isinstance(name, str) or not name:
        raise SchemaError("label: 'name' must be a non-empty string")
    if kind not in LABEL_KINDS:
        raise SchemaError(f"label {name!r}: kind {kind!r} is not one of {list(LABEL_KINDS)}")
    vocab = raw.get("vocabulary")
    if vocab is not None:
        if kind == "regression":
            raise SchemaError(f"label {name!r}: a regression label has no vocabulary")
        _check_vocabulary(vocab, f"label {name!r}", str)
        vocab = tuple(vocab)
    if kind == "multiclass" and (vocab is None or len(vocab) < 2):
        raise SchemaError(f"label {name!r}: a multiclass label needs a vocabulary of 2+ classes")
    if kind == "binary" and vocab is not None and len(vocab) != 2:
        raise SchemaError(f"label {name!r}: a binary vocabulary has 2 classes, found {len(vocab)}")
    observed = raw.get("range")
    if observed is not None:
        if kind != "regression":
            raise SchemaError(f"label {name!r}: range: only a regression label has a range")
        observed = tuple(_parse_range(observed, f"label {name!r}"))
    return Label(name, kind, vocab, _parse_scale(raw.get("scale"), name, kind), observed)


def _parse_range(raw: Any, where: str) -> list[float]:
    """A ``[min, max]`` seen in the data: two finite numbers, the first not above the second."""
    ok = isinstance(raw, list) and len(raw) == 2 and all(_is_number(v) and math.isfinite(v) for v in raw)
    if not ok or raw[0] > raw[1]:
        raise SchemaError(f"{where}: range must be [min, max], two numbers with min <= max, found {raw!r}")
    return list(raw)


def _parse_scale(raw: Any, name: str, kind: str) -> tuple[float, float] | None:
    if raw is None:
        return None
    where = f"label {name!r}: scale"
    if kind != "regression":
        raise SchemaError(f"{where}: only a regression label is scaled")
    if not isinstance(raw, Mapping) or set(raw) != {"mean", "std"}:
        raise SchemaError(f"{where} must be an object with 'mean' and 'std'")
    mean, std = raw["mean"], raw["std"]
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (mean, std))
    if not numbers or not math.isfinite(mean) or not math.isfinite(std) or std <= 0:
        raise SchemaError(f"{where}: expected a finite mean and a positive std, found {dict(raw)}")
    return float(mean), float(std)


def _parse_feature(raw: Any, index: int) -> Feature:
    if not isinstance(raw, Mapping):
        raise SchemaError(f"features[{index}] must be an object, found {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SchemaError(f"features[{index}]: 'name' must be a non-empty string")
    where = f"feature {name!r}"
    unknown = set(raw) - {"name", "dtype", "shape", "default", "use"}
    if unknown:
        raise SchemaError(f"{where}: unknown keys {sorted(unknown)}")
    dtype = raw.get("dtype", "float32")
    if dtype not in DTYPES:
        raise SchemaError(f"{where}: dtype {dtype!r} is not one of {list(DTYPES)}")
    shape = _parse_shape(raw.get("shape", []), where)
    default_use = {"kind": "numeric"} if dtype != "string" else {"kind": "hash", "buckets": 100}
    use = dict(raw.get("use") or default_use)
    feature = Feature(name, dtype, shape, raw.get("default"), use)
    _validate_use(feature, where)
    _validate_default(feature, where)
    return feature


def _parse_shape(raw: Any, where: str) -> tuple[int, ...] | None:
    if raw is None:
        return None
    ok = isinstance(raw, list) and all(isinstance(d, int) and d > 0 for d in raw)
    if not ok:
        raise SchemaError(f"{where}: shape must be a list of positive ints or null, found {raw!r}")
    return tuple(raw)


def _validate_use(f: Feature, where: str) -> None:
    kind = f.use.get("kind")
    if kind not in USE_KINDS:
        raise SchemaError(f"{where}: use.kind {kind!r} is not one of {list(USE_KINDS)}")
    if kind in ("numeric", "bucketized"):
        if f.dtype == "string":
            raise SchemaError(f"{where}: a {kind} feature needs dtype float32 or int64, not string")
        if f.is_sparse:
            raise SchemaError(f"{where}: a {kind} feature needs a fixed shape, not null")
        if "range" in f.use:
            _parse_range(f.use["range"], where)
    elif "range" in f.use:
        raise SchemaError(f"{where}: range is for numeric and bucketized features, not {kind}")
    if kind == "numeric" and "normalize" in f.use:
        norm = f.use["normalize"]
        ok = isinstance(norm, Mapping) and _is_number(norm.get("mean")) and _is_number(norm.get("std"))
        if not ok or not norm["std"] > 0:
            raise SchemaError(f"{where}: normalize needs numbers 'mean' and 'std' > 0, found {norm!r}")
    if kind == "bucketized":
        b = f.use.get("boundaries")
        if not isinstance(b, list) or not b or not all(_is_number(x) for x in b) or b != sorted(set(b)):
            raise SchemaError(f"{where}: boundaries must be a non-empty increasing list of numbers")
    if kind == "categorical":
        _validate_vocabulary_use(f, where)
    if kind == "identity":
        if f.dtype != "int64":
            raise SchemaError(f"{where}: an identity feature needs dtype int64, not {f.dtype}")
        _check_positive(f.use.get("num_buckets"), f"{where}: num_buckets")
    if kind == "hash":
        _check_positive(f.use.get("buckets"), f"{where}: buckets")
        if f.dtype == "float32":
            raise SchemaError(f"{where}: hash buckets need dtype string or int64, not float32")
    if kind in _CATEGORICAL_KINDS or kind == "bucketized":
        _validate_shown_as(f.use, where, default="indicator")


def _validate_vocabulary_use(f: Feature, where: str) -> None:
    vocab, vfile = f.use.get("vocabulary"), f.use.get("vocabulary_file")
    if (vocab is None) == (vfile is None):
        raise SchemaError(f"{where}: a categorical feature needs one of vocabulary or vocabulary_file")
    if f.dtype == "float32":
        raise SchemaError(f"{where}: a categorical feature needs dtype string or int64, not float32")
    if vocab is not None:
        _check_vocabulary(vocab, where, str if f.dtype == "string" else int)
    elif not isinstance(vfile, str) or not vfile:
        raise SchemaError(f"{where}: vocabulary_file must be a path")


def _validate_shown_as(use: Mapping[str, Any], where: str, default: str) -> None:
    shown = use.get("as", default)
    if shown not in _SHOWN_AS:
        raise SchemaError(f"{where}: 'as' {shown!r} is not one of {list(_SHOWN_AS)}")
    if shown == "embedding":
        _check_positive(use.get("dimension"), f"{where}: embedding dimension")


def _validate_default(f: Feature, where: str) -> None:
    if f.default is None:
        return
    values = f.default if isinstance(f.default, list) else [f.default]
    if isinstance(f.default, list) and f.shape is not None and len(values) != (f.size or 1):
        raise SchemaError(f"{where}: default has {len(values)} values, shape {list(f.shape)} needs {f.size}")
    for v in values:
        try:
            coerce_value(f.dtype, v)
        except (TypeError, ValueError):
            raise SchemaError(f"{where}: default {f.default!r} is not a valid {f.dtype}") from None


def _validate_cross(cross: Any, index: int, names: set[str]) -> None:
    where = f"crosses[{index}]"
    if not isinstance(cross, Mapping):
        raise SchemaError(f"{where} must be an object with 'features' and 'hash_buckets'")
    members = cross.get("features")
    if not isinstance(members, list) or len(members) < 2:
        raise SchemaError(f"{where}: 'features' must list 2 or more features")
    missing = [m for m in members if m not in names]
    if missing:
        raise SchemaError(f"{where}: unknown features {missing}")
    _check_positive(cross.get("hash_buckets"), f"{where}: hash_buckets")
    _validate_shown_as(cross, where, default="indicator")


def _check_vocabulary(vocab: Any, where: str, kind: type) -> None:
    if not isinstance(vocab, list) or not vocab or not all(isinstance(v, kind) for v in vocab):
        raise SchemaError(f"{where}: vocabulary must be a non-empty list of {kind.__name__}")
    if len(set(vocab)) != len(vocab):
        raise SchemaError(f"{where}: vocabulary has duplicate entries")


def _check_positive(value: Any, where: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise SchemaError(f"{where} must be a positive integer, found {value!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _convert_value(f: Feature, value: Any, where: str, csv: CsvMissing | None) -> list[Any]:
    if f.default is None:
        default = None
    else:
        default = list(f.default) if isinstance(f.default, list) else [f.default] * (f.size or 1)
    try:
        return field_values(f.name, f.dtype, f.shape, default, value, csv)
    except ValueError as exc:
        raise DataError(f"{_at(where)}{exc}") from None


# ---- file headers ----------------------------------------------------------------------------
def read_csv_header(stream: IO[bytes]) -> list[str]:
    """The column names on the first line of a binary CSV stream, which is left after that line.

    A UTF-8 byte-order mark (what spreadsheets write as "CSV UTF-8") is not part of the first
    name: every CSV reader of tfship takes its header from here, so inference, training and
    prediction see the same names. An empty file has no names.

    Example:
        >>> import io
        >>> read_csv_header(io.BytesIO(b"\\xef\\xbb\\xbfage,name\\n39,Ann\\n"))
        ['age', 'name']
    """
    raw = stream.readline()
    try:
        line = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        where = getattr(stream, "name", "the CSV file")
        raise DataError(f"{where}:1: {_not_utf8(exc)}") from None
    return next(csv.reader([line]), [])


def _not_utf8(exc: UnicodeDecodeError) -> str:
    byte = exc.object[exc.start : exc.start + 1].hex()
    return (
        f"not UTF-8 text (byte 0x{byte} at byte {exc.start + 1} of the line): "
        f'expected UTF-8; save the file as UTF-8 (a spreadsheet\'s "CSV UTF-8")'
    )


#: why a data line equal to the header is not a row
HEADER_REPEATED = "the header repeated (files joined with their headers?): not a row"


def csv_line_cells(line: bytes, names: Sequence[str]) -> list[str] | None:
    """The cells of one data line of a CSV file, by the one rule every CSV reader follows.

    ``line`` is the line's bytes without its line end (a trailing ``\\r`` is dropped here).
    A blank line (spaces at most) is no row and gives None; every reader skips it and says so.
    A line that is not UTF-8, cannot be parsed, has another number of cells than ``names``,
    or repeats the header is a bad row: ``CsvLineError`` says why, without file or line.

    Example:
        >>> csv_line_cells(b"1,Ann\\r", ["age", "name"])
        ['1', 'Ann']
        >>> csv_line_cells(b"  ", ["age", "name"]) is None
        True
        >>> csv_line_cells(b"age,name", ["age", "name"])
        Traceback (most recent call last):
        ...
        tfship.schema.CsvLineError: the header repeated (files joined with their headers?): not a row
    """
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CsvLineError(_not_utf8(exc)) from None
    try:
        cells = next(csv.reader([text], strict=True), [])
    except csv.Error as exc:
        raise CsvLineError(f"unparseable CSV line: {exc}") from None
    if len(cells) != len(names):
        raise CsvLineError(f"expected {len(names)} CSV cells (as in the header), found {len(cells)}")
    if cells == list(names):
        raise CsvLineError(HEADER_REPEATED)
    return cells


class CsvLineError(DataError):
    """Raised when a data line of a CSV file is not a row; the message says why (no place)."""


def nearest_name(name: str, names: Iterable[str]) -> str | None:
    """The name in ``names`` closest to a misspelled ``name`` (case first), or None.

    Example:
        >>> nearest_name("age", ["Name", "Age"])
        'Age'
    """
    candidates = list(names)
    same_case = [n for n in candidates if n.lower() == name.lower()]
    if same_case:
        return same_case[0]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean 'Age'?)`` for a misspelled name, or ``""``."""
    close = nearest_name(name, names)
    return f" (did you mean {close!r}?)" if close is not None else ""


class MissingColumnError(DataError):
    """Raised when a data file lacks a column of the schema; names it and the nearest name.

    ``candidates`` are the columns the nearest name is chosen from (default: all of them;
    a caller leaves out those the schema already uses).

    ``fillable`` is true when every missing column has a default (or takes any number of
    values), so the file can be read with the defaults filled in if the caller asks for it.
    """

    def __init__(
        self,
        source: str,
        missing: Sequence[str],
        columns: Sequence[str],
        *,
        fillable: bool,
        where: str = "the schema",
        candidates: Sequence[str] | None = None,
    ) -> None:
        first = missing[0]
        hint = did_you_mean(first, columns if candidates is None else candidates)
        more = f"; missing too: {', '.join(map(repr, missing[1:]))}" if len(missing) > 1 else ""
        why = (
            f"a feature of {where}: every row would take its default"
            if fillable
            else f"required by {where} (no default)"
        )
        shown = ", ".join(columns) if columns else "no columns"
        super().__init__(f"{source}: no column {first!r}{hint}, {why}{more}; the file has: {shown}")
        self.source = source
        self.missing = list(missing)
        self.fillable = fillable

    def with_option(self, option: str) -> MissingColumnError:
        """This error, ending with the option that fills the columns (when it can), for a command."""
        if self.fillable:
            self.args = (f"{self}; {option} fills them with their defaults",)
        return self
