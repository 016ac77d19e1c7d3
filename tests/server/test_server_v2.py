"""``tfship serve`` over the Open Inference Protocol (KServe V2), called by clients nobody here
wrote: tritonclient's HTTP and gRPC clients, blocking and asyncio, and the kserve SDK's REST and
gRPC inference clients (typed gRPC contents among them), run in a venv of their own
(``tests/venvs.py``) against ``tfship serve`` started from this lane's Python. Every answer is
compared with TF Serving's Predict on the same server, inputs and version."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

import tfship
from tfship.serve_client import ServingClient
from tfship.server import ModelConfig, ModelServer, ServerOptions
from venvs import clean_env, v2_clients_venv

from .conftest import serve_process

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

HERE = Path(__file__).resolve().parent
DESCRIPTORS = Path(tfship.__file__).parent / "_wire" / "proto" / "descriptors.pb"
METRICS = "/monitoring/prometheus/metrics"
CLIENTS = ("http", "grpc", "http_aio", "grpc_aio")  # tritonclient's
KSERVE = ("kserve_rest", "kserve_grpc")  # the kserve SDK's (asyncio)

# V2 datatype: (TensorFlow dtype name, a [2, 2] value of it)
DATATYPES: dict[str, tuple[str, Any]] = {
    "BOOL": ("bool", np.array([[True, False], [False, True]])),
    "INT8": ("int8", np.array([[-128, 127], [0, 5]], np.int8)),
    "INT16": ("int16", np.array([[-32768, 32767], [0, 5]], np.int16)),
    "INT32": ("int32", np.array([[-(2**31), 2**31 - 1], [0, 5]], np.int32)),
    "INT64": ("int64", np.array([[-(2**63), 2**63 - 1], [0, 5]], np.int64)),
    "UINT8": ("uint8", np.array([[0, 255], [1, 5]], np.uint8)),
    "UINT16": ("uint16", np.array([[0, 65535], [1, 5]], np.uint16)),
    "UINT32": ("uint32", np.array([[0, 2**32 - 1], [1, 5]], np.uint32)),
    "UINT64": ("uint64", np.array([[0, 2**64 - 1], [1, 5]], np.uint64)),
    "FP16": ("float16", np.array([[0.5, -1.25], [65504.0, 3.0]], np.float16)),
    "FP32": ("float32", np.array([[0.1, -1.5e30], [3.25, 7.0]], np.float32)),
    "FP64": ("float64", np.array([[0.1, -1.5e300], [3.25, 7.0]], np.float64)),
    "BYTES": ("string", np.array([[b"a", "\u00e9t\u00e9".encode()], [b"", b"xyz"]], object)),
    "BF16": ("bfloat16", np.array([[1.5, -2.0], [0.25, 256.0]], np.float32)),  # bfloat16's values
}


def export_dtypes(path: Path) -> None:
    """A model whose default signature returns each of its inputs, one per V2 datatype."""
    import tensorflow as tf

    names = list(DATATYPES)
    specs = [tf.TensorSpec([None, 2], getattr(tf, DATATYPES[n][0]), name=n.lower()) for n in names]

    def identity(*values: Any) -> dict[str, Any]:
        return {f"{n.lower()}_out": tf.identity(v) for n, v in zip(names, values)}

    module = tf.Module()
    module.f = tf.function(identity, input_signature=specs, autograph=False)
    tf.saved_model.save(module, str(path), signatures=module.f)


def serialized_examples(*values: float) -> np.ndarray:
    import tensorflow as tf

    blobs = [
        tf.train.Example(
            features=tf.train.Features(
                feature={"x": tf.train.Feature(float_list=tf.train.FloatList(value=[v]))}
            )
        ).SerializeToString()
        for v in values
    ]
    out = np.empty(len(blobs), object)
    out[:] = blobs
    return out


def tensor(name: str, datatype: str, array: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "datatype": datatype, "array": array, **extra}


ARRAYS: dict[str, np.ndarray] = {
    **{f"dtype_{n}": value for n, (_, value) in DATATYPES.items()},
    "x": np.array([[1.0, 2.0], [3.0, -4.5]], np.float32),
    "x_int": np.array([[1, 2]], np.int32),
    "x_wide": np.array([[1.0, 2.0, 3.0]], np.float32),
    "text": np.array([b"ab", "\u00fcber".encode(), b""], object),
    "a": np.array([1.5, 2.5, -1.0], np.float32),
    "b": np.array([1, -2, 3], np.int64),
    "examples": serialized_examples(0.0, 2.5, 7.0),
}
DTYPE_INPUTS = [tensor(n.lower(), n, f"dtype_{n}") for n in DATATYPES]
# Calls that succeed: (plan entry, the Predict that must give the same answer)
CALLS: list[dict[str, Any]] = [
    {"name": "dtypes_binary", "model": "dtypes", "inputs": DTYPE_INPUTS, "binary": True},
    {
        "name": "dtypes_json",
        "model": "dtypes",
        # tritonclient sends BF16 only as binary data
        "inputs": [dict(t, binary=True) if t["datatype"] == "BF16" else t for t in DTYPE_INPUTS],
        "outputs": [f"{n.lower()}_out" for n in DATATYPES if n != "BF16"],
        "binary": False,
    },
    {"name": "raw_default", "kserve": True, "model": "module", "inputs": [tensor("x", "FP32", "x")]},
    {
        "name": "raw_json",
        "kserve": True,
        "model": "module",
        "inputs": [tensor("x", "FP32", "x")],
        "binary": False,
    },
    {
        "name": "version_1",
        "kserve": True,
        "model": "module",
        "version": "1",
        "inputs": [tensor("x", "FP32", "x")],
    },
    {
        "name": "signature_strings",
        "kserve": True,
        "model": "module",
        "inputs": [tensor("text", "BYTES", "text")],
        "parameters": {"signature_name": "strings"},
        "binary": False,
    },
    {
        "name": "signature_pair",
        "kserve": True,
        "model": "module",
        "inputs": [tensor("a", "FP32", "a"), tensor("b", "INT64", "b")],
        "outputs": ["sum"],
        "parameters": {"signature_name": "pair"},
    },
    {
        "name": "examples_default",
        "kserve": True,
        "model": "linear",
        "inputs": [tensor("inputs", "BYTES", "examples")],
    },
    {
        "name": "examples_predict",
        "kserve": True,
        "model": "linear",
        "inputs": [tensor("examples", "BYTES", "examples")],
        "parameters": {"signature_name": "predict"},
    },
    {
        "name": "examples_regress",
        "kserve": True,
        "model": "linear",
        "inputs": [tensor("inputs", "BYTES", "examples")],
        "parameters": {"signature_name": "regression"},
    },
]
# Calls that fail: the text their error must hold
ERRORS: dict[str, tuple[dict[str, Any], str]] = {
    "unknown_model": (
        {"model": "no-such-model", "inputs": [tensor("x", "FP32", "x")]},
        "unknown model: 'no-such-model'",
    ),
    "unknown_version": (
        {"model": "module", "version": "7", "inputs": [tensor("x", "FP32", "x")]},
        "unknown model: 'module' version 7 is not found (available versions: 1, 2)",
    ),
    "wrong_datatype": (
        {"model": "module", "inputs": [tensor("x", "INT32", "x_int")]},
        "input 'x' has datatype INT32, but signature 'serving_default' takes FP32",
    ),
    "wrong_shape": (
        {"model": "module", "inputs": [tensor("x", "FP32", "x_wide")]},
        "input 'x' has shape [1, 3], but signature 'serving_default' takes [?, 2]",
    ),
    "missing_input": (
        {"model": "module", "inputs": [tensor("a", "FP32", "a")], "parameters": {"signature_name": "pair"}},
        "input 'b' is missing: signature 'pair' takes a, b",
    ),
    "unknown_signature": (
        {"model": "module", "inputs": [tensor("x", "FP32", "x")], "parameters": {"signature_name": "nope"}},
        "signature 'nope' not found in model 'module' version 2: it has pair, serving_default, strings",
    ),
}


@dataclass
class Run:
    results: dict[str, Any]
    outputs: Any
    expected: dict[str, dict[str, np.ndarray]]
    metrics: str


def _predict_array(call: dict[str, Any], spec: dict[str, Any]) -> np.ndarray:
    value = ARRAYS[spec["array"]]
    if spec["datatype"] == "BF16":
        import ml_dtypes

        return value.astype(ml_dtypes.bfloat16)
    return value


def _expected(address: str) -> dict[str, dict[str, np.ndarray]]:
    """Each successful call's answer from TF Serving's Predict on the same server."""
    expected: dict[str, dict[str, np.ndarray]] = {}
    with ServingClient(address, timeout=60) as client:
        for call in CALLS:
            result = client.predict(
                call["model"],
                {spec["name"]: _predict_array(call, spec) for spec in call["inputs"]},
                signature=(call.get("parameters") or {}).get("signature_name"),
                version=int(call["version"]) if call.get("version") else None,
            )
            expected[call["name"]] = {name: result.as_numpy(name) for name in result.outputs}
    return expected


@pytest.fixture(scope="module")
def v2_run(module_base: Path, estimator_base: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    venv = v2_clients_venv()  # first: a download that the server need not wait for
    work = tmp_path_factory.mktemp("v2")
    export_dtypes(work / "dtypes" / "1")
    config = work / "models.config"
    config.write_text(
        "model_config_list {\n"
        f'  config {{ name: "module" base_path: "{module_base}" model_version_policy {{ all {{}} }} }}\n'
        f'  config {{ name: "linear" base_path: "{estimator_base}" }}\n'
        f'  config {{ name: "dtypes" base_path: "{work / "dtypes"}" }}\n'
        "}\n"
    )
    monitoring = work / "monitoring.config"
    monitoring.write_text(f'prometheus_config {{ enable: true path: "{METRICS}" }}')
    np.savez(work / "inputs.npz", **ARRAYS)
    calls = CALLS + [dict(call, name=name, kserve=True) for name, (call, _) in ERRORS.items()]
    args = ["--model-config", str(config), "--port", "0", "--rest-port", "0"]
    with serve_process(*args, "--monitoring-config-file", str(monitoring)) as server:
        rest = server.info["rest"].removeprefix("http://")
        plan = {
            "rest": rest,
            "grpc": server.info["grpc"],
            "descriptors": str(DESCRIPTORS),
            "models": [{"name": "module"}, {"name": "module", "version": "1"}, {"name": "linear"}],
            "calls": calls,
        }
        (work / "plan.json").write_text(json.dumps(plan))
        for family in ("triton", "kserve"):
            done = subprocess.run(
                [
                    str(venv / "bin" / "python"),
                    str(HERE / "v2_clients.py"),
                    str(work / "plan.json"),
                    str(work / "inputs.npz"),
                    str(work),
                    family,
                ],
                env=clean_env(),
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr
        expected = _expected(server.info["grpc"])
        with urllib.request.urlopen(f"http://{rest}{METRICS}", timeout=30) as page:
            metrics = page.read().decode()
    results: dict[str, Any] = {}
    outputs: dict[str, np.ndarray] = {}
    for family in ("triton", "kserve"):
        results.update(json.loads((work / f"results-{family}.json").read_text()))
        with np.load(work / f"outputs-{family}.npz", allow_pickle=True) as saved:
            outputs.update({key: saved[key] for key in saved.files})
    return Run(results, outputs, expected, metrics)


def test_our_messages_are_the_protocols(v2_run: Run) -> None:
    assert v2_run.results["wire"] == []


@pytest.mark.parametrize("client", ["http", "grpc"])
def test_server_and_model_metadata(v2_run: Run, client: str) -> None:
    health = v2_run.results[client]["health"]
    assert (health["live"], health["ready"], health["unknown_ready"]) == (True, True, False)
    assert health["server"] == {
        "name": "tfship",
        "version": tfship.__version__,
        "extensions": ["binary_tensor_data"],
    }
    module = health["models"]["module"]
    assert module["ready"] is True
    metadata = module["metadata"]
    assert (metadata["name"], metadata["versions"], metadata["platform"]) == (
        "module",
        ["1", "2"],
        "tensorflow_savedmodel",
    )
    assert metadata["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 2]}]
    assert metadata["outputs"] == [
        {"name": "doubled", "datatype": "FP32", "shape": [-1, 2]},
        {"name": "y", "datatype": "FP32", "shape": [-1, 1]},
    ]
    linear = health["models"]["linear"]["metadata"]
    assert linear["inputs"] == [{"name": "inputs", "datatype": "BYTES", "shape": [-1]}]
    if client == "http":  # the REST answer lists the signatures as parameters
        assert metadata["parameters"] == {
            "signature_name": "serving_default",
            "signatures": "pair,serving_default,strings",
        }
        assert "regression" in linear["parameters"]["signatures"].split(",")


@pytest.mark.parametrize("client", ["http_aio", "grpc_aio"])
def test_asyncio_clients_see_a_live_ready_server(v2_run: Run, client: str) -> None:
    assert v2_run.results[client]["health"] == {"live": True, "ready": True}


@pytest.mark.parametrize("client", KSERVE)
def test_kserve_clients_see_a_live_ready_server(v2_run: Run, client: str) -> None:
    assert v2_run.results[client]["health"] == {"live": True, "ready": True, "model_ready": True}


def _infer_cases() -> list[tuple[str, str]]:
    cases = [(client, call["name"]) for call in CALLS for client in CLIENTS]
    return cases + [(client, call["name"]) for call in CALLS if call.get("kserve") for client in KSERVE]


@pytest.mark.parametrize(("client", "call"), _infer_cases())
def test_infer_answers_as_predict_does(v2_run: Run, client: str, call: str) -> None:
    got = v2_run.results[client]["calls"][call]
    assert "error" not in got, got.get("error")
    assert got["id"] == call
    spec = next(c for c in CALLS if c["name"] == call)
    expected = v2_run.expected[call]
    names = spec.get("outputs") or sorted(expected)
    assert list(got["outputs"]) == names
    for name in names:
        value = v2_run.outputs[got["outputs"][name]]
        want = expected[name]
        if str(want.dtype) == "bfloat16":
            want = want.astype(np.float32)
        if want.dtype.kind == "O":
            assert value.shape == want.shape and value.tolist() == want.tolist(), name
        else:
            assert value.dtype == want.dtype, name
            np.testing.assert_array_equal(value, want, err_msg=name)
    if spec.get("version") and client != "kserve_rest":  # its REST answers drop model_version;
        assert got["version"] == spec["version"]  # the values above tell the version anyway


@pytest.mark.parametrize("client", CLIENTS + KSERVE)
@pytest.mark.parametrize("call", list(ERRORS))
def test_errors_say_what_is_wrong(v2_run: Run, client: str, call: str) -> None:
    got = v2_run.results[client]["calls"][call]
    assert ERRORS[call][1] in got.get("error", ""), got


def test_every_datatype_was_answered(v2_run: Run) -> None:
    got = v2_run.results["grpc"]["calls"]["dtypes_binary"]["outputs"]
    assert sorted(got) == sorted(f"{n.lower()}_out" for n in DATATYPES)


def test_v2_requests_are_counted_and_timed(v2_run: Run) -> None:
    for entrypoint in ("REST", "GRPC"):
        timed = [
            line
            for line in v2_run.metrics.splitlines()
            if line.startswith(":tensorflow:serving:request_latency_count")
            and 'API="ModelInfer"' in line
            and f'entrypoint="{entrypoint}"' in line
            and 'model_name="module"' in line
        ]
        assert timed and float(timed[0].rsplit(" ", 1)[1]) > 0, v2_run.metrics
    assert 'request_count{model_name="dtypes",status="OK"}' in v2_run.metrics


def test_the_protocol_can_be_turned_off(module_base: Path) -> None:
    options = ServerOptions(port=0, rest_port=0, open_inference=False)
    with ModelServer([ModelConfig("module", str(module_base))], options) as server:
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(f"{server.rest_url}/v2/health/live", timeout=30)
        info.value.close()  # the error holds the open response
        assert info.value.code == 404
        with grpc.insecure_channel(server.address) as channel:
            live = channel.unary_unary("/inference.GRPCInferenceService/ServerLive")
            with pytest.raises(grpc.RpcError) as failed:
                live(b"", timeout=30)
            assert failed.value.code() == grpc.StatusCode.UNIMPLEMENTED


def _infer_json(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        result: dict[str, Any] = json.loads(answer.read())
    return result


def test_batching_and_a_new_version_serve_the_protocol_too(
    module_base: Path, module_version3: Path, tmp_path: Path
) -> None:
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from tfship.server import BatchingOptions

    base = tmp_path / "module"
    shutil.copytree(module_base, base)
    options = ServerOptions(port=0, rest_port=0, poll_seconds=0.2, batching=BatchingOptions(8, 0.005))
    with ModelServer([ModelConfig("module", str(base))], options) as server:
        url = f"{server.rest_url}/v2/models/module/infer"

        def infer(row: int) -> dict[str, Any]:
            x = {"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [row, 1]}
            return _infer_json(url, {"inputs": [x], "outputs": [{"name": "y"}]})

        with ThreadPoolExecutor(8) as pool:  # concurrent calls, merged by the batcher
            answers = list(pool.map(infer, range(16)))
        assert [a["outputs"][0]["data"] for a in answers] == [[row + 2.0 + 2.0] for row in range(16)]
        assert {a["model_version"] for a in answers} == {"2"}
        shutil.copytree(module_version3, base / "3")  # hot reload: the newest version answers
        server.wait_until_available("module", 3)
        answer = infer(1)
        assert answer["model_version"] == "3" and answer["outputs"][0]["data"] == [1.0 + 2.0 + 3.0]


def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, body, headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def test_hostile_rest_bodies_get_one_clear_error(module_base: Path) -> None:
    options = ServerOptions(port=0, rest_port=0)
    with ModelServer([ModelConfig("module", str(module_base))], options) as server:
        url = f"{server.rest_url}/v2/models/module/infer"
        x = {"name": "x", "shape": [1, 2], "datatype": "FP32", "parameters": {"binary_data_size": 8}}
        head = json.dumps({"inputs": [x]}).encode()
        cases = [
            (b"[" * 100_000 + b"]" * 100_000, {}, "nested too deeply"),
            (b"{not json", {}, "the request is not JSON"),
            (head + b"\x00" * 8, {"Inference-Header-Content-Length": "99999"}, "is not a length within"),
            (
                head + b"\x00" * 4,
                {"Inference-Header-Content-Length": str(len(head))},
                "runs past the binary data",
            ),
            (
                head + b"\x00" * 12,
                {"Inference-Header-Content-Length": str(len(head))},
                "4 bytes of binary data follow",
            ),
            (
                json.dumps({"inputs": [dict(x, shape=[2**40, 2**40], data=[], parameters={})]}).encode(),
                {},
                "got 0",
            ),
        ]
        for body, headers, message in cases:
            status, answer = _post(url, body, headers)
            assert status == 400 and message in answer["error"], (message, status, answer)
        status, answer = _post(
            url, head + np.ones(2, np.float32).tobytes(), {"Inference-Header-Content-Length": str(len(head))}
        )
        assert status == 200 and answer["outputs"][1]["data"] == [5.0]  # the model still answers
