"""Small crafted exports that declare more than they hold: every inspect command answers them
within seconds, in bounded memory, with one line naming the file and what is wrong.

Each export is built from tfship's own message classes (no TensorFlow), and each command runs
in a child interpreter whose address space is limited, against a deadline. The time and peak
memory of every run are printed (``pytest -s``).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tfship._wire import DT_FLOAT, DT_STRING, WARMUP_FILE, masked_crc, protos

#: The child's address space (``RLIMIT_AS``): a file that makes a command allocate more fails it.
MEMORY_LIMIT = 1536 << 20
#: Seconds a command may take on a crafted file before the test fails (and kills it).
DEADLINE = 8.0
#: Kill a child that is still running after this long: a hang must not hang the suite.
KILL_AFTER = 20.0
CHILD = f"""
import atexit, os, resource
resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))

def peak():  # this process's own high-water mark: ru_maxrss would include its parent's
    with open("/proc/self/status") as status, open(os.environ["PEAK_FILE"], "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM")))

atexit.register(peak)
from tfship.cli import main
main()
"""
#: ``variables.index``'s table magic number (the last 8 bytes of the file).
TABLE_MAGIC = 0xDB4775248B80FB57


@dataclasses.dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float
    #: The child's peak resident memory; ``None`` when it was killed before it could say.
    peak_mb: float | None


def tfship(*args: str | pathlib.Path) -> Run:
    """``tfship ARGS`` in a memory-limited child; its exit code, output, time and peak RSS."""
    with tempfile.TemporaryDirectory() as tmp:
        peak = pathlib.Path(tmp) / "peak"
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PEAK_FILE": str(peak)}
        out, err = pathlib.Path(tmp) / "out", pathlib.Path(tmp) / "err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            started = time.monotonic()
            child = subprocess.Popen(
                [sys.executable, "-c", CHILD, *map(str, args)], stdout=stdout, stderr=stderr, env=env
            )
            killer = threading.Timer(KILL_AFTER, child.kill)
            killer.start()
            try:
                child.wait()
            finally:
                killer.cancel()
        seconds = time.monotonic() - started
        kb = peak.read_text() if peak.exists() else ""
        peak_mb = int(kb) / 1024 if kb else None
        run = Run(child.returncode, out.read_text(), err.read_text(), seconds, peak_mb)
    memory = f"{run.peak_mb:.0f} MB" if run.peak_mb is not None else "unknown (killed)"
    command = " ".join(map(str, args[:2]))
    print(f"\n  tfship {command}...: exit {run.code}, {run.seconds:.2f} s, peak RSS {memory}")
    return run


def refused(run: Run, *fragments: str) -> str:
    """The one line a refusal prints (exit 2, no traceback, in time), checked for ``fragments``."""
    assert run.code == 2, run.stderr[-2000:]
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), run.stderr[-2000:]
    assert run.seconds < DEADLINE, run.seconds
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# --- crafted exports --------------------------------------------------------------------------


def _tensor(dtype: int, shape: list[int], values: list[Any] | None = None, content: bytes = b"") -> Any:
    proto = protos().tensor_pb2.TensorProto(dtype=dtype)
    for size in shape:
        proto.tensor_shape.dim.add(size=size)
    if content:
        proto.tensor_content = content
    elif dtype == DT_STRING:
        proto.string_val.extend(values or [])
    else:
        proto.float_val.extend(values or [])
    return proto


def _const(graph: Any, name: str, tensor: Any) -> Any:
    node = graph.node.add(name=name, op="Const")
    node.attr["dtype"].type = tensor.dtype
    node.attr["value"].tensor.CopyFrom(tensor)
    return node


@dataclasses.dataclass
class Parsing:
    """What a parsing export holds: its feature keys, default and dense shape, as declared."""

    keys: Any = dataclasses.field(default_factory=lambda: _tensor(DT_STRING, [1], [b"x"]))
    default: Any = dataclasses.field(default_factory=lambda: _tensor(DT_FLOAT, [1], [0.5]))
    dense_shape: list[int] = dataclasses.field(default_factory=lambda: [1])
    #: Changes to the graph after it is built (a cycle, another node).
    edit: Callable[[Any], None] | None = None


def parsing_export(root: pathlib.Path, spec: Parsing, version: str = "1") -> pathlib.Path:
    """A SavedModel whose ``serving_default`` parses tf.Examples with one ParseExampleV2 node."""
    pb = protos()
    model = pb.saved_model_pb2.SavedModel(saved_model_schema_version=1)
    mg = model.meta_graphs.add()
    mg.meta_info_def.tags.append("serve")
    graph = mg.graph_def
    graph.node.add(name="examples", op="Placeholder").attr["dtype"].type = DT_STRING
    for name in ("names", "sparse_keys", "ragged_keys"):
        _const(graph, name, _tensor(DT_STRING, [0]))
    _const(graph, "dense_keys", spec.keys)
    _const(graph, "default", spec.default)
    parse = graph.node.add(name="parse", op="ParseExampleV2")
    parse.input.extend(["examples", "names", "sparse_keys", "dense_keys", "ragged_keys", "default"])
    parse.attr["Tdense"].list.type.append(DT_FLOAT)
    shape = parse.attr["dense_shapes"].list.shape.add()
    for size in spec.dense_shape:
        shape.dim.add(size=size)
    parse.attr["num_sparse"].i = 0
    if spec.edit is not None:
        spec.edit(graph)
    sig = mg.signature_def["serving_default"]
    sig.method_name = "tensorflow/serving/predict"
    sig.inputs["examples"].name = "examples:0"
    sig.inputs["examples"].dtype = DT_STRING
    sig.inputs["examples"].tensor_shape.dim.add(size=-1)
    sig.outputs["x"].name = "parse:0"
    sig.outputs["x"].dtype = DT_FLOAT
    return _write(root, model, version)


def raw_export(root: pathlib.Path, dims: list[int]) -> pathlib.Path:
    """A SavedModel whose ``serving_default`` takes one float input of shape ``dims``."""
    pb = protos()
    model = pb.saved_model_pb2.SavedModel(saved_model_schema_version=1)
    mg = model.meta_graphs.add()
    mg.meta_info_def.tags.append("serve")
    graph = mg.graph_def
    graph.node.add(name="x", op="Placeholder").attr["dtype"].type = DT_FLOAT
    graph.node.add(name="y", op="Identity", input=["x"]).attr["T"].type = DT_FLOAT
    sig = mg.signature_def["serving_default"]
    sig.method_name = "tensorflow/serving/predict"
    sig.inputs["x"].name = "x:0"
    sig.inputs["x"].dtype = DT_FLOAT
    for size in dims:
        sig.inputs["x"].tensor_shape.dim.add(size=size)
    sig.outputs["y"].name = "y:0"
    sig.outputs["y"].dtype = DT_FLOAT
    return _write(root, model, "1")


def _write(root: pathlib.Path, model: Any, version: str) -> pathlib.Path:
    path = root / "m" / version
    path.mkdir(parents=True)
    (path / "saved_model.pb").write_bytes(model.SerializeToString())
    return path


def _self_loop(graph: Any) -> None:
    """The default becomes an Identity of itself."""
    node = next(n for n in graph.node if n.name == "default")
    node.Clear()
    node.name, node.op = "default", "Identity"
    node.input.append("default")


def _two_node_loop(graph: Any) -> None:
    """The keys become a Reshape of an Identity of the Reshape."""
    node = next(n for n in graph.node if n.name == "dense_keys")
    node.Clear()
    node.name, node.op = "dense_keys", "Reshape"
    node.input.extend(["keys_back", "keys_shape"])
    graph.node.add(name="keys_back", op="Identity", input=["dense_keys"])


# --- cycles -----------------------------------------------------------------------------------


@pytest.mark.parametrize("edit", [_self_loop, _two_node_loop], ids=["self", "two_nodes"])
def test_a_graph_cycle_on_the_way_to_a_constant_is_refused(
    tmp_path: pathlib.Path, edit: Callable[[Any], None]
) -> None:
    path = parsing_export(tmp_path, Parsing(edit=edit))
    other = parsing_export(tmp_path, Parsing(), version="2")
    served = parsing_export(tmp_path / "serving", Parsing()).parent
    node = "default" if edit is _self_loop else "dense_keys"
    commands: tuple[list[str | pathlib.Path], ...] = (
        ["inspect", "request", path],
        ["inspect", "show", path, "--json"],
        ["inspect", "diff", other, path],
        ["promote", path, "--to", served],
    )
    for args in commands if edit is _self_loop else commands[:1]:
        run = tfship(*args)
        refused(run, f"{path / 'saved_model.pb'}: node {node!r} is its own input", "cycle")


# --- sizes a constant declares ------------------------------------------------------------------


def test_a_default_declaring_twenty_million_values_is_refused(tmp_path: pathlib.Path) -> None:
    # one value stored, twenty million declared: TensorFlow's rule repeats the last value
    spec = Parsing(default=_tensor(DT_FLOAT, [20_000_000], [0.0]), dense_shape=[20_000_000])
    path = parsing_export(tmp_path, spec)
    assert (path / "saved_model.pb").stat().st_size < 1000
    other = parsing_export(tmp_path, Parsing(), version="2")
    argsets: list[list[str | pathlib.Path]] = [
        ["show", path, "--json"],
        ["request", path],
        ["diff", other, path],
    ]
    for args in argsets:
        refused(
            tfship("inspect", *args),
            f"{path / 'saved_model.pb'}: constant 'default' declares shape [20000000], 20000000 values",
        )


def test_a_default_of_exactly_the_most_values_is_read_and_one_more_is_not(tmp_path: pathlib.Path) -> None:
    from tfship.errors import ModelError
    from tfship.inspect import read_saved_model
    from tfship.inspect._tensorinfo import MAX_VALUES

    def spec(size: int) -> Any:
        path = parsing_export(
            tmp_path / str(size),
            Parsing(_tensor(DT_STRING, [1], [b"x"]), _tensor(DT_FLOAT, [size], [0.5]), [size]),
        )
        return read_saved_model(path).meta_graph().signature().feature_spec

    assert spec(MAX_VALUES)["x"].default == [0.5] * MAX_VALUES
    with pytest.raises(ModelError, match=rf"declares shape \[{MAX_VALUES + 1}\]"):
        spec(MAX_VALUES + 1)


@pytest.mark.parametrize(
    ("keys", "default", "dense_shape", "fragment"),
    [
        # a string constant: an array of 2**28 references before a single key is read
        (
            _tensor(DT_STRING, [1 << 28], [b"x"]),
            None,
            [1],
            "constant 'dense_keys' declares shape [268435456]",
        ),
        (None, _tensor(DT_FLOAT, [1] * 300), [1], "constant 'default' declares 300 dimensions"),
        (
            None,
            _tensor(DT_FLOAT, [3, -2], [1.0]),
            [1],
            "constant 'default' of dtype float32 cannot be read: tensor shape [3, -2]",
        ),
        # tensor_content shorter than its shape: TensorFlow refuses it, and so does inspect
        (
            None,
            _tensor(DT_FLOAT, [4], content=b"\0" * 8),
            [4],
            "constant 'default' of dtype float32 cannot be read: tensor_content holds 8 bytes",
        ),
        (
            None,
            _tensor(DT_FLOAT, [2], [1.0, 2.0]),
            [3],
            "the default of feature 'x' (node 'default') has 2 values, but its shape [3] holds 3",
        ),
        (
            None,
            _tensor(DT_FLOAT, [3], [1.0, 2.0, 3.0]),
            [-5],
            "feature 'x' of node 'parse' declares shape [-5]",
        ),
    ],
    ids=["string_keys", "rank", "negative_dim", "tensor_content", "default_vs_shape", "feature_dim"],
)
def test_a_constant_that_is_not_what_it_declares_is_refused(
    tmp_path: pathlib.Path, keys: Any, default: Any, dense_shape: list[int], fragment: str
) -> None:
    spec = Parsing(dense_shape=dense_shape)
    spec.keys = keys if keys is not None else spec.keys
    spec.default = default if default is not None else spec.default
    path = parsing_export(tmp_path, spec)
    refused(tfship("inspect", "request", path), f"{path / 'saved_model.pb'}: {fragment}")


# --- sizes a signature declares -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dims", "fragment"),
    [
        (
            [-1, 1_000_000, 1_000_000],
            "input 'x' of shape [1000000, 1000000] makes a request of 1 row(s) hold",
        ),
        ([-1] + [1] * 5000, "input 'x' has 5000 dimensions; TensorFlow allows 254"),
        ([-1] + [2**62] * 20_000, "input 'x' has 20000 dimensions"),
    ],
    ids=["values", "rank", "huge_rank"],
)
def test_a_raw_input_too_large_to_fill_is_refused(
    tmp_path: pathlib.Path, dims: list[int], fragment: str
) -> None:
    path = raw_export(tmp_path, dims)
    run = tfship("inspect", "request", path)
    refused(run, f"{path / 'saved_model.pb'}: signature 'serving_default' {fragment}")
    if dims[1] == 2**62:
        shown = tfship("inspect", "show", path, "--json")  # only described, nothing built: it answers
        assert shown.code == 0 and shown.seconds < DEADLINE, shown.stderr


def test_a_feature_without_default_too_large_to_fill_is_refused(tmp_path: pathlib.Path) -> None:
    path = parsing_export(tmp_path, Parsing(default=_tensor(DT_FLOAT, [0]), dense_shape=[1 << 40]))
    refused(
        tfship("inspect", "request", path, "--format", "grpc"),
        "signature 'serving_default' feature 'x' of shape [1099511627776] makes a request",
    )


# --- sizes variables.index declares ---------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not out[-1] & 0x80:
            return bytes(out)


def _block(entries: list[tuple[bytes, bytes]]) -> bytes:
    """A table block of full keys (no prefix sharing) and its one restart point."""
    body = b"".join(_varint(0) + _varint(len(k)) + _varint(len(v)) + k + v for k, v in entries)
    return body + struct.pack("<II", 0, 1)


def _with_trailer(block: bytes) -> bytes:
    return block + b"\0" + struct.pack("<I", masked_crc(block + b"\0"))


def table(entries: list[tuple[bytes, bytes]]) -> bytes:
    """A TensorFlow table file (what ``variables.index`` is) holding ``entries``, sorted by key."""
    data = _block(entries)
    index = _block([(entries[-1][0], _varint(0) + _varint(len(data)))])
    head = _with_trailer(data)
    handles = _varint(0) + _varint(0) + _varint(len(head)) + _varint(len(index))
    footer = handles.ljust(40, b"\0") + struct.pack("<Q", TABLE_MAGIC)
    return head + _with_trailer(index) + footer


def bundle_export(root: pathlib.Path, shards: int, shape: list[int], dtype: int = DT_FLOAT) -> pathlib.Path:
    """A valid raw export whose ``variables/`` holds an index of ``shards`` shards, one tensor of
    ``shape`` in shard 0, and shard 0's data file (4 bytes)."""
    pb = protos().tensor_bundle_pb2
    path = raw_export(root, [-1, 1])
    variables = path / "variables"
    variables.mkdir()
    entry = pb.BundleEntryProto(dtype=dtype, shard_id=0, offset=0, size=4, crc32c=masked_crc(b"\0" * 4))
    for size in shape:
        entry.shape.dim.add(size=size)
    header = pb.BundleHeaderProto(num_shards=shards)
    (variables / "variables.index").write_bytes(
        table([(b"", header.SerializeToString()), (b"v", entry.SerializeToString())])
    )
    (variables / f"variables.data-00000-of-{shards:05d}").write_bytes(b"\0" * 4)
    return path


