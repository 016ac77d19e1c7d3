"""Importing tfship and asking for help must not import TensorFlow (start-up stays fast)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROBE = "import sys\n{body}\nprint('tensorflow' in sys.modules)"


def _imports_tensorflow(body: str) -> bool:
    code = PROBE.format(body=body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1] == "True"


PACKAGES = [
    "tfship",
    "tfship.errors",
    "tfship.cli",
    "tfship.schema",
    "tfship.data",
    "tfship.trainer",
    "tfship.exporters",
    "tfship.inspect",
    "tfship.loaders",
    "tfship.serve_client",
    "tfship.server",
]


@pytest.mark.parametrize("module", PACKAGES)
def test_import_does_not_import_tensorflow(module: str) -> None:
    # where TensorFlow has no tf.estimator, importing the trainer fails in one line: before
    # importing TensorFlow too
    body = (
        "from tfship.errors import ExtraNotInstalledError\n"
        f"try:\n    import {module}\nexcept ExtraNotInstalledError:\n    pass"
    )
    assert not _imports_tensorflow(body)


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_cli_help_does_not_import_tensorflow(args: list[str]) -> None:
    body = (
        "from tfship.cli import cli\n"
        f"try:\n    cli.main({args!r}, standalone_mode=False)\nexcept SystemExit:\n    pass"
    )
    code = f"import sys\n{body}\nprint('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_probe_can_see_tensorflow() -> None:
    # The probe itself must be able to fail: importing tfship._tf.tf() does import TensorFlow.
    assert _imports_tensorflow("from tfship._tf import tf; tf()")


LOADED = (
    "import sys; {body}; print(sorted(m for m in ('tensorflow', 'tensorflow_serving') if m in sys.modules))"
)


def _loaded(body: str) -> str:
    code = LOADED.format(body=body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_messages_of_every_kind_load_neither_tensorflow_nor_tf_serving(tmp_path: Path) -> None:
    # The one door: requests, configs, warmup logs and SavedModels, all without TF's packages;
    # a model config file is read with tfship's classes.
    config = tmp_path / "models.config"
    config.write_text('model_config_list { config { name: "m" base_path: "/models/m" } }\n')
    body = (
        f"from tfship.server import read_config_file; read_config_file({str(config)!r}); "
        "from tfship._wire import protos, encode_tensor; pb = protos(); "
        "r = pb.predict_pb2.PredictRequest(); r.inputs['x'].CopyFrom(encode_tensor([1.0])); "
        "pb.prediction_log_pb2.PredictionLog(predict_log={'request': r}).SerializeToString(); "
        "pb.model_server_config_pb2.ModelServerConfig(); pb.saved_model_pb2.SavedModel(); "
        "pb.get_model_status_pb2.ModelVersionStatus.AVAILABLE; "
        "from tfship.serve_client import ServingClient; "
        "ServingClient('127.0.0.1:1').close()"
    )
    assert _loaded(body) == "[]"


def test_the_loaded_probe_can_see_tf_serving() -> None:
    assert _loaded("import tensorflow_serving.apis.predict_pb2") == "['tensorflow', 'tensorflow_serving']"


def test_tensorflow_import_leaves_pyplot_unrun_until_its_first_use() -> None:
    # Keras 3 imports pyplot when TensorFlow imports it; tf() defers running it to its first use
    pytest.importorskip("matplotlib")
    code = (
        "import sys\nfrom tfship._tf import tf\ntf()\n"
        "plt = sys.modules.get('matplotlib.pyplot')\n"
        "print(plt is None or type(plt).__name__ == '_LazyModule')\n"
        "import matplotlib.pyplot\nprint(callable(matplotlib.pyplot.figure))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"], out.stdout
