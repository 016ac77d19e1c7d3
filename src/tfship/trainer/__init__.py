"""A minimal Estimator trainer driven by one schema, on one machine or a TF_CONFIG cluster.

A Keras model (``linear``, ``dnn`` or ``two_tower``) computes logits inside the ``model_fn``; a
``tf.estimator`` Head chosen from the schema's label gives the loss, metrics and export
signatures; ``train_and_evaluate`` checkpoints, evaluates the whole eval set and exports.
Under ``TF_CONFIG`` the same ``train`` runs one task of a cluster (chief, worker, ps or
evaluator), each training replica on its own share of the files, and a ``Watchdog`` ends the
tasks that would not end by themselves; ``run_local_cluster`` runs a whole cluster on this
machine.

Example:
    >>> from tfship.data import infer_schema, penguins_split
    >>> from tfship.trainer import ModelOptions, RunOptions, train
    >>> train_csv, eval_csv = penguins_split("data")
    >>> schema = infer_schema(train_csv, label="species")
    >>> result = train(schema, "model", [str(train_csv)], [str(eval_csv)],
    ...                model=ModelOptions("dnn", hidden_units=(8,)), run=RunOptions(max_steps=20))
    >>> result.global_step, sorted(result.exports)
    (20, ['best', 'final', 'latest'])
"""

from __future__ import annotations

from tfship._tf import require_extra as _require_extra

# one line naming the estimator extra, before a submodule fails to import tf.estimator
_require_extra(__name__, estimator=True)

from tfship.trainer._cluster import (
    ClusterConfigError,
    ClusterError,
    ClusterTask,
    Shard,
    Watchdog,
    make_tf_config,
    parse_tf_config,
    read_tf_config,
)
from tfship.trainer._columns import build_columns
from tfship.trainer._input import InputOptions, build_input_fn
from tfship.trainer._launch import ClusterRun, LocalCluster, run_local_cluster
from tfship.trainer._model import MODEL_KINDS, ModelOptions, build_head, build_keras_model, build_model_fn
from tfship.trainer._train import (
    EXPORT_KINDS,
    TRAINER_FILE,
    RunOptions,
    TrainResult,
    build_estimator,
    read_trainer_file,
    train,
)

__all__ = [
    "ClusterConfigError",
    "ClusterError",
    "ClusterRun",
    "ClusterTask",
    "EXPORT_KINDS",
    "InputOptions",
    "LocalCluster",
    "MODEL_KINDS",
    "ModelOptions",
    "RunOptions",
    "Shard",
    "TRAINER_FILE",
    "TrainResult",
    "Watchdog",
    "build_columns",
    "build_estimator",
    "build_head",
    "build_input_fn",
    "build_keras_model",
    "build_model_fn",
    "make_tf_config",
    "parse_tf_config",
    "read_tf_config",
    "read_trainer_file",
    "run_local_cluster",
    "train",
]
