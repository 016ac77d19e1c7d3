"""One record -> ``tf.train.Example`` builder and its typing rules: by Python value, by declared
fields (a parse spec's, a parsing signature's), by schema, and TF Serving's JSON rule; and the
same record built through every caller gives the same bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.errors import DataError
from tfship.records import ByFields, ByJson, BySchema, ByValue, Field, to_example
from tfship.records._shared import examples_from_json, fill_example, parse_spec_fields
from tfship.schema import CsvMissing, Schema

SCHEMA = Schema.from_dict(
    {
        "label": {"name": "y", "kind": "multiclass", "vocabulary": ["a", "b"]},
        "features": [
            {"name": "x", "dtype": "float32", "default": 0.5},
            {"name": "n", "dtype": "int64"},
            {"name": "s", "dtype": "string", "default": "", "use": {"kind": "hash", "buckets": 4}},
            {"name": "vec", "dtype": "float32", "shape": [2]},
            {"name": "tags", "dtype": "string", "shape": None, "use": {"kind": "hash", "buckets": 4}},
        ],
    }
)


def lists(example: Any) -> dict[str, tuple[str | None, list[Any]]]:
    """Each feature's list kind and values, to compare Examples by what they hold."""
    out = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        out[name] = (kind, list(getattr(feature, kind).value) if kind else [])
    return out


def wire(example: Any) -> bytes:
    return bytes(example.SerializeToString(deterministic=True))


# ---- by value ------------------------------------------------------------------------------------
def test_by_value_types_each_value_by_its_python_type() -> None:
    record = {
        "f": 1.5,
        "i": [1, 2],
        "b": True,
        "s": "é",
        "raw": b"\xff",
        "a": np.array([[1, 2]]),
        "none": None,
        "empty": [],
    }
    assert lists(to_example(record, ByValue())) == {
        "f": ("float_list", [1.5]),
        "i": ("int64_list", [1, 2]),
        "b": ("int64_list", [1]),
        "s": ("bytes_list", ["é".encode()]),
        "raw": ("bytes_list", [b"\xff"]),
        "a": ("int64_list", [1, 2]),
    }
    assert wire(to_example(record)) == wire(to_example(record, ByValue()))  # the default rule


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"x": {"a": 1.0}}, r"^r 3: feature 'x': value \{'a': 1.0\} of type dict is not str"),
        ({"x": [1.0, "a"]}, r"^r 3: feature 'x': values \[1.0, 'a'\] mix floats and strings$"),
        # numpy scalars read as numpy 1 wrote them, not as np.float64(1.5) or np.str_('a')
        ({"x": [np.float64(1.5), np.str_("a")]}, r"^r 3: feature 'x': values \[1.5, 'a'\] mix floats"),
        ({"x": np.complex64(1 + 2j)}, r"^r 3: feature 'x': value \(1\+2j\) of type complex64 is not str"),
        ({"x": [2**70, 1]}, r"^r 3: feature 'x': 1180591620717411303424 is outside the range of int64$"),
        ("x=1.0", r"^r 3: a record must be a dict or tf.train.Example, got str$"),
        (b"\xff\xff", r"^r 3: the bytes are not a serialized tf.train.Example$"),
    ],
)
def test_by_value_errors_name_the_record_and_the_feature(record: Any, message: str) -> None:
    with pytest.raises(DataError, match=message):
        to_example(record, ByValue(), where="r 3")


def test_an_example_or_its_bytes_passes_through() -> None:
    import tensorflow as tf

    theirs = tf.train.Example()
    theirs.features.feature["x"].float_list.value.append(2.5)
    for record in (theirs, theirs.SerializeToString()):
        ours = to_example(record, BySchema(SCHEMA))  # a built Example is not typed again
        assert type(ours).__module__ != type(theirs).__module__
        assert wire(ours) == theirs.SerializeToString(deterministic=True)
    with pytest.raises(DataError, match="got a tensorflow.Features message"):
        to_example(theirs.features)


# ---- by fields -----------------------------------------------------------------------------------
FIELDS = [
    Field("age", "float32", ()),
    Field("pos", "int64", (2,), default=np.array([0, 1])),
    Field("color", "string", (), default=np.array("red")),
    Field("tags", "string", None, sparse=True),
]


