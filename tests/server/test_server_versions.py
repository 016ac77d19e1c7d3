"""Versions on disk: policies, polling, state history, hot swap, failed loads, labels, warmup."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import (
    get_model_status_pb2,
    model_management_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_log_pb2,
    prediction_service_pb2_grpc,
)

from tfship.server import (
    LocalServerError,
    ModelConfig,
    ModelServer,
    ServerConfigError,
    ServerOptions,
    VersionPolicy,
    read_config_file,
)

pytestmark = pytest.mark.slow


def make_base(tmp_path: Path, module_base: Path, versions: tuple[int, ...]) -> Path:
    """A fresh base path with copies of the module's versions 1 and/or 2."""
    base = tmp_path / "base"
    base.mkdir()
    for version in versions:
        shutil.copytree(module_base / str(version), base / str(version))
    return base


def drop_in(source: Path, base: Path, version: int) -> None:
    # publish atomically: a half-copied directory must never look like a version
    staging = base / f"temp-{version}"
    shutil.copytree(source, staging)
    staging.rename(base / str(version))


@pytest.fixture()
def serve(tmp_path: Path) -> Iterator[Any]:
    servers: list[ModelServer] = []

    def start(*models: ModelConfig, **options: Any) -> ModelServer:
        server = ModelServer(list(models), ServerOptions(port=0, poll_seconds=0.1, **options))
        servers.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


def states(server: ModelServer, model: str = "m") -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for event in server.history(model):
        out.setdefault(event.version, []).append(event.state)
    return out


def predict_version(server: ModelServer, model: str = "m") -> int:
    with grpc.insecure_channel(server.address) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        request = predict_pb2.PredictRequest()
        request.model_spec.name = model
        request.inputs["x"].CopyFrom(tf.make_tensor_proto(np.zeros([1, 2], np.float32)))
        response = stub.Predict(request, timeout=30)
        # y = x @ w + version, so a zero input returns the version that answered
        version = int(response.model_spec.version.value)
        assert float(tf.make_ndarray(response.outputs["y"])[0, 0]) == version
        return version


def wait_until(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("policy", "served"),
    [("latest", [3]), ("latest:2", [2, 3]), ("all", [1, 2, 3]), ("specific:1,3", [1, 3])],
)
def test_policy_chooses_versions(
    serve: Any,
    tmp_path: Path,
    module_base: Path,
    module_version3: Path,
    policy: str,
    served: list[int],
) -> None:
    base = make_base(tmp_path, module_base, (1, 2))
    shutil.copytree(module_version3, base / "3")
    (base / "temp-9").mkdir()  # not a number: ignored
    (base / "v8").mkdir()
    server = serve(ModelConfig("m", str(base), VersionPolicy.parse(policy)))
    assert server.available_versions("m") == served
    assert sorted(states(server)) == served  # versions left out are never even started
    assert predict_version(server) == served[-1]


def test_state_history_of_a_hot_swap(
    serve: Any, tmp_path: Path, module_base: Path, module_version3: Path
) -> None:
    base = make_base(tmp_path, module_base, (1,))
    server = serve(ModelConfig("m", str(base)))
    drop_in(module_version3, base, 3)
    server.wait_until_available("m", 3, timeout=30)
    wait_until(lambda: states(server).get(1, [])[-1:] == ["END"])
    assert states(server) == {
        1: ["START", "LOADING", "AVAILABLE", "UNLOADING", "END"],
        3: ["START", "LOADING", "AVAILABLE"],
    }
    order = [(e.version, e.state) for e in server.history("m")]
    assert order.index((3, "AVAILABLE")) < order.index((1, "UNLOADING"))
    assert predict_version(server) == 3
    with grpc.insecure_channel(server.address) as channel:
        status = model_service_pb2_grpc.ModelServiceStub(channel).GetModelStatus(
            get_model_status_pb2.GetModelStatusRequest(model_spec={"name": "m"}), timeout=30
        )
    end = get_model_status_pb2.ModelVersionStatus.END
    assert [(v.version, v.state) for v in status.model_version_status] == [
        (3, get_model_status_pb2.ModelVersionStatus.AVAILABLE),
        (1, end),
    ]


