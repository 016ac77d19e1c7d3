"""tfship's message classes on the oldest and newest protobuf it supports, without TensorFlow.

Each case runs in a venv of its own that holds protobuf and what ``tfship._wire`` imports
(numpy, orjson, crc32c), never TensorFlow. The venvs are kept under ``.venv-core-*`` in the
project (git-ignored, removed by ``make clean``), so only the first run downloads packages.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tfship._wire import protos
from venvs import ROOT, THIS, building, interpreters

# the case -> (what pip installs, the version it must report)
PROTOBUFS = {
    "3.20": ("protobuf==3.20.3", "3.20.3"),
    "5": ("protobuf>=5,<6", "5."),
    "6": ("protobuf>=6,<7", "6."),
    "7": ("protobuf>=7,<8", "7."),
}
# Python 3.9 runs protobuf 3.20 on its C++ backend (a wheel with the extension); newer Pythons run
# 3.20 in pure Python and 4.21 and later on upb.
CASES = [
    ("3.9", "3.20"),
    (THIS, "3.20"),
    (THIS, "5"),
    (THIS, "6"),
    ("3.12", "6"),
    ("3.13", "3.20"),
    ("3.13", "6"),
    ("3.13", "7"),
]
WIRE_DEPS = ["numpy", "orjson", "crc32c"]

SCRIPT = r"""
import json, sys
from google.protobuf import __version__
from google.protobuf.internal import api_implementation
from tfship._wire._messages import message_class

Request = message_class("tensorflow.serving.PredictRequest")
theirs = bytes.fromhex(sys.argv[1])
parsed = Request.FromString(theirs)
ours = Request()
ours.model_spec.name = "penguins"
ours.model_spec.version.value = 7
ours.model_spec.signature_name = "serving_default"
x = ours.inputs["x"]
x.dtype = 1
x.tensor_shape.dim.add(size=2)
x.tensor_shape.dim.add(size=2)
x.tensor_content = bytes(range(16))
words = ours.inputs["words"]
words.dtype = 7
words.tensor_shape.dim.add(size=2)
words.string_val.extend([b"adelie", b"gentoo"])
Map = message_class("tensorflow.serving.SignatureDefMap")
signatures = Map()
signatures.signature_def["serving_default"].method_name = "tensorflow/serving/predict"
response = message_class("tensorflow.serving.GetModelMetadataResponse")()
response.metadata["signature_def"].Pack(signatures)
unpacked = Map()
response.metadata["signature_def"].Unpack(unpacked)
print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2],
    "protobuf": __version__,
    "implementation": api_implementation.Type(),
    "equal": parsed == ours,
    "reserialized": parsed.SerializeToString(deterministic=True).hex(),
    "type_url": response.metadata["signature_def"].type_url,
    "unpacked": unpacked == signatures,
    "tensorflow": "tensorflow" in sys.modules,
}))
"""


def _reference_request() -> bytes:
    """The request the script builds, written by TF Serving's own generated class."""
    request = protos().predict_pb2.PredictRequest()
    request.model_spec.name = "penguins"
    request.model_spec.version.value = 7
    request.model_spec.signature_name = "serving_default"
    request.inputs["x"].dtype = 1
    request.inputs["x"].tensor_shape.dim.add(size=2)
    request.inputs["x"].tensor_shape.dim.add(size=2)
    request.inputs["x"].tensor_content = bytes(range(16))
    request.inputs["words"].dtype = 7
    request.inputs["words"].tensor_shape.dim.add(size=2)
    request.inputs["words"].string_val.extend([b"adelie", b"gentoo"])
    return bytes(request.SerializeToString(deterministic=True))


INTERPRETERS = interpreters()


def _venv(python: str, protobuf: str) -> Path:
    command, env = INTERPRETERS[python]
    venv = ROOT / f".venv-core-py{python}-protobuf{protobuf}"
    stamp = venv / ".installed"
    wanted = " ".join([PROTOBUFS[protobuf][0], *WIRE_DEPS])
    with building(venv):
        if not stamp.is_file() or stamp.read_text() != wanted:
            if not (venv / "bin" / "python").is_file():
                subprocess.run(command + ["-m", "venv", str(venv)], env=env, check=True, timeout=300)
            subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *wanted.split(" ")],
                check=True,
                timeout=600,
                capture_output=True,
            )
            stamp.write_text(wanted)
    return venv / "bin" / "python"


def test_this_python_runs_every_protobuf() -> None:
    assert {protobuf for python, protobuf in CASES if python in INTERPRETERS} == set(PROTOBUFS)


@pytest.mark.slow
@pytest.mark.core
@pytest.mark.parametrize(("python", "protobuf"), [case for case in CASES if case[0] in INTERPRETERS])
def test_messages_load_and_round_trip_without_tensorflow(python: str, protobuf: str) -> None:
    reference = _reference_request()
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONPATH"] = str(ROOT / "src")
    out = subprocess.run(
        [str(_venv(python, protobuf)), "-c", SCRIPT, reference.hex()],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["python"] == python
    assert report["protobuf"].startswith(PROTOBUFS[protobuf][1])
    assert report["tensorflow"] is False
    if python == "3.9" and protobuf == "3.20":
        assert report["implementation"] == "cpp"
    assert report["equal"] is True
    assert bytes.fromhex(report["reserialized"]) == reference
    assert report["type_url"] == "type.googleapis.com/tensorflow.serving.SignatureDefMap"
    assert report["unpacked"] is True