def test_by_fields_coerces_fills_defaults_and_ignores_undeclared_names() -> None:
    example = to_example({"age": "33", "tags": ["a", b"b"], "other": object()}, ByFields(FIELDS))
    assert lists(example) == {
        "age": ("float_list", [33.0]),
        "pos": ("int64_list", [0, 1]),
        "color": ("bytes_list", [b"red"]),
        "tags": ("bytes_list", [b"a", b"b"]),
    }
    # a variable-length feature with no values still says which list it is
    assert lists(to_example({"age": 1}, ByFields(FIELDS)))["tags"] == ("bytes_list", [])
    rule = ByFields({f.name: f for f in FIELDS}, csv=CsvMissing())
    assert rule.values({"age": " 2 ", "pos": "4|5", "color": "", "tags": "u|v"}) == {
        "age": [2.0],
        "pos": [4, 5],
        "color": ["red"],
        "tags": ["u", "v"],
    }


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({}, r"^row 7: feature 'age': missing, and the feature has no default$"),
        ({"age": "old"}, r"^row 7: feature 'age': expected float32, found 'old'"),
        ({"age": 1, "pos": [1, 2, 3]}, r"^row 7: feature 'pos': expected 2 values \(shape \[2\]\), found 3$"),
        ({"age": 1, "pos": [1.5, 2]}, r"^row 7: feature 'pos': expected int64, found \[1.5, 2\]"),
        ([1.0], r"^row 7: a record must be a dict or tf.train.Example, got list$"),
    ],
)
def test_by_fields_errors_name_the_record_and_the_feature(record: Any, message: str) -> None:
    with pytest.raises(DataError, match=message):
        to_example(record, ByFields(FIELDS), where="row 7")


def test_a_field_no_example_can_hold_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="dtype 'complex64' has no tf.train.Example list"):
        ByFields([Field("z", "complex64", ())])


def test_parse_spec_fields_read_tensorflows_features() -> None:
    import tensorflow as tf

    spec = {
        "x": tf.io.FixedLenFeature([], tf.float32, default_value=0.5),
        "v": tf.io.FixedLenFeature([3], tf.int64, default_value=[7, 8, 9]),
        "n": tf.io.FixedLenFeature([2], tf.int64),
        "s": tf.io.FixedLenFeature([], tf.string, default_value=""),
        "tags": tf.io.VarLenFeature(tf.string),
        "seq": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True),
    }
    fields = parse_spec_fields(spec)
    assert {n: (f.dtype, f.shape, f.sparse, f.required) for n, f in fields.items()} == {
        "x": ("float32", (), False, False),
        "v": ("int64", (3,), False, False),
        "n": ("int64", (2,), False, True),
        "s": ("string", (), False, False),
        "tags": ("string", None, True, False),
        "seq": ("float32", None, True, False),
    }
    record = {"n": [1, 2], "tags": ["a"], "seq": [1.0, 2.0]}
    example = to_example(record, ByFields(fields))
    parsed = tf.io.parse_example([example.SerializeToString()], spec)  # TensorFlow reads it back
    assert parsed["x"].numpy().tolist() == [0.5] and parsed["v"].numpy().tolist() == [[7, 8, 9]]
    assert parsed["n"].numpy().tolist() == [[1, 2]] and parsed["s"].numpy().tolist() == [b""]
    assert parsed["tags"].values.numpy().tolist() == [b"a"]
    assert parsed["seq"].numpy().tolist() == [[1.0, 2.0]]
    with pytest.raises(ValueError, match="'sp' is a SparseFeature"):
        parse_spec_fields({"sp": tf.io.SparseFeature("i", "v", tf.float32, 4)})