def test_removed_version_is_unloaded(serve: Any, tmp_path: Path, module_base: Path) -> None:
    base = make_base(tmp_path, module_base, (1, 2))
    server = serve(ModelConfig("m", str(base), VersionPolicy("all")))
    shutil.rmtree(base / "2")
    # it leaves the available versions when its unloading starts, and ends a moment later
    wait_until(lambda: server.available_versions("m") == [1] and states(server)[2][-1] == "END")
    assert states(server)[2][-2:] == ["UNLOADING", "END"]
    assert predict_version(server) == 1


def test_failed_load_ends_with_its_error_and_keeps_the_old_version(
    serve: Any, tmp_path: Path, module_base: Path
) -> None:
    base = make_base(tmp_path, module_base, (1,))
    server = serve(ModelConfig("m", str(base)), max_load_retries=0)
    broken = base / "temp-5"
    broken.mkdir()
    (broken / "saved_model.pb").write_bytes(b"this is not a SavedModel")
    broken.rename(base / "5")
    wait_until(lambda: states(server).get(5, [])[-1:] == ["END"])
    failed = server.history("m")[-1]
    assert (failed.version, failed.state) == (5, "END")
    assert failed.error is not None
    assert failed.error.code == grpc.StatusCode.DATA_LOSS
    assert failed.error.message == f"Can't parse {base / '5' / 'saved_model.pb'} as binary proto"
    assert server.available_versions("m") == [1]  # availability is preserved
    assert predict_version(server) == 1


def test_missing_base_path_fails_at_start(serve: Any, tmp_path: Path) -> None:
    with pytest.raises(ServerConfigError, match="Could not find base path .*missing for servable m"):
        serve(ModelConfig("m", str(tmp_path / "missing")))


def test_empty_base_path_waits_for_a_version(serve: Any, tmp_path: Path, module_version3: Path) -> None:
    base = tmp_path / "empty"
    base.mkdir()
    server = serve(ModelConfig("m", str(base)))
    with pytest.raises(LocalServerError, match="did not become available within"):
        server.wait_until_available("m", timeout=0.3)
    drop_in(module_version3, base, 3)
    assert server.wait_until_available("m", timeout=30) == 3


# labels and reload -----------------------------------------------------------------------------
def test_label_on_unavailable_version_fails(serve: Any, tmp_path: Path, module_base: Path) -> None:
    base = make_base(tmp_path, module_base, (1, 2))
    with pytest.raises(
        LocalServerError,
        match=(
            "Request to assign label to version 1 of model m, which is not currently available for inference"
        ),
    ):
        serve(ModelConfig("m", str(base), labels={"stable": 1}))


