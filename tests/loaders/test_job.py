"""`tfship predict`: readers, writers, order, rejects, summary and errors, through the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from loaders.support import EstimatorExports, estimator_predictions, make_rows, records_of
from tfship.cli import cli

pytestmark = pytest.mark.slow

N = 40


@pytest.fixture(scope="module")
def rows() -> dict[str, Any]:
    return make_rows(N, seed=21)


@pytest.fixture(scope="module")
def want(estimator_exports: EstimatorExports, rows: dict[str, Any]) -> np.ndarray:
    return estimator_predictions(estimator_exports, rows)["probabilities"]


def _csv_lines(rows: dict[str, Any]) -> list[str]:
    lines = []
    for i, r in enumerate(records_of(rows)):
        v2 = "|".join(f"{v:.9g}" for v in r["v2"])
        lines.append(f"id{i},{r['x']:.9g},{v2},{r['color']},{'|'.join(r['tags'])}")
    return lines


def write_csv(path: Path, rows: dict[str, Any], extra: list[str] = ()) -> Path:  # type: ignore[assignment]
    path.write_text("id,x,v2,color,tags\n" + "\n".join(_csv_lines(rows) + list(extra)) + "\n")
    return path


def _examples(rows: dict[str, Any]) -> list[bytes]:
    import tensorflow as tf

    train = tf.train
    out = []
    for i, r in enumerate(records_of(rows)):
        feats = {
            "id": train.Feature(bytes_list=train.BytesList(value=[f"id{i}".encode()])),
            "x": train.Feature(float_list=train.FloatList(value=[r["x"]])),
            "v2": train.Feature(float_list=train.FloatList(value=r["v2"])),
            "color": train.Feature(bytes_list=train.BytesList(value=[r["color"].encode()])),
            "tags": train.Feature(bytes_list=train.BytesList(value=[t.encode() for t in r["tags"]])),
        }
        out.append(train.Example(features=train.Features(feature=feats)).SerializeToString())
    return out


def write_input(kind: str, directory: Path, rows: dict[str, Any]) -> Path:
    records = [{"id": f"id{i}", **r} for i, r in enumerate(records_of(rows))]
    if kind == "csv":
        return write_csv(directory / "in.csv", rows)
    if kind == "jsonl":
        path = directory / "in.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        return path
    if kind == "parquet":
        path = directory / "in.parquet"
        pd.DataFrame(records).to_parquet(path)
        return path
    import tensorflow as tf

    path = directory / "in.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for data in _examples(rows):
            writer.write(data)
    return path


def predict(*args: str) -> Any:
    return CliRunner().invoke(cli, ["predict", *args])


def read_output(path: Path) -> pd.DataFrame:
    if path.suffix == ".csv":
        return pd.read_csv(path)
    if path.suffix == ".jsonl":
        return pd.read_json(path, lines=True)
    return pd.read_parquet(path)


def probabilities(frame: pd.DataFrame) -> np.ndarray:
    if "probabilities_0" in frame:
        return frame[["probabilities_0", "probabilities_1"]].to_numpy()
    return np.stack([np.asarray(v, dtype=float) for v in frame["probabilities"]])


@pytest.mark.parametrize("kind", ["csv", "jsonl", "parquet", "tfrecord"])
def test_every_reader_predicts_like_the_estimator(
    estimator_exports: EstimatorExports,
    rows: dict[str, Any],
    want: np.ndarray,
    tmp_path: Path,
    kind: str,
) -> None:
    source = write_input(kind, tmp_path, rows)
    out = tmp_path / "out.csv"
    result = predict(
        str(estimator_exports.parsing),
        "-i",
        str(source),
        "-o",
        str(out),
        "-s",
        "predict",
        "--outputs",
        "probabilities,class_ids",
        "--keep-columns",
        "id",
        "--batch-size",
        "7",
    )
    assert result.exit_code == 0, result.output
    assert f"rows in: {N}, predicted: {N}, rejected: 0" in result.stdout
    frame = read_output(out)
    assert list(frame.columns) == ["id", "probabilities_0", "probabilities_1", "class_ids"]
    assert frame["id"].tolist() == [f"id{i}" for i in range(N)]  # input order
    np.testing.assert_allclose(probabilities(frame), want, rtol=1e-5)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_jsonl_and_parquet_outputs_keep_row_shapes(
    estimator_exports: EstimatorExports,
    rows: dict[str, Any],
    want: np.ndarray,
    tmp_path: Path,
    fmt: str,
) -> None:
    source = write_input("csv", tmp_path, rows)
    out = tmp_path / f"out.{fmt}"
    result = predict(
        str(estimator_exports.parsing),
        "-i",
        str(source),
        "-o",
        str(out),
        "-s",
        "predict",
        "--outputs",
        "probabilities,classes",
    )
    assert result.exit_code == 0, result.output
    frame = read_output(out)
    np.testing.assert_allclose(probabilities(frame), want, rtol=1e-5)
    # classes is [batch, 1]: each row keeps its one-element list, decoded to text
    assert [list(c) for c in frame["classes"]] == [[str(int(p[1] > p[0]))] for p in want]


@pytest.mark.parametrize("export", ["parsing", "scalar"])
def test_tfrecord_output_is_prediction_logs(
    estimator_exports: EstimatorExports,
    rows: dict[str, Any],
    want: np.ndarray,
    tmp_path: Path,
    export: str,
) -> None:
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    source = write_input("csv", tmp_path, rows)
    out = tmp_path / "out.tfrecord"
    model = getattr(estimator_exports, export)
    result = predict(
        str(model), "-i", str(source), "-o", str(out), "-s", "predict", "--outputs", "probabilities"
    )
    assert result.exit_code == 0, result.output
    logs = [
        prediction_log_pb2.PredictionLog.FromString(r)
        for r in tf.data.TFRecordDataset(str(out)).as_numpy_iterator()
    ]
    assert len(logs) == N
    got = np.concatenate([tf.make_ndarray(log.predict_log.response.outputs["probabilities"]) for log in logs])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    first = logs[0].predict_log.request
    assert first.model_spec.signature_name == "predict"
    example = tf.train.Example.FromString(tf.make_ndarray(first.inputs["examples"])[0])
    assert example.features.feature["color"].bytes_list.value[0].decode() == rows["color"][0]
    # every row's example, as TensorFlow's own classes read it, holds that row's features
    for log, record in zip(logs, records_of(rows)):
        example = tf.train.Example.FromString(tf.make_ndarray(log.predict_log.request.inputs["examples"])[0])
        feature = example.features.feature
        assert feature["x"].float_list.value == pytest.approx([record["x"]], rel=1e-6)
        assert feature["v2"].float_list.value == pytest.approx(list(record["v2"]), rel=1e-6)
        assert [v.decode() for v in feature["tags"].bytes_list.value] == list(record["tags"])


@pytest.mark.parametrize("kind", ["csv", "jsonl", "tfrecord"])
def test_gzipped_inputs_read_like_plain_ones(
    estimator_exports: EstimatorExports,
    rows: dict[str, Any],
    want: np.ndarray,
    tmp_path: Path,
    kind: str,
) -> None:
    import gzip

    plain = write_input(kind, tmp_path, rows)
    packed = plain.with_name(plain.name + ".gz")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    out = tmp_path / "out.csv"
    result = predict(
        str(estimator_exports.parsing),
        "-i",
        str(packed),
        "-o",
        str(out),
        "-s",
        "predict",
        "--outputs",
        "probabilities",
    )
    assert result.exit_code == 0, result.output
    np.testing.assert_allclose(probabilities(read_output(out)), want, rtol=1e-5)


def test_classify_and_regress_signatures_log_as_tf_serving_does(
    estimator_exports: EstimatorExports, rows: dict[str, Any], want: np.ndarray, tmp_path: Path
) -> None:
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    source = write_input("csv", tmp_path, rows)
    logs = {}
    for signature in ("classification", "regression"):
        out = tmp_path / f"{signature}.tfrecord"
        result = predict(str(estimator_exports.parsing), "-i", str(source), "-o", str(out), "-s", signature)
        assert result.exit_code == 0, result.output
        logs[signature] = [
            prediction_log_pb2.PredictionLog.FromString(r)
            for r in tf.data.TFRecordDataset(str(out)).as_numpy_iterator()
        ]
    classify = [log.classify_log for log in logs["classification"]]
    assert len(classify) == N
    scores = [[c.score for c in log.response.result.classifications[0].classes] for log in classify]
    np.testing.assert_allclose(scores, want, rtol=1e-5)
    labels = [c.label for c in classify[0].response.result.classifications[0].classes]
    assert labels == ["0", "1"]
    example = classify[0].request.input.example_list.examples[0]
    assert example.features.feature["color"].bytes_list.value[0].decode() == rows["color"][0]
    regress = [log.regress_log.response.result.regressions[0].value for log in logs["regression"]]
    np.testing.assert_allclose(regress, want[:, 1], rtol=1e-5)  # logistic = P(class 1)


def test_files_may_follow_the_model(
    estimator_exports: EstimatorExports, rows: dict[str, Any], want: np.ndarray, tmp_path: Path
) -> None:
    half = N // 2
    first = write_csv(tmp_path / "a.csv", {k: v[:half] for k, v in rows.items()})
    second = write_csv(tmp_path / "b.csv", {k: v[half:] for k, v in rows.items()})
    out = tmp_path / "out.csv"
    result = predict(
        str(estimator_exports.parsing),
        str(first),
        str(second),
        "-o",
        str(out),
        "-s",
        "predict",
        "--outputs",
        "probabilities",
    )
    assert result.exit_code == 0, result.output
    np.testing.assert_allclose(probabilities(read_output(out)), want, rtol=1e-5)
    none = predict(str(estimator_exports.parsing), "-o", str(out))
    assert none.exit_code == 2 and "no input: give files after MODEL" in none.output


def test_the_summary_names_its_times_predict_load_and_total(
    estimator_exports: EstimatorExports, rows: dict[str, Any], tmp_path: Path
) -> None:
    source = write_csv(tmp_path / "in.csv", rows)
    args = [str(estimator_exports.parsing), str(source), "-o", str(tmp_path / "out.csv")]
    line = predict(*args).stdout.strip()
    times = re.fullmatch(
        rf"rows in: {N}, predicted: {N}, rejected: 0 \([\d,]+ rows/s, "
        r"predict (\d+\.\d\d) s, load (\d+\.\d\d) s, start-up (\d+\.\d\d) s, total (\d+\.\d\d) s\) "
        r"-> .*out\.csv",
        line,
    )
    assert times is not None, line
    job, load, startup, total = map(float, times.groups())
    # each time is printed rounded to 0.01 s: a sum of rounded times may be off by 0.005 a term
    rounding = 0.0151
    assert load > 0 and total + rounding >= job + load  # the total holds the load the job leaves out
    assert startup >= load and abs(startup + job - total) <= rounding
    summary = json.loads(predict(*args, "--json").stdout)
    assert summary["total_seconds"] >= summary["seconds"] + summary["load_seconds"] > 0
    assert summary["startup_seconds"] == pytest.approx(
        summary["total_seconds"] - summary["seconds"], abs=1e-3
    )


def test_globs_and_several_files_keep_their_order(
    estimator_exports: EstimatorExports, rows: dict[str, Any], want: np.ndarray, tmp_path: Path
) -> None:
    half = N // 2
    first = {k: v[:half] for k, v in rows.items()}
    second = {k: v[half:] for k, v in rows.items()}
    write_csv(tmp_path / "part-0.csv", first)
    write_csv(tmp_path / "part-1.csv", second)
    out = tmp_path / "out.csv"
    result = predict(
        str(estimator_exports.parsing),
        "-i",
        str(tmp_path / "part-*.csv"),
        "-o",
        str(out),
        "-s",
        "predict",
        "--outputs",
        "probabilities",
    )
    assert result.exit_code == 0, result.output
    np.testing.assert_allclose(probabilities(read_output(out)), want, rtol=1e-5)


BAD_LINES = [
    "bad0,abc,1|2,red,t1",  # x is not a number
    "bad1,1.0,1,red,t1",  # v2 needs two values
    "bad2,1.0,1|2,red,t1,extra",  # one cell too many
]


def test_bad_rows_go_to_rejects_and_the_run_goes_on(
    estimator_exports: EstimatorExports, rows: dict[str, Any], want: np.ndarray, tmp_path: Path
) -> None:
    source = write_csv(tmp_path / "in.csv", rows, extra=BAD_LINES)
    out, rejects = tmp_path / "out.csv", tmp_path / "rejects.jsonl"
    result = predict(
        str(estimator_exports.parsing),
        "-i",
        str(source),
        "-o",
        str(out),
        "-s",
        "predict",
        "--outputs",
        "probabilities",
        "--rejects",
        str(rejects),
        "--json",
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rows_in"] == N + 3 and summary["predicted"] == N and summary["rejected"] == 3
    assert summary["predicted"] + summary["rejected"] == summary["rows_in"]
    found = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [r["line"] for r in found] == [N + 2, N + 3, N + 4]  # header is line 1
    assert {r["file"] for r in found} == {str(source)}
    assert "field 'x': expected float32, found 'abc'" in found[0]["reason"]
    assert "field 'v2': expected 2 values" in found[1]["reason"]
    assert "expected 5 CSV cells" in found[2]["reason"]
    assert found[0]["record"] == BAD_LINES[0]
    np.testing.assert_allclose(probabilities(read_output(out)), want, rtol=1e-5)


def test_more_rejects_than_allowed_exits_non_zero(
    estimator_exports: EstimatorExports, rows: dict[str, Any], tmp_path: Path
) -> None:
    source = write_csv(tmp_path / "in.csv", rows, extra=BAD_LINES)
    result = predict(
        str(estimator_exports.parsing), "-i", str(source), "-o", str(tmp_path / "o.csv"), "--max-rejects", "2"
    )
    assert result.exit_code == 2
    assert f"rows in: {N + 3}, predicted: {N}, rejected: 3" in result.stdout
    assert "Error: 3 of 43 rows rejected, more than the 2 allowed; first:" in result.stderr
    assert "rejected " in result.stderr  # without --rejects, each reject is echoed to stderr
    ok = predict(
        str(estimator_exports.parsing), "-i", str(source), "-o", str(tmp_path / "o.csv"), "--max-rejects", "3"
    )
    assert ok.exit_code == 0


def test_a_row_the_model_refuses_is_isolated(
    estimator_exports: EstimatorExports, rows: dict[str, Any], want: np.ndarray, tmp_path: Path
) -> None:
    import tensorflow as tf

    source = tmp_path / "in.tfrecord"
    data = _examples(rows)
    with tf.io.TFRecordWriter(str(source)) as writer:
        for i, record in enumerate(data):
            writer.write(b"\x00not an example" if i == 5 else record)
    out, rejects = tmp_path / "out.csv", tmp_path / "rejects.jsonl"
    result = predict(
        str(estimator_exports.parsing),
        "-i",
        str(source),
        "-o",
        str(out),
        "-s",
        "predict",
        "--outputs",
        "probabilities",
        "--rejects",
        str(rejects),
    )
    assert result.exit_code == 0, result.output
    found = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [r["line"] for r in found] == [6]
    assert "the model rejected the row" in found[0]["reason"]
    keep = np.arange(N) != 5
    np.testing.assert_allclose(probabilities(read_output(out)), want[keep], rtol=1e-5)


def test_raw_signature_reads_sparse_cells(
    estimator_exports: EstimatorExports, rows: dict[str, Any], want: np.ndarray, tmp_path: Path
) -> None:
    source = write_input("csv", tmp_path, rows)
    out = tmp_path / "out.jsonl"
    result = predict(
        str(estimator_exports.raw), "-i", str(source), "-o", str(out), "--outputs", "probabilities"
    )
    assert result.exit_code == 0, result.output
    np.testing.assert_allclose(probabilities(read_output(out)), want, rtol=1e-5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-i", "{tmp}/nothing-*.csv"], "matches no file"),
        (["-i", "{tmp}/in.txt"], "unknown file type '.txt'"),
        (["-i", "{tmp}/no_v2.csv"], "no column 'v2', required by signature 'serving_default'"),
        (["-i", "{tmp}/in.csv", "--keep-columns", "nope"], "column(s) to keep 'nope' not in the file"),
        (["-i", "{tmp}/in.csv", "-s", "nope"], "signature 'nope' not found"),
        (["-i", "{tmp}/in.csv", "--outputs", "nope"], "no output 'nope'; valid outputs: classes"),
        # the default signature classifies; the predict signature has the probabilities
        (
            ["-i", "{tmp}/in.csv", "--outputs", "probabilities"],
            "no output 'probabilities'; valid outputs: classes, scores; signature 'predict' has it",
        ),
    ],
)
def test_usage_errors_are_one_line(
    estimator_exports: EstimatorExports,
    rows: dict[str, Any],
    tmp_path: Path,
    args: list[str],
    message: str,
) -> None:
    write_csv(tmp_path / "in.csv", rows)
    (tmp_path / "in.txt").write_text("x\n")
    (tmp_path / "no_v2.csv").write_text("x,color\n1.0,red\n")
    args = [a.format(tmp=tmp_path) for a in args]
    result = predict(str(estimator_exports.parsing), *args, "-o", str(tmp_path / "o.csv"))
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o.csv").exists()  # nothing half-written


def test_progress_goes_to_stderr_only_when_asked(
    estimator_exports: EstimatorExports,
    rows: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tfship.loaders import JobSpec, load, run_job

    source = write_csv(tmp_path / "in.csv", rows)
    with load(estimator_exports.parsing) as model:
        quiet = run_job(model, JobSpec([str(source)], tmp_path / "a.csv"), progress=False)
        assert capsys.readouterr().err == ""
        shown = run_job(model, JobSpec([str(source)], tmp_path / "b.csv"), progress=True)
    err = capsys.readouterr().err
    assert f"\r{N} rows" in err and "rows/s" in err and err.endswith("\n")
    assert quiet.predicted == shown.predicted == N


def test_csv_line_numbers_survive_blank_lines_crlf_and_bom(
    estimator_exports: EstimatorExports, rows: dict[str, Any], want: np.ndarray, tmp_path: Path
) -> None:
    lines = _csv_lines(rows)
    cells = lines[1].split(",")
    lines[1] = ",".join([f'"{cells[0]}"', cells[1], f'"{cells[2]}"', *cells[3:]])  # quoted cells
    body = lines[:3] + ["", "   "] + lines[3:6] + ["bad9,oops,1|2,red,t1"] + lines[6:]
    source = tmp_path / "in.csv"
    # BOM, CRLF line ends, and no newline after the last line.
    source.write_bytes(("\ufeffid,x,v2,color,tags\r\n" + "\r\n".join(body)).encode("utf-8"))
    out, rejects = tmp_path / "out.csv", tmp_path / "rejects.jsonl"
    result = predict(
        str(estimator_exports.parsing),
        "-i",
        str(source),
        "-o",
        str(out),
        "-s",
        "predict",
        "--outputs",
        "probabilities",
        "--rejects",
        str(rejects),
        "--keep-columns",
        "id",
    )
    assert result.exit_code == 0, result.output
    found = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [(r["line"], r["record"]) for r in found] == [(10, "bad9,oops,1|2,red,t1")]
    frame = read_output(out)
    assert frame["id"].tolist() == [f"id{i}" for i in range(N)]
    np.testing.assert_allclose(probabilities(frame), want, rtol=1e-5)


def test_blank_json_lines_are_named_in_a_note_not_skipped_silently(
    estimator_exports: EstimatorExports,
    rows: dict[str, Any],
    want: np.ndarray,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from tfship.loaders import JobSpec, load, run_job

    lines = write_input("jsonl", tmp_path, rows).read_text().splitlines()
    source = tmp_path / "blank.jsonl"
    source.write_text("\n".join(lines[:4] + ["", "  "] + lines[4:]) + "\n")
    with load(estimator_exports.parsing) as model, caplog.at_level("WARNING"):
        spec = JobSpec([str(source)], tmp_path / "out.csv", signature="predict", outputs=["probabilities"])
        summary = run_job(model, spec, progress=False)
    assert (summary.rows_in, summary.predicted, summary.rejected) == (N, N, 0)
    assert f"skipped 2 blank line(s) of {source}, at line(s) 5, 6" in caplog.text
    np.testing.assert_allclose(probabilities(read_output(tmp_path / "out.csv")), want, rtol=1e-5)


def test_lines_keep_their_numbers_across_csv_blocks(
    estimator_exports: EstimatorExports, rows: dict[str, Any], want: np.ndarray, tmp_path: Path
) -> None:
    # CSV is parsed in blocks of about a megabyte, which end mid-line: ids of two kilobytes
    # make a file of several blocks, and a bad row after every round of rows says whether the
    # line numbers stayed exact.
    rounds, lines, ids, bad = 60, [], [], []
    for r in range(rounds):
        for i, line in enumerate(_csv_lines(rows)):
            ids.append("p" * 2000 + f"{r}-{i}")
            lines.append(ids[-1] + line[line.index(",") :])
        lines.append(BAD_LINES[0])
        bad.append(len(lines) + 1)  # the header is line 1
    source = tmp_path / "in.csv"
    source.write_text("id,x,v2,color,tags\n" + "\n".join(lines) + "\n")
    assert source.stat().st_size > 3 << 20  # four blocks at least
    out, rejects = tmp_path / "out.csv", tmp_path / "rejects.jsonl"
    result = predict(
        str(estimator_exports.parsing),
        "-i",
        str(source),
        "-o",
        str(out),
        "-s",
        "predict",
        "--outputs",
        "probabilities",
        "--rejects",
        str(rejects),
        "--keep-columns",
        "id",
    )
    assert result.exit_code == 0, result.output
    found = [json.loads(r) for r in rejects.read_text().splitlines()]
    assert [(r["line"], r["record"]) for r in found] == [(line, BAD_LINES[0]) for line in bad]
    frame = read_output(out)
    assert frame["id"].tolist() == ids
    np.testing.assert_allclose(probabilities(frame), np.tile(want, (rounds, 1)), rtol=1e-5)


def test_long_cells_and_lines_longer_than_a_block_are_rows_like_any_other(
    estimator_exports: EstimatorExports, rows: dict[str, Any], want: np.ndarray, tmp_path: Path
) -> None:
    # A free-text column can hold a cell of hundreds of kilobytes, or a line longer than the
    # megabyte block the CSV is parsed in: neither is a reason to reject the row.
    sizes = [10, 300_000, 10, 1_500_000] + [10] * (len(_csv_lines(rows)) - 4)
    ids, lines = [], []
    for size, line in zip(sizes, _csv_lines(rows)):
        ids.append("t" * size)
        lines.append(ids[-1] + line[line.index(",") :])
    source = tmp_path / "in.csv"
    # A blank line sends its block down the line-by-line path: both paths must take them.
    source.write_text("id,x,v2,color,tags\n" + "\n".join(lines[:2] + [""] + lines[2:]) + "\n")
    out, rejects = tmp_path / "out.jsonl", tmp_path / "rejects.jsonl"
    result = predict(
        str(estimator_exports.parsing),
        "-i",
        str(source),
        "-o",
        str(out),
        "-s",
        "predict",
        "--outputs",
        "probabilities",
        "--rejects",
        str(rejects),
        "--keep-columns",
        "id",
    )
    assert result.exit_code == 0, result.output
    assert f"rows in: {len(lines)}, predicted: {len(lines)}, rejected: 0" in result.output
    frame = read_output(out)
    assert [len(i) for i in frame["id"]] == sizes
    np.testing.assert_allclose(probabilities(frame), want, rtol=1e-5)