def test_a_sound_crafted_bundle_is_ready(tmp_path: pathlib.Path) -> None:
    from tfship.inspect._bundle import bundle_problems

    path = bundle_export(tmp_path, 1, [1])
    assert bundle_problems(path / "variables") == []


def test_an_index_claiming_two_billion_shards_is_answered_in_seconds(tmp_path: pathlib.Path) -> None:
    path = bundle_export(tmp_path, 2**31 - 1, [1])
    index = path / "variables" / "variables.index"
    assert index.stat().st_size < 400
    run = tfship("inspect", "check", path, "--json")
    # check's verdict on a corrupt index, as on every other: not ready (exit 3), in one line
    assert run.code == 3 and run.seconds < DEADLINE, run.stderr
    message = (
        f"{index} declares 2147483647 shards, but 2147483646 of their data files are missing "
        "(the first: variables.data-00001-of-2147483647); 1 of them hold a tensor or are present"
    )
    assert run.stderr.splitlines() == [
        f"Error: {path} is not ready to serve: 1 finding(s), first: variables: {message}"
    ]
    listed = tfship("inspect", "versions", path.parent)
    assert listed.code == 0 and listed.seconds < DEADLINE
    assert f"which cannot load ({message}): no version is served" in listed.stdout


def test_a_few_missing_shards_are_each_named(tmp_path: pathlib.Path) -> None:
    from tfship.inspect._bundle import bundle_problems

    path = bundle_export(tmp_path, 3, [1])
    assert bundle_problems(path / "variables") == [
        f"{path / 'variables' / 'variables.data-00001-of-00003'} is missing",
        f"{path / 'variables' / 'variables.data-00002-of-00003'} is missing",
    ]


