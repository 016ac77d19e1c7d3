"""The Arrow fast path of CSV conversion agrees with the value-by-value path, cell for cell.

A block of CSV lines goes to Arrow's parser and is converted column by column with Arrow
kernels; a block with a blank line is read line by line and converted value by value. So the
same cells, once as they are and once followed by a blank line, take the two paths through
``run_job``; an echo model shows what each path made of every cell.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfship.loaders import JobSpec, LocalModel, load, run_job
from tfship.schema import MissingColumnError

pytestmark = pytest.mark.slow

#: One valid cell per feature; an example replaces one column with drawn cells.
VALID = {"f": "1", "f_default": "1", "i": "1", "s": "x", "pair": "1|2", "tags": "a", "ids": "1"}
NAMES = list(VALID)

_atoms = st.sampled_from(
    ["1", "-2", "3.0", "3.5", "1e3", " 4 ", "x", "", "  ", "NA", "None", "null", "nan", "7|8", "9|", "a|b|c"]
)
#: The missing-cell rules: the default tokens, the tokens in string columns too, other tokens.
RULES: list[dict[str, Any]] = [{}, {"na_strings": True}, {"na_values": ["x", "-"]}]
cells = st.lists(st.one_of(_atoms, st.text("0123456789.-| ae", max_size=6)), min_size=1, max_size=12)


@pytest.fixture(scope="module")
def echo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalModel]:
    """A parsing signature over every kind of feature, answering with what it parsed."""
    import tensorflow as tf

    v1 = tf.compat.v1
    path = tmp_path_factory.mktemp("echo") / "1"
    spec = {
        "f": tf.io.FixedLenFeature([], tf.float32),
        "f_default": tf.io.FixedLenFeature([], tf.float32, default_value=1.5),
        "i": tf.io.FixedLenFeature([], tf.int64),
        "s": tf.io.FixedLenFeature([], tf.string, default_value="z"),
        "pair": tf.io.FixedLenFeature([2], tf.float32),
        "tags": tf.io.VarLenFeature(tf.string),
        "ids": tf.io.VarLenFeature(tf.int64),
    }
    with tf.Graph().as_default(), v1.Session() as session:
        examples = v1.placeholder(tf.string, [None], name="input_example_tensor")
        outputs = {}
        for name, value in tf.io.parse_example(examples, spec).items():
            if not isinstance(value, tf.SparseTensor):
                outputs[name] = tf.identity(value)
                continue
            # One row's values in one string, and how many (the outputs of each batch concatenate).
            texts = tf.sparse.to_dense(
                tf.sparse.map_values(tf.strings.as_string, value) if value.dtype != tf.string else value
            )
            outputs[name] = tf.strings.reduce_join(texts, axis=1, separator="|")
            ones = tf.SparseTensor(value.indices, tf.ones_like(value.values, tf.int64), value.dense_shape)
            outputs[f"{name}_count"] = tf.sparse.reduce_sum(ones, axis=1, output_is_sparse=False)
        build = v1.saved_model.signature_def_utils.predict_signature_def
        builder = v1.saved_model.Builder(str(path))
        signatures = {"serving_default": build({"examples": examples}, outputs)}
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=signatures)
        builder.save()
    with load(path) as model:
        yield model


def _run(model: LocalModel, folder: Path, lines: list[str], rule: dict[str, Any]) -> tuple[str, str]:
    """The predictions and the rejects of ``run_job`` on a CSV file of ``lines``."""
    source, out, rejects = folder / "in.csv", folder / "out.jsonl", folder / "rejects.jsonl"
    source.write_text("\n".join([",".join(NAMES), *lines]) + "\n")
    run_job(model, JobSpec([str(source)], out, batch_size=1, rejects=rejects, **rule))
    return out.read_text(), rejects.read_text()


def _lines(name: str, values: list[str]) -> list[str]:
    return [",".join(value if n == name else VALID[n] for n in NAMES) for value in values]


@settings(max_examples=300, deadline=None)
@given(values=cells, name=st.sampled_from(NAMES), rule=st.sampled_from(RULES))
def test_fast_and_slow_conversion_agree(
    echo: LocalModel, values: list[str], name: str, rule: dict[str, Any]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        fast = _run(echo, folder, _lines(name, values), rule)
        slow = _run(echo, folder, [*_lines(name, values), ""], rule)  # a blank line: line by line
    assert fast == slow


def test_reasons_name_the_field_and_what_was_found(echo: LocalModel, tmp_path: Path) -> None:
    predictions, rejects = _run(echo, tmp_path, _lines("i", ["3.5", "", "4"]), {})
    reasons = {r["line"]: r["reason"] for r in map(json.loads, rejects.splitlines())}
    assert sorted(reasons) == [2, 3]
    assert reasons[2].startswith("field 'i': expected int64, found '3.5'")
    assert reasons[3] == "field 'i': missing, and the feature has no default"
    assert [json.loads(line)["i"] for line in predictions.splitlines()] == [4]


#: One valid JSON value per feature; an example replaces one feature's value with drawn ones.
JSON_VALID: dict[str, Any] = {
    "f": 1,
    "f_default": 1.5,
    "i": 1,
    "s": "x",
    "pair": [1, 2],
    "tags": ["a"],
    "ids": [1],
}
_ABSENT = object()
_json_atoms = st.one_of(
    st.sampled_from(
        [None, True, 0, 3, -2, 3.0, 3.5, 1e3, 2**31, 2**53 + 1, 2**63, "", "3", "x", [1, 2], [], {}]
    ),
    st.just(_ABSENT),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text("0123456789.-x\u00e9 ", max_size=4),
)
json_values = st.lists(_json_atoms, min_size=1, max_size=12)


def _json_lines(name: str, values: list[Any]) -> list[str]:
    lines = []
    for value in values:
        record = {n: value if n == name else JSON_VALID[n] for n in NAMES}
        if value is _ABSENT:
            del record[name]
        lines.append(json.dumps(record))
    return lines


def _run_json(model: LocalModel, folder: Path, lines: list[str]) -> tuple[str, str]:
    source, out, rejects = folder / "in.jsonl", folder / "out.jsonl", folder / "rejects.jsonl"
    source.write_text("\n".join(lines) + "\n")
    try:
        run_job(model, JobSpec([str(source)], out, batch_size=4, rejects=rejects))
    except MissingColumnError as exc:  # no row has the feature
        return str(exc), ""
    return out.read_text(), rejects.read_text()


@settings(max_examples=300, deadline=None)
@given(values=json_values, name=st.sampled_from(NAMES))
def test_json_lines_read_by_arrow_and_line_by_line_agree(
    echo: LocalModel, values: list[Any], name: str
) -> None:
    # JSON Lines of plain objects are read by Arrow; a blank line sends the file line by line.
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        fast = _run_json(echo, folder, _json_lines(name, values))
        slow = _run_json(echo, folder, [*_json_lines(name, values), ""])
    assert fast == slow
