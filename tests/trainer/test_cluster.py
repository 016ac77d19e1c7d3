"""TF_CONFIG roles, their errors, the TF_CONFIG a user asks for, and the training data shares."""

from __future__ import annotations

import csv
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.schema import Schema
from tfship.trainer import (
    ClusterConfigError,
    ClusterError,
    ClusterTask,
    InputOptions,
    LocalCluster,
    Shard,
    Watchdog,
    build_input_fn,
    make_tf_config,
    parse_tf_config,
)

CLUSTER = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"], "ps": ["h3:1"]}


def _config(task_type: str, index: int, **extra: Any) -> str:
    return json.dumps({"cluster": CLUSTER, "task": {"type": task_type, "index": index}, **extra})


@pytest.mark.parametrize(
    ("task_type", "index", "replica"),
    [("chief", 0, 0), ("worker", 0, 1), ("worker", 1, 2), ("ps", 0, None), ("evaluator", 0, None)],
)
def test_roles_and_their_share_of_the_data(task_type: str, index: int, replica: int | None) -> None:
    task = parse_tf_config(_config(task_type, index))
    assert task is not None
    assert (task.task_type, task.task_index, task.replica_index) == (task_type, index, replica)
    assert task.num_replicas == 3  # the chief and two workers; not the ps, not the evaluator


def test_role_line_and_peers() -> None:
    task = parse_tf_config(_config("worker", 1, tfship={"evaluator": True}))
    assert task is not None and task.has_evaluator
    line = "worker 1 of cluster chief:1 worker:2 ps:1 (+ evaluator), model_dir model"
    assert task.describe("model") == line
    assert task.peers() == [("ps 0", "h3:1"), ("chief 0", "h0:1")]
    chief = parse_tf_config(_config("chief", 0))
    assert chief is not None and not chief.has_evaluator and chief.peers() == [("ps 0", "h3:1")]


def test_no_cluster_is_local_training() -> None:
    assert parse_tf_config("{}") is None
    assert parse_tf_config(json.dumps({"task": {"type": "worker", "index": 0}})) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_config("local", 0), r'task type "local" is refused by TensorFlow'),
        (_config("evaluator", 1), r"task evaluator 1: TensorFlow runs one evaluator, with index 0"),
        (
            json.dumps({"cluster": {**CLUSTER, "evaluator": ["h4:1"]}, "task": {"type": "evaluator"}}),
            r'lists "evaluator" in "cluster": the evaluator is not part of the training cluster',
        ),
        (
            json.dumps({"cluster": {"worker": ["h1:1"]}, "task": {"type": "worker", "index": 0}}),
            r'must have exactly one "chief" task',
        ),
        (_config("worker", 2), r"task worker 2 is not in the cluster \(worker:2\)"),
        (_config("trainer", 0), r"task type 'trainer' is not one of"),
        ("{not json", r"TF_CONFIG is not valid JSON"),
    ],
)
def test_refused_setups_are_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(ClusterConfigError, match=message):
        parse_tf_config(text)


def test_tf_config_command_prints_a_task_config() -> None:
    args = ["cluster", "tf-config", "--chief", "h0:1", "--worker", "h1:1,h2:1", "--ps", "h3:1"]
    result = CliRunner().invoke(cli, [*args, "--task", "worker:1"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed == {"cluster": CLUSTER, "task": {"type": "worker", "index": 1}}
    assert parse_tf_config(result.output) == parse_tf_config(_config("worker", 1))
    evaluator = CliRunner().invoke(cli, [*args, "--evaluator", "--task", "evaluator:0"])
    assert json.loads(evaluator.output)["tfship"] == {"evaluator": True}
    assert "evaluator" not in json.loads(evaluator.output)["cluster"]
    bad = CliRunner().invoke(cli, [*args, "--task", "ps:3"])
    assert bad.exit_code == 2 and "Error: TF_CONFIG task ps 3 is not in the cluster (ps:1)" in bad.output
    usage = CliRunner().invoke(cli, [*args, "--task", "evaluator:0"])
    assert usage.exit_code == 2 and "needs --evaluator" in usage.output


def test_local_cluster_spec_and_its_tf_configs() -> None:
    cluster = LocalCluster.parse("workers=2,ps=1,evaluator=1")
    configs = cluster.tf_configs([5000, 5001, 5002, 5003])
    assert list(configs) == ["ps 0", "chief 0", "worker 0", "worker 1", "evaluator 0"]
    assert configs["worker 1"]["cluster"] == {
        "chief": ["127.0.0.1:5000"],
        "worker": ["127.0.0.1:5001", "127.0.0.1:5002"],
        "ps": ["127.0.0.1:5003"],
    }
    assert parse_tf_config(json.dumps(configs["chief 0"])).has_evaluator  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"'gpus=1': expected workers=N, ps=N or evaluator=0\|1"):
        LocalCluster.parse("gpus=1")
    with pytest.raises(ValueError, match=r"ps >= 1"):
        LocalCluster.parse("workers=1,ps=0")
    assert make_tf_config({"chief": ["a:1"], "worker": [], "ps": ["b:1"]}, "ps", 0)["cluster"] == {
        "chief": ["a:1"],
        "ps": ["b:1"],
    }


# ---- shares of the training data -----------------------------------------------------------------

SCHEMA = Schema.from_dict(
    {
        "label": {"name": "y", "kind": "regression"},
        "features": [{"name": "id", "dtype": "float32", "default": -1.0}],
    }
)


def _write_csvs(folder: Path, sizes: list[int]) -> list[str]:
    paths, next_id = [], 0
    for n, size in enumerate(sizes):
        path = folder / f"part-{n}.csv"
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["id", "y"])
            for _ in range(size):
                writer.writerow([next_id, 0.5])
                next_id += 1
        paths.append(str(path))
    return paths