# ---- by schema -----------------------------------------------------------------------------------
def test_by_schema_fills_defaults_and_adds_the_label_when_asked() -> None:
    record = {"n": 3, "vec": [1, 2], "y": "b", "extra": 1}
    assert lists(to_example(record, BySchema(SCHEMA))) == {
        "x": ("float_list", [0.5]),
        "n": ("int64_list", [3]),
        "s": ("bytes_list", [b""]),
        "vec": ("float_list", [1.0, 2.0]),
        "tags": ("bytes_list", []),
    }
    assert lists(to_example(record, BySchema(SCHEMA, label=True)))["y"] == ("bytes_list", [b"b"])
    cells = {"x": "NA", "n": " 4", "s": "NA", "vec": "1|2", "tags": "", "y": "a"}
    assert BySchema(SCHEMA, csv=CsvMissing()).schema is SCHEMA
    assert lists(to_example(cells, BySchema(SCHEMA, label=True, csv=CsvMissing()))) == {
        "x": ("float_list", [0.5]),
        "n": ("int64_list", [4]),
        "s": ("bytes_list", [b"NA"]),  # a string cell is a value as written
        "vec": ("float_list", [1.0, 2.0]),
        "tags": ("bytes_list", []),
        "y": ("bytes_list", [b"a"]),
    }


def test_by_schema_errors_are_the_schemas() -> None:
    with pytest.raises(DataError, match=r"^f.csv:2: label 'y': 'c' is not one of \['a', 'b'\]$"):
        to_example({"n": 1, "vec": [1, 2], "y": "c"}, BySchema(SCHEMA, label=True), where="f.csv:2")
    with pytest.raises(DataError, match=r"^f.csv:2: field 'n': missing, and the feature has no default$"):
        to_example({"vec": [1, 2]}, BySchema(SCHEMA), where="f.csv:2")


@pytest.mark.parametrize(
    ("record", "csv"),
    [
        ({"x": 1.25, "n": 3, "s": "q", "vec": [1.0, 2.0], "tags": ["a", "b"]}, None),
        ({"x": "NA", "n": "3", "s": "", "vec": "1|2", "tags": "a|b"}, CsvMissing()),
        ({"n": 3, "vec": np.array([1.0, 2.0], np.float32), "tags": None}, None),
    ],
)
def test_schema_typing_and_its_parse_spec_typing_agree(record: dict[str, Any], csv: Any) -> None:
    by_spec = ByFields(parse_spec_fields(SCHEMA.parse_spec()), csv=csv)
    assert wire(to_example(record, by_spec)) == wire(to_example(record, BySchema(SCHEMA, csv=csv)))


def test_a_typed_dict_by_value_is_the_schemas_example() -> None:
    record = {"x": 1.25, "n": 3, "s": "q", "vec": [1.0, 2.0], "tags": ["a", "b"]}
    assert wire(to_example(record, ByValue())) == wire(to_example(record, BySchema(SCHEMA)))