def test_a_tensor_of_huge_rank_in_the_index_costs_no_big_arithmetic(tmp_path: pathlib.Path) -> None:
    path = bundle_export(tmp_path, 1, [2**62] * 100_000, dtype=DT_STRING)
    run = tfship("inspect", "check", path)
    assert run.code == 3 and run.seconds < DEADLINE, run.stderr
    assert "variables: " in run.stderr and "do not match their checksum" in run.stderr


# --- sizes a warmup file declares -----------------------------------------------------------------


def test_a_warmup_record_declaring_a_terabyte_is_named(tmp_path: pathlib.Path) -> None:
    path = raw_export(tmp_path, [-1, 1])
    warmup = path / WARMUP_FILE
    warmup.parent.mkdir()
    length = struct.pack("<Q", 1 << 40)
    warmup.write_bytes(length + struct.pack("<I", masked_crc(length)) + b"abc")
    run = tfship("inspect", "check", path, "--json")
    assert run.code == 3 and run.seconds < DEADLINE, run.stderr
    assert "warmup: " in run.stderr and "record 0 is truncated: expected 1099511627776 bytes" in run.stderr


# --- an object graph that is not what it says ----------------------------------------------------


def _child_out_of_range(og: Any) -> None:
    og.nodes.add().children.add(node_id=99, local_name="f")


