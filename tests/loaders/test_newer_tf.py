"""SavedModels exported by a newer TensorFlow and Keras 3, run under each lane's TensorFlow.

``LocalModel`` and ``tfship predict`` must give the values the newer TensorFlow computed (the
committed ``expected.json``); an export whose signatures read variables its restore step never
writes runs through TF2's object loader; ``tfship serve`` fails such requests as TF Serving
does, saying why and what to do. A JAX-backend export holds a StableHLO module newer than
either TensorFlow reads (and, for TF 2.15, an XlaCallModule version it does not know): both
lanes refuse it at load with the reason.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.error
import urllib.request
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.errors import ModelError
from tfship.loaders import load
from tfship.server import ModelConfig, ModelServer, ServerOptions

pytestmark = pytest.mark.slow

NEWTF = Path(__file__).resolve().parents[1] / "fixtures" / "newtf"
BUILT = json.loads((NEWTF / "expected.json").read_text())
EXPECTED: dict[str, Any] = BUILT["models"]


def _minor(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


#: This TensorFlow is the one that wrote the exports, or newer: it knows every op they hold.
KNOWS_THEIR_OPS = _minor(version("tensorflow")) >= _minor(BUILT["tensorflow"])
#: Which loader runs each export that this TensorFlow can run at all.
LOADERS = {
    "keras_export": "session",
    "multi_output": "session",
    "strings_module": "session",
    "keras_tf_save": "object",
}


def _inputs(name: str) -> dict[str, Any]:
    return EXPECTED[name]["inputs"]["serving_default"]


def _assert_matches(name: str, got: dict[str, Any]) -> None:
    want = EXPECTED[name]["outputs"]["serving_default"]
    assert sorted(got) == sorted(want)
    for key, values in want.items():
        ours = np.asarray(got[key])
        if ours.dtype.kind in "OUS":
            assert [v.decode() if isinstance(v, bytes) else v for v in ours.reshape(-1)] == values
        else:
            np.testing.assert_allclose(ours, np.asarray(values), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_local_model_gives_the_newer_tensorflow_values(name: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="tfship.loaders"):
        with load(NEWTF / name) as model:
            assert model.loader == LOADERS[name]
            _assert_matches(name, model.predict(_inputs(name)))
            # The exact call too, and again with another batch size.
            feeds = {
                k: np.asarray(v, model.signature().inputs[k].dtype.replace("string", "object"))
                for k, v in _inputs(name).items()
            }
            _assert_matches(name, model.run(feeds))
            one = model.run({k: v[:1] for k, v in feeds.items()})
            assert all(len(v) == 1 for v in one.values())
    said = [r for r in caplog.records if r.name == "tfship.loaders._model" and "loading" in r.msg]
    assert len(said) == 1  # once, saying which path; the fallback at info level
    if LOADERS[name] == "object":
        assert said[0].levelno == logging.INFO and "TF2's object loader" in said[0].getMessage()
    else:
        assert said[0].levelno == logging.DEBUG and "TF1 session" in said[0].getMessage()


def test_object_loader_gives_what_the_session_gives() -> None:
    feeds = {"features": np.asarray(_inputs("keras_export")["features"], np.float32)}
    with load(NEWTF / "keras_export") as session, load(NEWTF / "keras_export", loader="object") as obj:
        assert (session.loader, obj.loader) == ("session", "object")
        np.testing.assert_array_equal(session.run(feeds)["output_0"], obj.run(feeds)["output_0"])


def test_a_forced_session_says_why_the_export_fails() -> None:
    with load(NEWTF / "keras_tf_save", loader="session") as model:
        feeds = {"inputs": np.asarray(_inputs("keras_tf_save")["inputs"], np.float32)}
        with pytest.raises(ModelError, match=r"^the model failed: Could not find variable sequential/"):
            model.run(feeds)


def test_a_jax_backend_export_fails_as_the_tensorflow_that_wrote_it_fails() -> None:
    # Its StableHLO (v1.18.0) is newer than what even the TensorFlow that exported it
    # deserializes (expected.json holds that TensorFlow's own error): both lanes refuse it at
    # load, TF 2.15 for its XlaCallModule version too, with the reason and what to do.
    assert EXPECTED["keras_jax_export"]["error"].startswith("Cannot deserialize computation: ")
    with pytest.raises(ModelError) as refused:
        load(NEWTF / "keras_jax_export")
    message = str(refused.value)
    assert message.startswith(f"cannot run the SavedModel at {NEWTF / 'keras_jax_export' / '1'}: ")
    if KNOWS_THEIR_OPS:
        assert message.endswith(
            f"this TensorFlow ({version('tensorflow')}) cannot deserialize this graph's StableHLO: "
            "XlaCallModule holds StableHLO v1.18.0, newer than the v1.13.7 it reads; export it with "
            f"a JAX and Keras whose StableHLO this TensorFlow ({version('tensorflow')}) reads "
            "(v1.13.7 or older), or with Keras's TensorFlow backend (KERAS_BACKEND=tensorflow), or "
            "serve it with a newer TensorFlow that reads its StableHLO"
        )
    else:
        assert "XlaCallModule version 10 is newer than the 8 it runs" in message
        assert "XlaCallModule holds StableHLO v1.18.0, newer than the v0.14.24 it reads" in message


def _jsonl(path: Path, columns: dict[str, Any]) -> Path:
    rows = [dict(zip(columns, values)) for values in zip(*columns.values())]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_predict_command_gives_the_newer_tensorflow_values(name: str, tmp_path: Path) -> None:
    source = _jsonl(tmp_path / "in.jsonl", _inputs(name))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(cli, ["predict", str(NEWTF / name), str(source), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    _assert_matches(name, {k: np.asarray([r[k] for r in rows], dtype=None) for k in rows[0]})


def _post(url: str, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())  # TF Serving's error bodies are JSON


@pytest.fixture(scope="module")
def server() -> Any:
    models = [ModelConfig(name, str(NEWTF / name)) for name in EXPECTED]
    with ModelServer(models, ServerOptions(port=0, rest_port=0, poll_seconds=60)) as srv:
        yield srv


@pytest.mark.parametrize("name", ["keras_export", "multi_output", "strings_module"])
def test_serve_gives_the_newer_tensorflow_values(server: Any, name: str) -> None:
    status, body = _post(f"{server.rest_url}/v1/models/{name}:predict", {"inputs": _inputs(name)})
    assert status == 200, body
    outputs = body["outputs"]
    _assert_matches(name, outputs if isinstance(outputs, dict) else {"output_0": outputs})


def test_serve_fails_the_defective_export_with_cause_and_remedy(server: Any) -> None:
    url = f"{server.rest_url}/v1/models/keras_tf_save:predict"
    status, body = _post(url, {"inputs": _inputs("keras_tf_save")})
    assert status == 400  # FAILED_PRECONDITION, as TF Serving answers
    # Which of the four unrestored variables the graph reaches first depends on op scheduling
    # (TF Serving names whichever it hits too; the server runs a request in its own thread): the
    # message must name one of them, then the cause and remedy.
    assert re.fullmatch(
        r"Could not find variable sequential/dense(_1)?/(bias|kernel): this export's signatures read "
        r"variables its restore step never writes; re-export with model\.export\(\)",
        body["error"],
    ), body["error"]


def test_serve_fails_a_jax_backend_export_as_tf_serving_does(server: Any) -> None:
    url = f"{server.rest_url}/v1/models/keras_jax_export:predict"
    status, body = _post(url, {"inputs": _inputs("keras_jax_export")})
    assert status == 400 and "Cannot deserialize computation" in body["error"]


def test_bench_and_beam_run_the_defective_export_through_the_object_loader(tmp_path: Path) -> None:
    model = str(NEWTF / "keras_tf_save")
    bench = CliRunner().invoke(cli, ["bench", model, "--batch-sizes", "1,3", "--seconds", "0.05", "--json"])
    assert bench.exit_code == 0, bench.output
    assert [b["batch_size"] for b in json.loads(bench.stdout)["batches"]] == [1, 3]
    source = _jsonl(tmp_path / "in.jsonl", _inputs("keras_tf_save"))
    out = tmp_path / "beam.jsonl"
    args = [
        "predict",
        model,
        str(source),
        "-o",
        str(out),
        "--runner",
        "beam",
        "--beam-option",
        "runner=DirectRunner",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    _assert_matches("keras_tf_save", {"output_0": np.asarray([r["output_0"] for r in rows])})