# ---- TF Serving's JSON rule ----------------------------------------------------------------------
def test_by_json_types_by_json_type() -> None:
    value = {"f": 1.5, "i": [1, 2], "b": True, "s": "x", "raw": {"b64": "/w=="}, "e": []}
    features = to_example(value, ByJson()).features.feature
    assert list(features["f"].float_list.value) == [1.5]
    assert list(features["i"].int64_list.value) == [1, 2]
    assert list(features["b"].int64_list.value) == [1]
    assert list(features["s"].bytes_list.value) == [b"x"]
    assert list(features["raw"].bytes_list.value) == [b"\xff"]
    assert "e" in features and features["e"].WhichOneof("kind") is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"f": [1, 2.5]}, "Unexpected element type in feature: f expecting type: int64"),
        ({"f": [1, 1e39]}, "Unexpected element type in feature: f expecting type: int64"),
        ({"f": ["a", {"b64": "!"}, 1]}, "Unable to base64 decode"),
        ({"f": None}, "Feature: f has element with unexpected JSON type: Null"),
        ({"f": [[1]]}, "Feature: f has element with unexpected JSON type: Array"),
        ({"f": {"b": 1}}, "Feature: f has element with unexpected JSON type: Object"),
        ({"f": 2**64 - 1}, "Feature: f has uint64 element. Only int64 is supported."),
        ({"f": 1e39}, "Cannot convert JSON value: 1e+39 to float without loss of precision."),
        ([1], "Example must be JSON object but got JSON Array"),
    ],
)
def test_by_json_errors_are_tf_servings_texts(value: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        to_example(value, ByJson(), where="ignored")
    assert str(info.value) == message
    assert getattr(info.value, "code", None) == "INVALID_ARGUMENT"


def test_examples_from_json_fills_a_request() -> None:
    import tensorflow as tf

    target = tf.train.Example()  # any Example message can be filled, TensorFlow's too
    fill_example(target, {"x": 1.5}, ByJson())
    assert list(target.features.feature["x"].float_list.value) == [1.5]
    from tensorflow_serving.apis import classification_pb2

    request = classification_pb2.ClassificationRequest()
    examples_from_json({"context": {"c": "k"}, "examples": [{"x": 1}, {"x": 2}]}, request.input)
    shared = request.input.example_list_with_context
    assert [e.features.feature["x"].int64_list.value[0] for e in shared.examples] == [1, 2]
    assert list(shared.context.features.feature["c"].bytes_list.value) == [b"k"]
    with pytest.raises(ValueError) as info:
        examples_from_json({"examples": []}, request.input)
    assert str(info.value) == "JSON Value: {\n    \"examples\": []\n} 'examples' value is an empty array"


# ---- every caller, one record, the same bytes ----------------------------------------------------
PENGUIN = {
    "island": "Biscoe",
    "bill_length_mm": 45.5,
    "bill_depth_mm": 15.25,
    "flipper_length_mm": 210,
    "body_mass_g": 4500,
    "sex": "male",
    "year": 2008,
}


@pytest.mark.slow
@pytest.mark.estimator  # one caller is tfship export --warmup
def test_every_caller_builds_the_same_example(tiny_model: Any, tmp_path: Path) -> None:
    """The export's warmup (schema typing), ``inspect request`` (the parsing signature's feature
    spec, read from the graph), the schema's parse spec, the client's rule and TF Serving's JSON
    rule give one record the same bytes."""
    from tfship.cli import cli
    from tfship.inspect import example_request, read_saved_model, read_warmup

    schema = tiny_model.schema
    records = tmp_path / "warmup.jsonl"
    partial = {"island": "Dream", "sex": "female", "year": 2009}  # the others take defaults
    records.write_text(json.dumps(PENGUIN) + "\n" + json.dumps(partial) + "\n")
    out = tmp_path / "serving"
    args = [
        "export",
        "--model-dir",
        str(tiny_model.model_dir),
        "--schema",
        str(tiny_model.schema_path),
        "--receiver",
        "parsing",
        "--out",
        str(out),
        "--warmup",
        str(records),
    ]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (version,) = [p for p in out.iterdir() if p.name.isdigit()]
    logs = read_warmup(version / "assets.extra" / "tf_serving_warmup_requests")
    (warmup, *_), (warmup_partial, *_) = [
        log.classify_log.request.input.example_list.examples for log in logs
    ]

    info = read_saved_model(version)
    assert info.meta_graph("serve").signature("serving_default").feature_spec is not None
    requested = example_request(info, values=PENGUIN).grpc.input.example_list.examples[0]
    built = {
        "warmup (schema)": warmup,
        "inspect request (feature spec)": requested,
        "parse spec": to_example(PENGUIN, ByFields(parse_spec_fields(schema.parse_spec()))),
        "schema": to_example(PENGUIN, BySchema(schema)),
        "client (by value)": to_example(PENGUIN, ByValue()),
        "REST JSON": to_example(json.loads(json.dumps(PENGUIN)), ByJson()),
    }
    assert lists(warmup)["flipper_length_mm"] == ("int64_list", [210])
    assert {name: wire(e) for name, e in built.items()} == dict.fromkeys(built, wire(warmup))

    # defaults: the schema's, and the graph's as inspect reads them, are the same values
    from_graph = example_request(info, values=partial).grpc.input.example_list.examples[0]
    assert wire(from_graph) == wire(warmup_partial) == wire(to_example(partial, BySchema(schema)))
    default = schema.feature("flipper_length_mm").default
    assert lists(from_graph)["flipper_length_mm"] == ("int64_list", [default])