def _function_of(og: Any) -> Any:
    og.nodes.add().children.add(node_id=1, local_name="f")
    og.nodes.add().function.concrete_functions.append("cf")
    return og.concrete_functions["cf"].canonicalized_input_signature


def _bad_tuple_name(og: Any) -> None:
    named = _function_of(og).named_tuple_value
    named.name = "not a name!"
    named.values.add(key="a")


def _not_a_pair(og: Any) -> None:
    _function_of(og).list_value.values.add().int64_value = 3


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (_child_out_of_range, "the root's child 'f' is node 99, of 1 nodes"),
        (_bad_tuple_name, "the named tuple 'not a name!' has no valid Python name"),
        (_not_a_pair, "the input signature of 'cf' is not a pair of arguments and keywords"),
    ],
    ids=["child", "tuple_name", "pair"],
)
def test_an_object_graph_that_cannot_be_read_is_refused_in_one_line(
    tmp_path: pathlib.Path, edit: Callable[[Any], None], fragment: str
) -> None:
    from click.testing import CliRunner

    from tfship.cli import cli

    path = raw_export(tmp_path, [-1, 1])
    model = protos().saved_model_pb2.SavedModel.FromString((path / "saved_model.pb").read_bytes())
    edit(model.meta_graphs[0].object_graph_def)
    (path / "saved_model.pb").write_bytes(model.SerializeToString())
    for args in (["--all"], ["--json"]):
        result = CliRunner().invoke(cli, ["inspect", "show", str(path), *args])
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"Error: {path / 'saved_model.pb'}: its object graph cannot be read: {fragment}\n"
        )


