"""Feature columns derived from a schema.

They live with the trainer, which is their one user: ``tfship.schema`` describes features and
depends on nothing that builds models, so the schema never imports the trainer.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tfship._tf import tf
from tfship._wire import graph_name
from tfship.errors import SchemaError

if TYPE_CHECKING:
    from tfship.schema import Feature, Schema


def build_columns(schema: Schema, names: Iterable[str] | None = None) -> list[Any]:
    """Dense ``tf.feature_column``s for the chosen features (default: all) and the crosses among them.

    Example:
        >>> import tensorflow as tf
        >>> from tfship.schema import Schema
        >>> schema = Schema.from_dict({"label": {"name": "y", "kind": "binary"},
        ...     "features": [{"name": "x"}, {"name": "color", "dtype": "string", "use": {
        ...         "kind": "categorical", "vocabulary": ["red", "blue"], "as": "indicator"}}]})
        >>> [column.name for column in build_columns(schema)]
        ['x', 'color_indicator']
        >>> layer = tf.keras.layers.DenseFeatures(build_columns(schema))
    """
    _check_graph_names(schema)
    chosen = set(schema.feature_names if names is None else names)
    columns = [_dense_column(schema, f) for f in schema.features if f.name in chosen]
    for cross in schema.crosses:
        if set(cross["features"]) <= chosen:
            columns.append(_cross_column(schema, cross))
    return columns


def model_features(features: Mapping[str, Any]) -> dict[str, Any]:
    """The features dict with the keys the columns use (``graph_name`` of each feature)."""
    return {graph_name(key): value for key, value in features.items()}


def _check_graph_names(schema: Schema) -> None:
    seen: dict[str, str] = {}
    for f in schema.features:
        other = seen.setdefault(graph_name(f.name), f.name)
        if other != f.name:
            raise SchemaError(
                f"features {other!r} and {f.name!r} both become {graph_name(f.name)!r} inside "
                "TensorFlow's graph; rename one of them"
            )


def categorical_column(schema: Schema, f: Feature) -> Any:
    """The categorical column of a feature (bucketized counts as categorical)."""
    fc = tf().feature_column
    use, kind = f.use, f.use["kind"]
    dtype = tf().string if f.dtype == "string" else tf().int64
    if kind == "bucketized":
        return fc.bucketized_column(_numeric(f), boundaries=[float(b) for b in use["boundaries"]])
    if kind == "identity":
        return fc.categorical_column_with_identity(graph_name(f.name), use["num_buckets"], default_value=0)
    if kind == "hash":
        return fc.categorical_column_with_hash_bucket(graph_name(f.name), use["buckets"], dtype=dtype)
    if "vocabulary" in use:
        return fc.categorical_column_with_vocabulary_list(
            graph_name(f.name), use["vocabulary"], dtype=dtype, num_oov_buckets=1
        )
    path = _vocabulary_path(schema, f)
    return fc.categorical_column_with_vocabulary_file(
        graph_name(f.name), path, dtype=dtype, num_oov_buckets=1
    )


def _dense_column(schema: Schema, f: Feature) -> Any:
    if f.use["kind"] == "numeric":
        return _numeric(f)
    return _shown(categorical_column(schema, f), f.use)


def _numeric(f: Feature) -> Any:
    norm = f.use.get("normalize")
    normalizer = None
    if norm is not None:
        mean, std = float(norm["mean"]), float(norm["std"])

        def normalizer(x: Any) -> Any:
            # int64 features arrive uncast: the column casts only after normalising.
            return (tf().cast(x, tf().float32) - mean) / std

    shape = f.shape or (1,)
    default = f.default if f.use["kind"] == "numeric" else None
    return tf().feature_column.numeric_column(
        graph_name(f.name),
        shape=shape,
        default_value=default,
        dtype=tf().float32,
        normalizer_fn=normalizer,
    )


def _cross_column(schema: Schema, cross: Mapping[str, Any]) -> Any:
    keys: list[Any] = []
    for name in cross["features"]:
        f = schema.feature(name)
        keys.append(categorical_column(schema, f) if f.use["kind"] == "bucketized" else graph_name(name))
    crossed = tf().feature_column.crossed_column(keys, hash_bucket_size=cross["hash_buckets"])
    return _shown(crossed, cross)


def _shown(column: Any, use: Mapping[str, Any]) -> Any:
    if use.get("as", "indicator") == "embedding":
        return tf().feature_column.embedding_column(column, dimension=use["dimension"])
    return tf().feature_column.indicator_column(column)


def _vocabulary_path(schema: Schema, f: Feature) -> str:
    path = str(f.use["vocabulary_file"])
    if not os.path.isabs(path) and schema.base_dir:
        path = os.path.join(schema.base_dir, path)
    if not os.path.exists(path):
        raise SchemaError(f"feature {f.name!r}: vocabulary_file {path} does not exist")
    return path
