"""The ``model_fn``: a Keras model computes logits, a ``tf.estimator`` Head does the rest."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tfship._tf import estimator, tf
from tfship.errors import SchemaError
from tfship.schema import Label, Schema
from tfship.trainer._columns import build_columns, model_features

MODEL_KINDS = ("linear", "dnn", "two_tower")
"""The Keras models ``ModelOptions(kind=...)`` builds."""
#: optimisers by name (Keras' legacy ones: Heads call ``optimizer.get_updates()``)
OPTIMIZERS = ("adagrad", "adam", "rmsprop", "sgd")


@dataclass(frozen=True)
class ModelOptions:
    """The model's shape and optimiser.

    ``two_tower`` builds one DNN tower per feature group (``user`` and ``item`` in the
    schema's ``groups``), L2-normalises both and scores the pair by their dot product.

    Example:
        >>> ModelOptions(kind="dnn", hidden_units=(32, 16)).learning_rate
        0.01
    """

    kind: str = "dnn"
    hidden_units: tuple[int, ...] = (32, 16)
    activation: str = "relu"
    dropout: float = 0.0
    batch_norm: bool = False
    tower_dim: int = 16
    learning_rate: float = 0.01
    optimizer: str = "adam"
    towers: tuple[str, str] = field(default=("user", "item"))
    #: learn a regression label standardised by the schema's label scale (predictions stay in
    #: the label's units); False trains on the raw values
    label_scaling: bool = True

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"model kind {self.kind!r} is not one of {list(MODEL_KINDS)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), found {self.dropout}")
        if any(u <= 0 for u in self.hidden_units):
            raise ValueError(f"hidden units must be positive, found {list(self.hidden_units)}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer {self.optimizer!r} is not one of {list(OPTIMIZERS)}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning rate must be positive, found {self.learning_rate}")

    def check(self, schema: Schema) -> None:
        """Refuse a schema this model cannot be built for, without TensorFlow.

        Raises:
            SchemaError: ``two_tower`` without a binary label, or without its two feature groups.

        Example:
            >>> schema = Schema.from_dict({"label": {"name": "y", "kind": "binary"},
            ...                            "features": [{"name": "x"}]})
            >>> ModelOptions("two_tower").check(schema)
            Traceback (most recent call last):
            tfship.errors.SchemaError: the two_tower model needs feature groups 'user' and 'item' ...
        """
        if self.kind != "two_tower":
            return
        if schema.label.kind != "binary":
            raise SchemaError(
                f"the two_tower model scores pairs: it needs a binary label; label "
                f"{schema.label.name!r} is {schema.label.kind}"
            )
        absent = [g for g in self.towers if not schema.groups.get(g)]
        if absent:
            wanted = " and ".join(map(repr, self.towers))
            raise SchemaError(
                f'the two_tower model needs feature groups {wanted} in the schema\'s "groups"; '
                f"missing or empty: {', '.join(map(repr, absent))} (the schema's groups are "
                f"{sorted(schema.groups)})"
            )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, stored in the model directory's ``trainer.json``."""
        out = asdict(self)
        out["hidden_units"] = list(self.hidden_units)
        out["towers"] = list(self.towers)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelOptions:
        """Inverse of ``to_dict``; unknown keys are an error."""
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown model options {sorted(unknown)}; known are {sorted(known)}")
        values = dict(data)
        for key in ("hidden_units", "towers"):
            if key in values:
                values[key] = tuple(values[key])
        return cls(**values)


def build_head(label: Label, *, scaled: bool = True) -> Any:
    """The ``tf.estimator`` Head for a label: binary, multi-class or regression.

    A regression label with a ``scale`` (and ``scaled``) is learned standardised: the loss
    compares ``(label - mean) / std`` with the logits, and predictions are ``logits * std +
    mean``, so exports answer in the label's units.
    """
    est = estimator()
    vocab = list(label.vocabulary) if label.vocabulary is not None else None
    if label.kind == "binary":
        return est.BinaryClassHead(label_vocabulary=vocab)
    if label.kind == "multiclass":
        return est.MultiClassHead(n_classes=label.n_classes, label_vocabulary=vocab)
    if label.scale is None or not scaled:
        return est.RegressionHead()
    mean, std = label.scale

    def loss_fn(labels: Any, logits: Any) -> Any:
        t = tf()
        return t.math.squared_difference((t.cast(labels, t.float32) - mean) / std, logits)

    return est.RegressionHead(loss_fn=loss_fn, inverse_link_fn=lambda logits: logits * std + mean)


def logits_dimension(label: Label) -> int:
    """Number of logits a Head expects: 1 for binary and regression, else the class count."""
    return label.n_classes if label.kind == "multiclass" else 1


def build_keras_model(schema: Schema, config: ModelOptions) -> Any:
    """The Keras model that maps a dict of feature tensors to logits."""
    if config.kind == "two_tower":
        return _TwoTower(schema, config)
    t = tf()
    layers: list[Any] = [t.keras.layers.DenseFeatures(build_columns(schema), name="features")]
    if config.kind == "dnn":
        for i, units in enumerate(config.hidden_units):
            layers.append(t.keras.layers.Dense(units, name=f"hidden_{i}"))
            if config.batch_norm:
                layers.append(t.keras.layers.BatchNormalization(name=f"batch_norm_{i}"))
            layers.append(t.keras.layers.Activation(config.activation))
            if config.dropout:
                layers.append(t.keras.layers.Dropout(config.dropout))
    layers.append(t.keras.layers.Dense(logits_dimension(schema.label), name="logits"))
    return t.keras.Sequential(layers, name=config.kind)


def _tower(schema: Schema, config: ModelOptions, group: str) -> Any:
    t = tf()
    layers: list[Any] = [
        t.keras.layers.DenseFeatures(build_columns(schema, schema.groups[group]), name=f"{group}_features")
    ]
    for i, units in enumerate(config.hidden_units):
        layers.append(t.keras.layers.Dense(units, activation=config.activation, name=f"{group}_{i}"))
    layers.append(t.keras.layers.Dense(config.tower_dim, name=f"{group}_embedding"))
    return t.keras.Sequential(layers, name=f"{group}_tower")


def _two_tower_class() -> type:
    t = tf()

    class TwoTower(t.keras.Model):  # type: ignore[misc,name-defined]
        """Dot product of two L2-normalised towers, scaled by a learned temperature."""

        def __init__(self, schema: Schema, config: ModelOptions) -> None:
            super().__init__(name="two_tower")
            config.check(schema)
            user, item = config.towers
            self.user = _tower(schema, config, user)
            self.item = _tower(schema, config, item)
            self.scale = self.add_weight(name="scale", shape=(), initializer=t.constant_initializer(5.0))

        def call(self, features: Any, training: bool = False) -> Any:
            u = t.math.l2_normalize(self.user(features, training=training), axis=-1)
            v = t.math.l2_normalize(self.item(features, training=training), axis=-1)
            return self.scale * t.reduce_sum(u * v, axis=-1, keepdims=True)

    return TwoTower


def _TwoTower(schema: Schema, config: ModelOptions) -> Any:  # noqa: N802 - a class factory
    return _two_tower_class()(schema, config)


def _optimizer(config: ModelOptions) -> Any:
    # Heads call optimizer.get_updates(): only Keras' legacy optimisers still have it.
    legacy = tf().keras.optimizers.legacy
    kinds = {"adam": legacy.Adam, "sgd": legacy.SGD, "adagrad": legacy.Adagrad, "rmsprop": legacy.RMSprop}
    return kinds[config.optimizer](learning_rate=config.learning_rate)


def build_model_fn(schema: Schema, config: ModelOptions, seed: int | None = None) -> Any:
    """The Estimator ``model_fn``: Keras model for logits, Head for loss, metrics and exports.

    With a ``seed``, Keras initialisers and dropout draw from it, so that the same seed
    trains the same model (the graph seed alone does not reach Keras' own generators).
    """
    head = build_head(schema.label, scaled=config.label_scaling)

    def model_fn(features: Any, labels: Any, mode: str, params: Any = None) -> Any:
        t = tf()
        est = estimator()
        training = mode == est.ModeKeys.TRAIN
        if seed is not None:
            t.keras.utils.set_random_seed(seed)
        model = build_keras_model(schema, config)
        # the columns know features by their graph names (a header may hold "mean radius")
        logits = model(model_features(features), training=training)
        optimizer = None
        if training:
            optimizer = _optimizer(config)
            # Tie the optimiser's step counter to the Estimator's global step, so that
            # checkpoints, summaries and learning-rate schedules agree on the step.
            optimizer.iterations = t.compat.v1.train.get_or_create_global_step()
        spec = head.create_estimator_spec(
            features=features,
            mode=mode,
            logits=logits,
            labels=labels,
            optimizer=optimizer,
            trainable_variables=model.trainable_variables,
            update_ops=model.get_updates_for(None) + model.get_updates_for(features),
            regularization_losses=model.losses or None,
        )
        if mode == est.ModeKeys.EVAL and schema.label.kind == "regression":
            scaled = schema.label.scale is not None and config.label_scaling
            spec = _evaluated_in_label_units(spec, labels, scaled)
        return spec

    return model_fn


def _evaluated_in_label_units(spec: Any, labels: Any, scaled: bool) -> Any:
    """An evaluation spec whose metrics speak in the label's units, whatever the Head learned.

    Adds ``rmse`` and ``mae``. A label learned standardised has the Head's ``loss`` and
    ``average_loss`` on the standardised label: those are kept as ``loss_standardized`` and
    ``average_loss_standardized``, and ``loss`` (the mean of the evaluation batches' losses,
    as Estimator computes it from ``spec.loss``) and ``average_loss`` become the mean squared
    error in the label's units. So the summary, the exporters' decisions and records, and
    ``inspect versions`` all read in one unit; the ranking of models is the same.
    """
    v1 = tf().compat.v1
    t = tf()
    predicted = t.reshape(spec.predictions["predictions"], [-1])
    actual = t.reshape(t.cast(labels, predicted.dtype), [-1])
    metrics = {
        **spec.eval_metric_ops,
        "rmse": v1.metrics.root_mean_squared_error(actual, predicted),
        "mae": v1.metrics.mean_absolute_error(actual, predicted),
    }
    if not scaled:
        return spec._replace(eval_metric_ops=metrics)
    metrics["loss_standardized"] = v1.metrics.mean(spec.loss)
    metrics["average_loss_standardized"] = metrics.pop("average_loss")
    metrics["average_loss"] = v1.metrics.mean_squared_error(actual, predicted)
    return spec._replace(loss=t.reduce_mean(t.square(predicted - actual)), eval_metric_ops=metrics)