def test_a_variable_of_huge_rank_is_described_in_seconds(tmp_path: pathlib.Path) -> None:
    path = raw_export(tmp_path, [-1, 1])
    model = protos().saved_model_pb2.SavedModel.FromString((path / "saved_model.pb").read_bytes())
    node = model.meta_graphs[0].graph_def.node.add(name="v", op="VarHandleOp")
    node.attr["dtype"].type = DT_FLOAT
    dims = node.attr["shape"].shape.dim
    for _ in range(100_000):
        dims.add(size=2**62)
    (path / "saved_model.pb").write_bytes(model.SerializeToString())
    run = tfship("inspect", "show", path, "--json")
    assert run.code == 0 and run.seconds < DEADLINE, run.stderr
    assert '"bytes": null' in run.stdout


def test_index_entries_claiming_the_same_bytes_are_not_read_again(tmp_path: pathlib.Path) -> None:
    # a 4 MiB shard and a thousand entries of the index covering all of it: 4 GiB to checksum
    from tfship.inspect._bundle import bundle_problems

    pb = protos().tensor_bundle_pb2
    path = raw_export(tmp_path, [-1, 1])
    variables = path / "variables"
    variables.mkdir()
    size = 4 << 20
    entries = [(b"", pb.BundleHeaderProto(num_shards=1).SerializeToString())]
    for i in range(1000):
        entry = pb.BundleEntryProto(dtype=DT_FLOAT, shard_id=0, offset=0, size=size, crc32c=1)
        entry.shape.dim.add(size=size // 4)
        entries.append((b"v%04d" % i, entry.SerializeToString()))
    (variables / "variables.index").write_bytes(table(entries))
    (variables / "variables.data-00000-of-00001").write_bytes(b"\0" * size)
    started = time.monotonic()
    problems = bundle_problems(variables)
    assert time.monotonic() - started < DEADLINE
    shard = variables / "variables.data-00000-of-00001"
    assert len(problems) == 1000
    assert problems[0] == (
        f"{shard}: the bytes of tensor 'v0000' (at 0, {size} bytes) do not match their checksum "
        "in the index (corrupt)"
    )
    assert problems[1] == (
        f"{shard}: tensor 'v0001' (at 0, {size} bytes) overlaps tensor 'v0000' (at 0, {size} bytes)"
    )
