"""The Serving pages' examples run as shown against a real ``tfship serve`` on free ports: the
Open Inference Protocol page's model, curl calls and tritonclient clients, the health page's
commands, curl calls and gRPC health client, the request logging page's configs, jq line and
Python, and the TF Serving 2.20 page's Python. Where a page names a fixed port (8500, 8501) or a
fixed path (``/var/log/tfship/``), the test puts a free port or a directory of its own in its
place and nothing else."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .examples import DOCS, Block, Command, commands, environment, run_console, runnable

pytestmark = [pytest.mark.slow]

SERVING = DOCS / "serving"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _part(block: Block, picks: list[int], swaps: dict[str, str]) -> Block:
    """The commands ``picks`` of ``block``, with what they show, each text of ``swaps`` replaced."""
    listed = commands(block)
    code = "".join("".join(line + "\n" for line in [f"$ {listed[i].line}", *listed[i].shown]) for i in picks)
    for old, new in swaps.items():
        code = code.replace(old, new)
    return Block(block.page, block.line, block.kind, code, None)


def _swap(text: str, swaps: dict[str, str]) -> str:
    for old, new in swaps.items():
        text = text.replace(old, new)
    return text


@contextmanager
def _serving(command: str, cwd: Path, ready: str = "serving REST on") -> Iterator[subprocess.Popen[str]]:
    """``command`` (a ``tfship serve`` line of a page) running in ``cwd`` until the block ends."""
    script = f'tfship() {{ exec "$TFSHIP_PYTHON" -m tfship "$@"; }}\n{command}\n'
    server = subprocess.Popen(
        ["bash", "-c", script],
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert server.stdout is not None
    printed = []
    try:
        for line in server.stdout:
            printed.append(line)
            if ready in line:
                break
        assert server.poll() is None, "".join(printed)
        yield server
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        rest = server.communicate(timeout=60)[0]
    # SIGTERM is a clean stop (not reached when the block failed first)
    assert server.returncode == 0, "".join(printed) + rest


def _joined(command: Command) -> str:
    """A command the page continues over lines ending in a backslash, on one line; it shows no output."""
    lines = [command.line, *command.shown]
    assert all(line.endswith("\\") for line in lines[:-1]), lines
    return " ".join(line.rstrip("\\").strip() for line in lines)


def _save(base: Path, *versions: int) -> None:
    """Versions of the pages' module, y = 2x, each put in place whole (as an export is); the
    newest first, so that a server polling meanwhile never loads an older one on the way."""
    import tensorflow as tf

    module = tf.Module()
    module.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")])
    staged = {}
    for version in versions:
        staged[version] = base.parent / f".staging-{version}"
        tf.saved_model.save(module, str(staged[version]), signatures=module.f)
    for version in sorted(versions, reverse=True):
        os.rename(staged[version], base / str(version))


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_health_page_runs_as_shown(tmp_path: Path) -> None:
    blocks = runnable(SERVING / "health-and-model-list.md")
    assert [b.kind for b in blocks] == ["console", "python", "console", "console"]
    serve, client, probes, listing = blocks
    started = [_joined(c) for c in commands(serve)]
    assert len(started) == 2
    grpc, rest = _free_port(), _free_port()
    swaps = {"8500": str(grpc), "8501": str(rest)}
    base = tmp_path / "export" / "module"
    base.mkdir(parents=True)
    # the first command as shown, with a REST port and a short poll: no version yet
    first = _swap(started[0], swaps) + f" --rest_api_port={rest} --file_system_poll_wait_seconds=1"
    with _serving(first, tmp_path) as server:
        run_console(_part(probes, [0], swaps), tmp_path)
        _save(base, 1, 2)
        deadline = time.monotonic() + 120
        while _get(f"http://127.0.0.1:{rest}/v1/health/ready") != 200:
            assert time.monotonic() < deadline, "never ready"
            time.sleep(0.5)
        run_console(_part(probes, [1, 2], swaps), tmp_path)
        run_console(_part(listing, [0], swaps), tmp_path)
        watching = subprocess.Popen(
            [sys.executable, "-c", _swap(client.code, swaps)],
            cwd=tmp_path,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert watching.stdout is not None
        # Check, then Watch's first message
        assert [watching.stdout.readline() for _ in range(2)] == ["SERVING\n", "SERVING\n"]
        server.send_signal(signal.SIGTERM)
        out, err = watching.communicate(timeout=60)
    # at shutdown the open Watch receives NOT_SERVING, then ends with UNAVAILABLE
    assert out == "NOT_SERVING\n", out + err
    assert watching.returncode != 0 and "StatusCode.UNAVAILABLE" in err, err
    # tfship's spelling of the flag turns on the same service
    check = client.code.split("    # one message now")[0]
    with _serving(_swap(started[1], swaps) + " --rest-port 0", tmp_path, "stops the server"):
        done = _python(_swap(check, swaps), tmp_path)
        assert (done.returncode, done.stdout) == (0, "SERVING\n"), done.stderr


def test_the_tf_serving_220_page_python_runs(tmp_path: Path) -> None:
    blocks = runnable(SERVING / "tf-serving-2.20.md")
    assert [b.kind for b in blocks] == ["console", "python"]
    done = _python(blocks[1].code, tmp_path)
    assert done.returncode == 0, done.stderr


def _predict(rest: int, times: int) -> None:
    body = b'{"instances": [[1.0, 2.0, 3.0]]}'
    for _ in range(times):
        url = f"http://127.0.0.1:{rest}/v1/models/penguins:predict"
        with urllib.request.urlopen(urllib.request.Request(url, body), timeout=30) as answer:
            assert answer.status == 200


def test_the_request_logging_page_runs_as_shown(tmp_path: Path) -> None:
    page = SERVING / "request-logging.md"
    blocks = runnable(page)
    assert [b.kind for b in blocks] == ["console", "console", "console", "python", "python", "python"]
    serve, jq, per_task, read_tf, read_tfship, embedded = blocks
    config, rules = re.findall(r"```text\n(.*?)```", page.read_text(), re.S)[:2]
    models = tmp_path / "models" / "penguins"
    models.mkdir(parents=True)
    _save(models, 1)
    logs = tmp_path / "logs"
    grpc, rest = _free_port(), _free_port()
    swaps = {"/srv/models/penguins": str(models), "/var/log/tfship/": f"{logs}/"}
    ports = {"8500": str(grpc), "8501": str(rest)}
    (tmp_path / "models.config").write_text(_swap(config, swaps))
    [command] = commands(serve)
    assert not command.shown
    # one request in ten is written under the prefix's directory, in files named as shown
    with _serving(_swap(command.line, ports), tmp_path):
        _predict(rest, 200)
    [written] = sorted(logs.iterdir())
    pattern = rf"penguins-{re.escape(socket.gethostname())}-\d+-00000\.tfrecord"
    assert re.fullmatch(pattern, written.name), written.name
    done = _python(_swap(read_tf.code, swaps), tmp_path)
    assert done.returncode == 0, done.stderr
    records = done.stdout.splitlines()
    assert 1 <= len(records) <= 60 and set(records) == {"predict_log 1"}, done.stdout
    named = _swap(read_tfship.code, {"/var/log/tfship/penguins-web1-4242-00000.tfrecord": str(written)})
    done = _python(named + "print(len(logs))\n", tmp_path)
    assert (done.returncode, done.stdout) == (0, f"{len(records)}\n"), done.stderr
    # the per-task rules: task 0 of aa logs every request, here to JSON lines
    rules = "\n".join("      " + line for line in rules.strip().splitlines())
    lines = re.sub(r" *sampling_config \{.*?\n      \}", rules, config, flags=re.S)
    (tmp_path / "models.config").write_text(_swap(lines.replace('type: ""', 'type: "jsonl"'), swaps))
    [command] = commands(per_task)
    assert not command.shown
    for old in logs.iterdir():
        old.unlink()
    with _serving(command.line + f" --port={grpc} --rest_api_port={rest}", tmp_path):
        _predict(rest, 1)
    run_console(_part(jq, [0], swaps), tmp_path)
    # the embedded server of the same config
    (tmp_path / "models.config").write_text(_swap(config, swaps))
    done = _python(embedded.code, tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_tf_serving_220_page_flag_answers_with_tensor_content(tmp_path: Path) -> None:
    import grpc
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    [block] = [b for b in runnable(SERVING / "tf-serving-2.20.md") if b.kind == "console"]
    started = [_joined(c) for c in commands(block)]
    assert len(started) == 2
    base = tmp_path / "export" / "penguins"
    base.mkdir(parents=True)
    _save(base, 1)
    for command in started:
        grpc_port = _free_port()
        with _serving(f"{command} --port={grpc_port} --rest-port=0", tmp_path, "stops the server"):
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "penguins"
            request.inputs["x"].CopyFrom(tf.make_tensor_proto([[1.0, 2.0, 3.0]], tf.float32))
            with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
                answer = stub.Predict(request, timeout=30).outputs["y"]
        assert answer.tensor_content and not answer.float_val, command
        assert tf.make_ndarray(answer).tolist() == [[2.0, 4.0, 6.0]], command


def test_the_open_inference_protocol_page_runs_as_shown(tmp_path: Path) -> None:
    from venvs import clean_env, v2_clients_venv

    blocks = runnable(SERVING / "open-inference-protocol.md")
    assert [b.kind for b in blocks] == ["python", "console", "console", "python"]
    save, serve, calls, triton = blocks
    venv = v2_clients_venv()  # first: a download the server need not wait for
    done = _python(save.code, tmp_path)
    assert done.returncode == 0, done.stderr
    grpc, rest = _free_port(), _free_port()
    swaps = {"8500": str(grpc), "8501": str(rest)}
    [command] = commands(serve)
    assert not command.shown
    with _serving(_swap(command.line, swaps), tmp_path):
        run_console(_part(calls, list(range(len(commands(calls)))), swaps), tmp_path)
        # tritonclient, in the venv where its pins hold (without tfship's PYTHONPATH)
        ran = subprocess.run(
            [str(venv / "bin" / "python"), "-c", _swap(triton.code, swaps)],
            cwd=tmp_path,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    # each of its two clients (HTTP, then gRPC) prints what the comments beside the prints show
    shown = re.findall(r"^ *print\(.*\) +# (.*)$", triton.code, re.M)
    assert len(shown) == 2, triton.code
    want = "".join(f"{line}\n" for line in shown) * 2
    assert (ran.returncode, ran.stdout) == (0, want), (
        f"--- shown\n{want}--- printed\n{ran.stdout}{ran.stderr}"
    )
