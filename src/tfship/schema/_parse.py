"""Parsing the JSON form of a schema: its label, features and crosses, each checked with a
message naming it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tfship._values import coerce_value
from tfship.errors import SchemaError
from tfship.schema._features import DTYPES, LABEL_KINDS, USE_KINDS, Feature, Label

_CATEGORICAL_KINDS = ("categorical", "identity", "hash")
_SHOWN_AS = ("indicator", "embedding")


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