def test_reload_config_adds_labels_and_removes_models(serve: Any, tmp_path: Path, module_base: Path) -> None:
    base = make_base(tmp_path, module_base, (1, 2))
    server = serve(ModelConfig("m", str(base)), ModelConfig("other", str(base)))
    with grpc.insecure_channel(server.address) as channel:
        stub = model_service_pb2_grpc.ModelServiceStub(channel)
        request = model_management_pb2.ReloadConfigRequest()
        entry = request.config.model_config_list.config.add(
            name="m", base_path=str(base), model_platform="tensorflow"
        )
        entry.model_version_policy.all.SetInParent()
        entry.version_labels["old"] = 1
        response = stub.HandleReloadConfigRequest(request, timeout=60)
        assert response.status.error_code == 0
        assert server.available_versions("m") == [1, 2]
        assert server.available_versions("other") == []
        assert states(server, "other")[2][-1] == "END"
        predict = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        query = predict_pb2.PredictRequest()
        query.model_spec.name = "m"
        query.model_spec.version_label = "old"
        query.inputs["x"].CopyFrom(tf.make_tensor_proto(np.zeros([1, 2], np.float32)))
        assert predict.Predict(query, timeout=30).model_spec.version.value == 1
        query.model_spec.name = "other"
        with pytest.raises(grpc.RpcError) as info:
            predict.Predict(query, timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_reload_rejects_other_config_types(serve: Any, tmp_path: Path, module_base: Path) -> None:
    base = make_base(tmp_path, module_base, (1,))
    server = serve(ModelConfig("m", str(base)))
    with grpc.insecure_channel(server.address) as channel:
        stub = model_service_pb2_grpc.ModelServiceStub(channel)
        request = model_management_pb2.ReloadConfigRequest()
        request.config.custom_model_config.Pack(predict_pb2.PredictRequest())
        with pytest.raises(grpc.RpcError) as info:
            stub.HandleReloadConfigRequest(request, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == (
        "ServerModelConfig type not supported by HandleReloadConfigRequest. Only "
        "ModelConfigList is currently supported"
    )


# warmup ----------------------------------------------------------------------------------------
def write_warmup(version_dir: Path, logs: list[Any]) -> Path:
    extra = version_dir / "assets.extra"
    extra.mkdir(exist_ok=True)
    path = extra / "tf_serving_warmup_requests"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
    return path


def predict_log(**inputs: Any) -> Any:
    log = prediction_log_pb2.PredictionLog()
    log.predict_log.request.model_spec.name = "ignored"
    for key, value in inputs.items():
        log.predict_log.request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    return log


def load_error(serve: Any, base: Path) -> Any:
    server = ModelServer([ModelConfig("m", str(base))], ServerOptions(port=0, max_load_retries=0))
    with pytest.raises(LocalServerError) as info:
        server.start()  # like TF Serving, a model whose first load fails stops the start
    event = server.history("m")[-1]
    assert event.error is not None
    assert str(info.value) == (
        f"1 servable(s) did not become available: {{{{{{name: m version: 1}} due to error: "
        f"{event.error.code.name}: {event.error.message}}}, }}"
    )
    assert event.state == "END"
    assert server.available_versions("m") == []
    return event.error


def test_good_warmup_loads(serve: Any, tmp_path: Path, module_base: Path) -> None:
    base = make_base(tmp_path, module_base, (1,))
    write_warmup(base / "1", [predict_log(x=np.ones([2, 2], np.float32))] * 3)
    server = serve(ModelConfig("m", str(base)))
    assert server.available_versions("m") == [1]


def test_failing_warmup_request_fails_the_load(serve: Any, tmp_path: Path, module_base: Path) -> None:
    base = make_base(tmp_path, module_base, (1,))
    write_warmup(base / "1", [predict_log(x=np.ones([2, 2], np.float64))])
    error = load_error(serve, base)
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.message == "Expects arg[0] to be float but double is provided"


def test_too_many_warmup_records(serve: Any, tmp_path: Path, module_base: Path) -> None:
    base = make_base(tmp_path, module_base, (1,))
    path = write_warmup(base / "1", [prediction_log_pb2.PredictionLog()] * 1001)
    error = load_error(serve, base)
    assert error.message == f"Number of warmup records exceeds the maximum (1000) at {path}"


def test_unsupported_warmup_log_type(serve: Any, tmp_path: Path, module_base: Path) -> None:
    base = make_base(tmp_path, module_base, (1,))
    log = prediction_log_pb2.PredictionLog()
    log.session_run_log.SetInParent()
    write_warmup(base / "1", [log])
    error = load_error(serve, base)
    assert error.code == grpc.StatusCode.UNIMPLEMENTED
    assert error.message == "Unsupported log_type for warmup: 5"


def test_corrupt_warmup_file(serve: Any, tmp_path: Path, module_base: Path) -> None:
    base = make_base(tmp_path, module_base, (1,))
    path = write_warmup(base / "1", [predict_log(x=np.ones([1, 2], np.float32))])
    path.write_bytes(path.read_bytes()[:-3])
    error = load_error(serve, base)
    assert error.code == grpc.StatusCode.DATA_LOSS
    assert error.message.endswith(". Please verify your warmup data is in TFRecord format.")


def test_load_retries_default_to_tf_servings() -> None:
    # --max_num_load_retries=5, --load_retry_interval_micros=60000000 (2.15 to 2.20)
    options = ServerOptions()
    assert (options.max_load_retries, options.load_retry_interval_s) == (5, 60.0)


def test_a_version_copied_in_non_atomically_loads_on_a_retry(
    tmp_path: Path, module_base: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = tmp_path / "base"
    broken = base / "1"
    broken.mkdir(parents=True)
    (broken / "saved_model.pb").write_bytes(b"not yet")  # the copy has begun, not ended
    # the default number of retries; only the pause is shortened
    server = ModelServer([ModelConfig("m", str(base))], ServerOptions(port=0, load_retry_interval_s=0.5))
    starter = threading.Thread(target=server.start)
    with caplog.at_level("ERROR", logger="tfship.server._manager"):
        starter.start()
        try:
            time.sleep(0.2)
            assert server.history("m")[-1].state == "LOADING"  # waiting to retry
            shutil.rmtree(broken)
            shutil.copytree(module_base / "1", broken)  # the copy ends
            starter.join(timeout=60)
            assert server.available_versions("m") == [1]
            assert states(server)[1] == ["START", "LOADING", "AVAILABLE"]
        finally:
            starter.join(timeout=60)
            server.stop()
    assert "; retry 1 of 5 in 0.5 s" in caplog.text


def test_a_version_removed_while_its_load_waits_to_retry_is_not_retried(
    serve: Any, tmp_path: Path, module_base: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = make_base(tmp_path, module_base, (1,))
    with caplog.at_level("ERROR", logger="tfship.server._manager"):
        server = serve(ModelConfig("m", str(base)), load_retry_interval_s=0.5)
        broken = base / "5"
        broken.mkdir()
        (broken / "saved_model.pb").write_bytes(b"half a copy")
        wait_until(lambda: "version 5 failed" in caplog.text)
        shutil.rmtree(broken)  # given up on: the next try finds nothing to load
        wait_until(lambda: states(server).get(5, [])[-1:] == ["END"])
    failures = [r.getMessage() for r in caplog.records if "version 5 failed" in r.getMessage()]
    assert len(failures) == 2 and failures[0].endswith("; retry 1 of 5 in 0.5 s")
    assert "; retry" not in failures[1]
    assert server.available_versions("m") == [1]


def test_busy_port_is_reported(serve: Any, tmp_path: Path, module_base: Path) -> None:
    first = serve(ModelConfig("m", str(make_base(tmp_path, module_base, (1,)))))
    with pytest.raises(ServerConfigError, match=rf"gRPC port 127.0.0.1:{first.port} is already in use"):
        ModelServer.from_base_path(tmp_path / "base", "m", options=ServerOptions(port=first.port)).start()


def test_model_config_file_is_polled(tmp_path: Path, module_base: Path) -> None:
    config = tmp_path / "models.config"
    entry = 'config {{ name: "m" base_path: "{}" {} }}'
    config.write_text(f"model_config_list {{ {entry.format(module_base, '')} }}")
    server = ModelServer(
        read_config_file(config),
        ServerOptions(port=0, model_config_file=config, model_config_poll_seconds=0.05),
    )
    with server:
        assert server.available_versions("m") == [2]
        time.sleep(0.05)  # a distinct modification time
        policy = "model_version_policy { all {} } version_labels { key: 'old' value: 1 }"
        config.write_text(f"model_config_list {{ {entry.format(module_base, policy)} }}")
        wait_until(lambda: server.available_versions("m") == [1, 2])
        wait_until(lambda: dict(server.models[0].labels) == {"old": 1})


def test_poll_interval_zero_scans_once_at_start_up(
    tmp_path: Path, module_base: Path, module_version3: Path
) -> None:
    # TF Serving's --file_system_poll_wait_seconds=0: the versions found at start-up stay
    base = make_base(tmp_path, module_base, (1,))
    with ModelServer([ModelConfig("m", str(base))], ServerOptions(port=0, poll_seconds=0)) as srv:
        drop_in(module_version3, base, 3)
        time.sleep(0.5)
        assert srv.available_versions("m") == [1]
        assert states(srv)[1] == ["START", "LOADING", "AVAILABLE"] and 3 not in states(srv)
