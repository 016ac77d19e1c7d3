"""The schema: features, label, crosses and groups, read and written as JSON, seen by
TensorFlow as a parse spec or tensor specs, and converting records by the value rule."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfship._files import write_atomically
from tfship._values import CsvMissing, field_values
from tfship.errors import DataError, SchemaError
from tfship.schema._features import Feature, Label
from tfship.schema._parse import _parse_feature, _parse_label, _validate_cross


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


def _convert_value(f: Feature, value: Any, where: str, csv: CsvMissing | None) -> list[Any]:
    if f.default is None:
        default = None
    else:
        default = list(f.default) if isinstance(f.default, list) else [f.default] * (f.size or 1)
    try:
        return field_values(f.name, f.dtype, f.shape, default, value, csv)
    except ValueError as exc:
        raise DataError(f"{_at(where)}{exc}") from None
