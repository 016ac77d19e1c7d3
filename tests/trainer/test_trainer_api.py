"""The public surface of tfship.trainer is exactly its sorted __all__."""

from __future__ import annotations

import tfship.trainer as trainer

PUBLIC = {
    "EXPORT_KINDS",
    "MODEL_KINDS",
    "ClusterConfigError",
    "ClusterError",
    "ClusterRun",
    "ClusterTask",
    "InputOptions",
    "LocalCluster",
    "ModelOptions",
    "RunOptions",
    "Shard",
    "TRAINER_FILE",
    "TrainResult",
    "Watchdog",
    "build_columns",
    "build_estimator",
    "build_keras_model",
    "build_head",
    "build_input_fn",
    "build_model_fn",
    "make_tf_config",
    "parse_tf_config",
    "read_tf_config",
    "read_trainer_file",
    "run_local_cluster",
    "train",
}


def test_all_is_the_sorted_public_surface() -> None:
    assert set(trainer.__all__) == PUBLIC
    assert trainer.__all__ == sorted(trainer.__all__)
    assert all(hasattr(trainer, name) for name in trainer.__all__)
    module = type(trainer)
    names = (n for n in dir(trainer) if not n.startswith("_"))
    exported = {n for n in names if not isinstance(getattr(trainer, n), module)}
    assert exported - {"annotations"} == PUBLIC
