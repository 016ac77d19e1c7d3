"""Serving-input receivers built from one description of the features.

A receiver is what ``tf.estimator`` calls a ``serving_input_receiver_fn``: a function of no
argument, called inside the export graph, that creates the serving inputs and the features the
``model_fn`` sees. ``Receiver`` objects are such functions (so they also work with
``Estimator.export_saved_model``) and remember how they were built, so that the exporter can
describe them, write warmup requests for them and check the signatures they yield.

Sources accepted everywhere: a ``tfship.schema.Schema``, a parse spec (dict of
``tf.io.FixedLenFeature`` / ``VarLenFeature`` / ``RaggedFeature``), a list of feature columns, or
a dict of ``tf.TensorSpec`` / ``tf.SparseTensorSpec`` / ``tf.RaggedTensorSpec`` (first dimension
is the batch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tfship._tf import estimator, tf
from tfship._wire import graph_name
from tfship.schema import Schema

KINDS = ("parsing", "raw", "both")
DEFAULT_RECEIVER_KEY = "examples"
_PARSE_DTYPES = ("float32", "int64", "string")


@dataclass(frozen=True)
class Receiver:
    """A serving-input receiver function that knows how it was built.

    Call it (with no argument, inside a graph) to get a ``tf.estimator.export.ServingInputReceiver``.

    Attributes:
        kind: ``"parsing"``, ``"raw"`` or ``"both"``.
        tensor_specs: feature name -> ``tf.TensorSpec``-like spec (batch dimension first).
        parse_spec: feature name -> ``tf.io`` parsing feature, or ``None`` when the features
            cannot be parsed from ``tf.Example`` (raw receivers of other dtypes).
        receiver_key: input key of the serialized ``tf.Example`` tensor.
        default_batch_size: static batch size of every input (``None``: any).
        default: for ``both``, which receiver feeds the default signatures.
        alternative_name: for ``both``, the name of the other receiver (signature prefix).
        schema: the ``tfship.schema.Schema`` it came from, if any.

    Example:
        >>> import tensorflow as tf
        >>> r = raw_receiver({"x": tf.TensorSpec([None, 2], tf.float32)})
        >>> r.kind
        'raw'
    """

    kind: str
    tensor_specs: Mapping[str, Any]
    parse_spec: Mapping[str, Any] | None
    receiver_key: str = DEFAULT_RECEIVER_KEY
    default_batch_size: int | None = None
    default: str = "parsing"
    alternative_name: str | None = None
    schema: Schema | None = field(default=None, compare=False)

    def __call__(self) -> Any:
        """Create the serving inputs in the current graph; returns a ``ServingInputReceiver``."""
        receiver_cls = estimator().export.ServingInputReceiver
        if self.kind == "raw":
            placeholders = _raw_placeholders(self.tensor_specs, self.default_batch_size)
            return receiver_cls(features=dict(placeholders), receiver_tensors=placeholders)
        examples, features = self._parse()
        if self.kind == "parsing":
            return receiver_cls(features=features, receiver_tensors={self.receiver_key: examples})
        alt = self.alternative_name or ("raw" if self.default == "parsing" else "parsing")
        # Raw inputs of the combined receiver are the parse op's outputs: feeding them cuts
        # the parse off, so one graph serves both kinds of request.
        if self.default == "parsing":
            return receiver_cls(
                features=features,
                receiver_tensors={self.receiver_key: examples},
                receiver_tensors_alternatives={alt: dict(features)},
            )
        return receiver_cls(
            features=features,
            receiver_tensors=dict(features),
            receiver_tensors_alternatives={alt: {self.receiver_key: examples}},
        )

    def _parse(self) -> tuple[Any, dict[str, Any]]:
        t = tf()
        if self.parse_spec is None:
            raise ValueError(
                f"a {self.kind!r} receiver needs features that tf.Example can carry "
                f"(dtypes {', '.join(_PARSE_DTYPES)}); use receiver='raw'"
            )
        examples = t.compat.v1.placeholder(
            t.string, shape=[self.default_batch_size], name="input_example_tensor"
        )
        features = t.io.parse_example(examples, dict(self.parse_spec))
        return examples, dict(features)

    @property
    def input_kinds(self) -> dict[str, str]:
        """Feature name -> ``"dense"``, ``"sparse"`` or ``"ragged"`` (how a raw input arrives)."""
        return {name: _spec_kind(spec) for name, spec in self.tensor_specs.items()}

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary (kind, keys, features with dtype/shape/encoding).

        Example:
            >>> parsing_receiver({"x": tf().io.FixedLenFeature([], tf().float32)}).describe()["kind"]
            'parsing'
        """
        feats = {}
        for name, spec in self.tensor_specs.items():
            shape = spec.shape.as_list() if spec.shape.rank is not None else None
            feats[name] = {"dtype": spec.dtype.name, "shape": shape, "encoding": _spec_kind(spec)}
        out: dict[str, Any] = {"kind": self.kind, "features": feats}
        if self.kind != "raw":
            out["receiver_key"] = self.receiver_key
        if self.kind == "both":
            out["default"] = self.default
            out["alternative"] = self.alternative_name or ("raw" if self.default == "parsing" else "parsing")
        return out