def _ids(files: list[str], shard: Shard) -> list[int]:
    config = InputOptions(batch_size=4, epochs=1, shuffle_buffer=8)
    dataset = build_input_fn(SCHEMA, files, config, training=True, shard=shard)()
    return [int(v) for features, _ in dataset for v in features["id"].numpy().ravel()]


@pytest.mark.parametrize(("sizes", "replicas"), [([5, 7, 3, 9, 4], 3), ([23], 3), ([11, 6], 3), ([8, 8], 2)])
def test_shares_are_disjoint_and_cover_the_data(tmp_path: Path, sizes: list[int], replicas: int) -> None:
    files = _write_csvs(tmp_path, sizes)
    shares = [_ids(files, Shard(i, replicas)) for i in range(replicas)]
    together = [i for share in shares for i in share]
    assert sorted(together) == list(range(sum(sizes)))  # complete, and no record twice
    assert all(shares), "a replica got nothing"
    whole_files = len(files) >= replicas
    assert Shard(0, replicas).plan(files)[1] is None if whole_files else Shard(0, replicas).plan(files)[1]


@pytest.mark.parametrize(("sizes", "replicas"), [([4, 6, 5], 2), ([17], 3)])
def test_tfrecord_shares_are_disjoint_and_complete(tmp_path: Path, sizes: list[int], replicas: int) -> None:
    import tensorflow as tf

    def example(i: int) -> bytes:
        floats = {"id": float(i), "y": 0.5}
        feature = {k: tf.train.Feature(float_list=tf.train.FloatList(value=[v])) for k, v in floats.items()}
        return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()

    files, next_id = [], 0
    for n, size in enumerate(sizes):
        path = str(tmp_path / f"part-{n}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for _ in range(size):
                writer.write(example(next_id))
                next_id += 1
        files.append(path)
    together = sorted(i for r in range(replicas) for i in _ids(files, Shard(r, replicas)))
    assert together == list(range(sum(sizes)))


def test_evaluation_reads_everything_in_a_cluster(tmp_path: Path) -> None:
    files = _write_csvs(tmp_path, [5, 6])
    dataset = build_input_fn(SCHEMA, files, InputOptions(batch_size=4, epochs=1), training=False)()
    assert [int(v) for f, _ in dataset for v in f["id"].numpy().ravel()] == list(range(11))


def test_shard_index_must_be_in_range() -> None:
    with pytest.raises(ValueError, match=r"shard index 3 is not in \[0, 3\)"):
        Shard(3, 3)


# ---- tasks that end by themselves -------------------------------------------------------------


@pytest.fixture()
def dead_peers() -> Iterator[list[str]]:
    """Three addresses where nobody answers: bound, never listening."""
    sockets = [socket.socket() for _ in range(3)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        yield [f"127.0.0.1:{sock.getsockname()[1]}" for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _watchdog(tmp_path: Path, dead: list[str], task_type: str, **options: Any) -> tuple[Watchdog, list[int]]:
    task = ClusterTask({"chief": dead[:1], "worker": dead[1:2], "ps": dead[2:]}, task_type, 0)
    codes: list[int] = []
    return Watchdog(task, str(tmp_path), 100, poll=0.05, exit_fn=codes.append, **options), codes


def _note(model_dir: Path, name: str, payload: dict[str, Any]) -> None:
    """A task's note, where the tasks of a cluster leave them for each other."""
    folder = model_dir / "tfship-cluster"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps(payload))


def _until(condition: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_worker_that_outlives_the_chief_ends(tmp_path: Path, dead_peers: list[str]) -> None:
    watchdog, codes = _watchdog(tmp_path, dead_peers, "worker", grace=0.2)
    _note(tmp_path, "chief.json", {"global_step": 50})  # an earlier, shorter run: not the end
    watchdog.start()
    time.sleep(0.5)
    assert codes == []
    _note(tmp_path, "chief.json", {"global_step": 101})
    _until(lambda: codes)
    assert codes == [0]
    assert json.loads((tmp_path / "tfship-cluster" / "worker-0.json").read_text())["global_step"] == 101


def test_a_peer_that_never_answers_ends_the_task_naming_it(tmp_path: Path, dead_peers: list[str]) -> None:
    watchdog, codes = _watchdog(tmp_path, dead_peers, "worker", startup_timeout=0.3)
    with pytest.raises(ClusterError, match=r"worker 0: ps 0 at 127\.0\.0\.1:\d+ did not answer within 0.3s"):
        watchdog.check_peers()
    watchdog.start()
    _until(lambda: codes)
    assert codes == [1]


def test_a_ps_waits_for_the_workers_after_the_chief(tmp_path: Path, dead_peers: list[str]) -> None:
    watchdog, _ = _watchdog(tmp_path, dead_peers, "ps", grace=30)
    _note(tmp_path, "chief.json", {"global_step": 100})
    ended: list[Any] = []
    thread = threading.Thread(target=lambda: ended.append(watchdog.wait_for_end()))
    thread.start()
    time.sleep(0.3)
    assert not ended  # worker 0 has not left its note yet
    _note(tmp_path, "worker-0.json", {"global_step": 100})
    thread.join(timeout=5)
    assert ended == [{"global_step": 100}]


def test_a_checkpoint_at_max_steps_also_ends_training(tmp_path: Path, dead_peers: list[str]) -> None:
    watchdog, _ = _watchdog(tmp_path, dead_peers, "worker", grace=0)
    ended: list[Any] = []
    thread = threading.Thread(target=lambda: ended.append(watchdog.wait_for_end()), daemon=True)
    thread.start()
    try:
        time.sleep(0.3)
        assert not ended  # no note, no checkpoint
        (tmp_path / "checkpoint").write_text(
            'model_checkpoint_path: "model.ckpt-60"\nall_model_checkpoint_paths: "model.ckpt-60"\n'
        )
        time.sleep(0.3)
        assert not ended  # a checkpoint of an earlier, shorter run
        (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-100"\n')
        thread.join(timeout=5)
    finally:
        watchdog.stop()
    assert ended == [{"global_step": 100, "max_steps": 100, "from": "checkpoint"}]


def test_a_ps_ends_on_a_final_checkpoint_only_once_the_chief_is_gone(tmp_path: Path) -> None:
    with socket.socket() as chief:
        chief.bind(("127.0.0.1", 0))
        chief.listen()
        address = f"127.0.0.1:{chief.getsockname()[1]}"
        task = ClusterTask({"chief": [address], "ps": ["127.0.0.1:1"]}, "ps", 0)
        watchdog = Watchdog(task, str(tmp_path), 100, grace=0, poll=0.05)
        (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-100"\n')
        ended: list[Any] = []
        thread = threading.Thread(target=lambda: ended.append(watchdog.wait_for_end()), daemon=True)
        thread.start()
        time.sleep(0.3)
        assert not ended  # the chief still answers: it may be closing its session on this ps
    thread.join(timeout=5)
    assert ended and ended[0]["global_step"] == 100


def test_a_ps_whose_chief_went_away_gives_up(tmp_path: Path) -> None:
    chief = socket.socket()
    chief.bind(("127.0.0.1", 0))
    chief.listen()
    address = f"127.0.0.1:{chief.getsockname()[1]}"
    task = ClusterTask({"chief": [address], "ps": ["127.0.0.1:1"]}, "ps", 0)
    watchdog = Watchdog(task, str(tmp_path), 100, startup_timeout=0.5, poll=0.05, liveness_every=0.1)
    watchdog.check_peers()
    errors: list[Exception] = []

    def wait() -> None:
        try:
            watchdog.wait_for_end()
        except ClusterError as exc:
            errors.append(exc)

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    time.sleep(1.0)
    assert not errors  # the chief answers: training goes on
    chief.close()
    thread.join(timeout=10)
    assert len(errors) == 1
    assert re.match(
        rf"ps 0: chief 0 at {re.escape(address)} stopped answering \d+s ago, before training "
        r"reached step 100",
        str(errors[0]),
    )


def test_local_cluster_checks_its_input_before_starting_tasks(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA.to_dict()))
    files = _write_csvs(tmp_path, [3])
    base = [
        "train",
        "--schema",
        str(tmp_path / "schema.json"),
        "--eval",
        files[0],
        "--model-dir",
        str(tmp_path / "m"),
    ]
    missing = CliRunner().invoke(
        cli, [*base, "--train", str(tmp_path / "nope*.csv"), "--local-cluster", "workers=1,ps=1"]
    )
    assert missing.exit_code == 2 and "no file matches" in missing.output
    assert "[cluster] started" not in missing.output
    bad = CliRunner().invoke(cli, [*base, "--train", files[0], "--local-cluster", "workers=two"])
    assert bad.exit_code == 2 and "'workers=two': 'two' is not an integer" in bad.output
    assert not (tmp_path / "m").exists()