def parsing_receiver(
    source: Any, *, receiver_key: str = DEFAULT_RECEIVER_KEY, default_batch_size: int | None = None
) -> Receiver:
    """A receiver of one string input of serialized ``tf.Example`` protos.

    Args:
        source: a Schema, parse spec, feature columns or dict of TensorSpecs.
        receiver_key: the input key of the serialized examples (tf.estimator: ``examples``).
        default_batch_size: static batch size of the input (``None``: any).

    Returns:
        A ``Receiver`` of kind ``parsing``.

    Example:
        >>> r = parsing_receiver({"x": tf().io.FixedLenFeature([], tf().float32)})
        >>> r.receiver_key
        'examples'
    """
    return build_receiver(source, "parsing", receiver_key=receiver_key, default_batch_size=default_batch_size)


def raw_receiver(source: Any, *, default_batch_size: int | None = None) -> Receiver:
    """A receiver of one input per feature, with its full dtype and shape.

    Variable-length features arrive as sparse inputs and ragged ones as ragged inputs; nothing is
    densified. The first dimension of every input is the batch. From feature columns, a
    categorical column takes one value per example (a dense ``[batch]`` input, which a JSON
    client sends as ``{"sex": "male"}``); only sequence columns give sparse inputs. TF
    Serving's Predict API cannot feed sparse or ragged inputs: the export warns, naming them.

    Example:
        >>> r = raw_receiver({"x": tf().TensorSpec([None, 3], tf().float32)})
        >>> r.describe()["features"]["x"]["shape"]
        [None, 3]
    """
    return build_receiver(source, "raw", default_batch_size=default_batch_size)


def both_receiver(
    source: Any,
    *,
    default: str = "parsing",
    receiver_key: str = DEFAULT_RECEIVER_KEY,
    alternative_name: str | None = None,
    default_batch_size: int | None = None,
) -> Receiver:
    """A receiver serving both serialized ``tf.Example``s and raw tensors in one export.

    ``default`` picks which one feeds the default signatures (``serving_default``, ...); the
    other becomes ``receiver_tensors_alternatives`` and yields signatures named
    ``"<alternative_name>:<output>"`` (e.g. ``raw:predict``). The raw inputs are those of
    ``raw_receiver``, and are the parse's outputs: from feature columns a categorical is a
    dense ``[batch]`` input, so a tf.Example may carry at most one value of it (a second one
    is refused; ``parsing_receiver`` reads any number).

    Example:
        >>> r = both_receiver({"x": tf().io.FixedLenFeature([], tf().float32)})
        >>> r.describe()["alternative"]
        'raw'
    """
    if default not in ("parsing", "raw"):
        raise ValueError(f"default must be 'parsing' or 'raw', got {default!r}")
    return build_receiver(
        source,
        "both",
        default=default,
        receiver_key=receiver_key,
        alternative_name=alternative_name,
        default_batch_size=default_batch_size,
    )


def build_receiver(source: Any, kind: str, **options: Any) -> Receiver:
    """Build a receiver of ``kind`` (``parsing``, ``raw`` or ``both``) from any source.

    Example:
        >>> build_receiver({"x": tf().io.FixedLenFeature([], tf().float32)}, "raw").kind
        'raw'
    """
    if isinstance(source, Receiver):
        return source
    if kind not in KINDS:
        raise ValueError(f"receiver kind must be one of {', '.join(KINDS)}; got {kind!r}")
    parse_spec, tensor_specs, schema = normalize_source(source)
    if kind == "both" and parse_spec is not None:
        parse_spec = _parse_as_raw(parse_spec, tensor_specs)
    if kind != "raw" and parse_spec is None:
        raise ValueError(
            f"receiver {kind!r} parses tf.Example, which carries only "
            f"{', '.join(_PARSE_DTYPES)} features; use 'raw' for these features"
        )
    batch = options.get("default_batch_size")
    if batch is not None and (not isinstance(batch, int) or batch <= 0):
        raise ValueError(f"default_batch_size must be a positive int or None, got {batch!r}")
    return Receiver(
        kind=kind,
        tensor_specs=tensor_specs,
        parse_spec=parse_spec,
        schema=schema,
        **options,
    )


def normalize_source(source: Any) -> tuple[dict[str, Any] | None, dict[str, Any], Schema | None]:
    """Return ``(parse_spec or None, tensor_specs, schema or None)`` for any accepted source."""
    t = tf()
    if isinstance(source, Schema):
        return dict(source.parse_spec()), dict(source.tensor_specs()), source
    if isinstance(source, (list, tuple)):
        spec = dict(t.feature_column.make_parse_example_spec(list(source)))
        return spec, _specs_from_columns(list(source), spec), None
    if not isinstance(source, Mapping) or not source:
        raise TypeError(
            "a receiver needs a Schema, a parse spec, feature columns or a dict of TensorSpecs; "
            f"got {type(source).__name__}"
        )
    parse_types = (t.io.FixedLenFeature, t.io.VarLenFeature, t.io.RaggedFeature)
    if all(isinstance(v, parse_types) for v in source.values()):
        spec = dict(source)
        return spec, _specs_from_parse(spec), None
    if all(isinstance(v, t.TypeSpec) for v in source.values()):
        specs = {str(k): v for k, v in source.items()}
        for name, spec in specs.items():
            _check_tensor_spec(name, spec)
        return _parse_from_specs(specs), specs, None
    bad = {k: type(v).__name__ for k, v in source.items()}
    raise TypeError(
        f"a feature dict must hold only tf.io parsing features or only tf.TensorSpec-like specs; got {bad}"
    )


def _specs_from_parse(spec: Mapping[str, Any]) -> dict[str, Any]:
    t = tf()
    out: dict[str, Any] = {}
    for name, feat in spec.items():
        if isinstance(feat, t.io.FixedLenFeature):
            out[name] = t.TensorSpec([None, *feat.shape], feat.dtype, name=name)
        elif isinstance(feat, t.io.VarLenFeature):
            out[name] = t.SparseTensorSpec([None, None], feat.dtype)
        else:
            out[name] = t.RaggedTensorSpec(
                [None, None], feat.dtype, ragged_rank=1, row_splits_dtype=feat.row_splits_dtype
            )
    return out


def _specs_from_columns(columns: list[Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    # Feature columns parse every categorical feature as variable-length, so their raw inputs
    # would all be sparse, which TF Serving's Predict API cannot feed. A categorical column
    # takes one value per example as a dense [batch] input ({"sex": "male"} in a request);
    # only sequence columns really need a variable number of values.
    t = tf()
    specs = _specs_from_parse(spec)
    sequence = _sequence_keys(columns)
    for name, feat in spec.items():
        if isinstance(feat, t.io.VarLenFeature) and name not in sequence:
            specs[name] = t.TensorSpec([None], feat.dtype, name=name)
    return specs


# What feature columns take for "no value" in a dense categorical input (they drop it).
_NO_VALUE = {"string": "", "int64": -1, "float32": 0.0}


def _parse_as_raw(spec: Mapping[str, Any], tensor_specs: Mapping[str, Any]) -> dict[str, Any]:
    # The raw inputs of a combined receiver are its parse outputs, so each feature is parsed
    # into its raw input's encoding: a feature-column categorical (variable-length in the
    # columns' parse spec, a dense [batch] raw input) is parsed as one value per example, and
    # a tf.Example without it gives the value the columns ignore.
    t = tf()
    out = dict(spec)
    for name, feat in spec.items():
        raw = tensor_specs[name]
        if isinstance(feat, t.io.VarLenFeature) and _spec_kind(raw) == "dense":
            out[name] = t.io.FixedLenFeature(
                raw.shape[1:].as_list(), feat.dtype, default_value=_NO_VALUE[feat.dtype.name]
            )
    return out


def _sequence_keys(columns: list[Any]) -> set[str]:
    keys: set[str] = set()
    stack: list[Any] = list(columns)
    while stack:
        column = stack.pop()
        if isinstance(column, str):
            continue
        if type(column).__name__.startswith("Sequence"):
            keys.update(column.parse_example_spec)
        stack.extend(getattr(column, "parents", ()))
    return keys


def _parse_from_specs(specs: Mapping[str, Any]) -> dict[str, Any] | None:
    t = tf()
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        if spec.dtype.name not in _PARSE_DTYPES:
            return None
        kind = _spec_kind(spec)
        if kind == "sparse":
            out[name] = t.io.VarLenFeature(spec.dtype)
        elif kind == "ragged":
            out[name] = t.io.RaggedFeature(spec.dtype, row_splits_dtype=spec.row_splits_dtype)
        elif not spec.shape[1:].is_fully_defined():
            return None
        else:
            out[name] = t.io.FixedLenFeature(spec.shape[1:].as_list(), spec.dtype)
    return out


def _check_tensor_spec(name: str, spec: Any) -> None:
    t = tf()
    if not isinstance(spec, (t.TensorSpec, t.SparseTensorSpec, t.RaggedTensorSpec)):
        raise TypeError(f"feature {name!r}: unsupported spec {type(spec).__name__}")
    if spec.shape.rank is None or spec.shape.rank < 1:
        raise ValueError(
            f"feature {name!r}: the first dimension of a spec is the batch, so its rank must "
            f"be at least 1; got shape {spec.shape}"
        )


def _spec_kind(spec: Any) -> str:
    t = tf()
    if isinstance(spec, t.SparseTensorSpec):
        return "sparse"
    if isinstance(spec, t.RaggedTensorSpec):
        return "ragged"
    return "dense"


def _raw_placeholders(specs: Mapping[str, Any], batch: int | None) -> dict[str, Any]:
    t = tf()
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        shape = [batch, *spec.shape.as_list()[1:]]
        kind = _spec_kind(spec)
        if kind == "sparse":
            out[name] = t.compat.v1.sparse_placeholder(spec.dtype, shape=shape, name=graph_name(name))
        elif kind == "ragged":
            out[name] = t.compat.v1.ragged.placeholder(
                spec.dtype,
                spec.ragged_rank,
                value_shape=spec.shape[spec.ragged_rank + 1 :],
                name=graph_name(name),
            )
        else:
            out[name] = t.compat.v1.placeholder(spec.dtype, shape=shape, name=graph_name(name))
    return out
