"""Data for tfship: the bundled penguins, schema inference from a CSV, synthetic rows.

Example:
    >>> train, evaluation = penguins_split("/tmp/penguins")  # doctest: +SKIP
    >>> schema = infer_schema(train, label="species")         # doctest: +SKIP
"""

from __future__ import annotations

import csv
import math
import os
import statistics
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tfship.errors import DataError, InputError
from tfship.schema import CsvMissing, Feature, Label, Schema, csv_column_dtype

__all__ = ["infer_schema", "penguins_csv", "penguins_split", "synthesize"]

# Strings with at most this many distinct values get a vocabulary; more get hash buckets.
VOCABULARY_LIMIT = 50
# A vocabulary this small is shown to the model one-hot; larger ones get an embedding.
INDICATOR_LIMIT = 10
EVAL_EVERY = 5  # every 5th penguin (by row) is held out for evaluation
SYNTH_BLOCK_ROWS = 50_000  # rows generated at once by synthesize(): bounds its memory


def penguins_csv() -> Path:
    """Path of the Palmer penguins CSV shipped by the ``palmerpenguins`` package (344 rows)."""
    import palmerpenguins

    return Path(palmerpenguins.__file__).parent / "data" / "penguins.csv"


def penguins_split(out_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write the penguins as ``train.csv`` and ``eval.csv`` (every 5th row held out).

    The split is by row position, so it is the same on every machine and every run.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with penguins_csv().open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = list(reader)
    train, evaluation = out / "train.csv", out / "eval.csv"
    _write_csv(train, header, (r for i, r in enumerate(rows) if i % EVAL_EVERY != EVAL_EVERY - 1))
    _write_csv(evaluation, header, (r for i, r in enumerate(rows) if i % EVAL_EVERY == EVAL_EVERY - 1))
    return train, evaluation


def _write_csv(path: Path, header: Sequence[str], rows: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    tmp.replace(path)


# ---- inference -------------------------------------------------------------------------------
def infer_schema(
    path: str | os.PathLike[str],
    label: str,
    *,
    exclude: Sequence[str] = (),
    csv_missing: CsvMissing | None = None,
) -> Schema:
    """Propose a schema for a CSV file: dtypes, vocabularies or hash buckets, defaults, label kind.

    Missing cells follow the loaders' rule (:class:`tfship.schema.CsvMissing`): an empty cell,
    or a token such as ``NA`` in a column that is otherwise numeric. In a string column
    ``NA`` is a category like any other.

    Args:
        path: a CSV file with a header row.
        label: the column the model predicts.
        exclude: columns to leave out (ids, timestamps).
        csv_missing: which cells are missing; ``None`` uses the default tokens.

    Raises:
        InputError: the file is missing or empty, or ``label`` is not a column.
    """
    columns = _read_columns(Path(path))
    if label not in columns:
        raise InputError(f"label column {label!r} is not in {path}; columns are {list(columns)}")
    rule = csv_missing or CsvMissing()
    features = [
        _infer_feature(name, values, rule)
        for name, values in columns.items()
        if name != label and name not in exclude
    ]
    return Schema(label=_infer_label(label, columns[label], rule), features=tuple(features))


def _read_columns(path: Path) -> dict[str, list[str]]:
    try:
        with path.open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if not header:
                raise InputError(f"{path} is empty: a CSV with a header row is needed")
            columns: dict[str, list[str]] = {h: [] for h in header}
            for lineno, row in enumerate(reader, start=2):
                if len(row) != len(header):
                    raise DataError(f"{path}:{lineno}: {len(row)} fields, the header has {len(header)}")
                for h, v in zip(header, row):
                    columns[h].append(v)
    except FileNotFoundError:
        raise InputError(f"data file {path} does not exist") from None
    return columns


def _present(values: list[str], dtype: str, rule: CsvMissing) -> list[str]:
    return [v for v in values if not rule.cell(v, dtype)]


def _infer_feature(name: str, values: list[str], rule: CsvMissing) -> Feature:
    dtype = csv_column_dtype(values, rule)
    present = _present(values, dtype, rule)
    has_missing = len(present) < len(values)
    if dtype != "string":
        return _numeric_feature(name, [float(v) for v in present], dtype, has_missing)
    counts = Counter(present)
    default = "" if has_missing else None
    if len(counts) <= VOCABULARY_LIMIT:
        vocab = sorted(counts)
        shown: dict[str, Any] = {"as": "indicator"}
        if len(vocab) > INDICATOR_LIMIT:
            shown = {"as": "embedding", "dimension": _embedding_dim(len(vocab))}
        use = {"kind": "categorical", "vocabulary": vocab, **shown}
        return Feature(name, "string", (), default, use)
    buckets = 2 ** math.ceil(math.log2(2 * len(counts)))
    use = {"kind": "hash", "buckets": buckets, "as": "embedding", "dimension": _embedding_dim(buckets)}
    return Feature(name, "string", (), default, use)


def _numeric_feature(name: str, values: list[float], dtype: str, has_missing: bool) -> Feature:
    mean = statistics.fmean(values)
    std = statistics.pstdev(values) if len(values) > 1 else 0.0
    use: dict[str, Any] = {"kind": "numeric"}
    if std > 0:
        use["normalize"] = {"mean": round(mean, 6), "std": round(std, 6)}
    default: Any = None
    if has_missing:
        default = round(mean) if dtype == "int64" else round(mean, 6)
    return Feature(name, dtype, (), default, use)


def _embedding_dim(cardinality: int) -> int:
    return max(2, min(32, int(round(6 * cardinality**0.25))))


def _infer_label(name: str, values: list[str], rule: CsvMissing) -> Label:
    dtype = csv_column_dtype(values, rule)
    present = _present(values, dtype, rule)
    if len(present) < len(values):
        raise DataError(f"label column {name!r} has {len(values) - len(present)} missing values")
    classes = sorted(set(present))
    if set(classes) <= {"0", "1"}:
        return Label(name, "binary")
    if dtype != "string" and len(classes) > 10:
        return Label(name, "regression")
    return Label(name, "binary" if len(classes) == 2 else "multiclass", tuple(classes))


# ---- synthesis -------------------------------------------------------------------------------
def synthesize(
    schema: Schema,
    rows: int,
    path: str | os.PathLike[str],
    *,
    seed: int = 0,
) -> Path:
    """Write ``rows`` synthetic CSV rows for a schema, in chunks so memory stays flat.

    Features are drawn from what the schema says of them (normalisation statistics,
    boundaries, vocabularies); the label is a noisy function of the numeric features, so a
    model has something to learn. The same seed writes the same file.
    """
    import numpy as np

    if rows < 0:
        raise ValueError(f"rows must be >= 0, found {rows}")
    out = Path(path)
    header = [*schema.feature_names, schema.label.name]
    tmp = out.with_name(f".{out.name}.tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for block, start in enumerate(range(0, rows, SYNTH_BLOCK_ROWS)):
            # One generator per block: the file depends on the seed alone, never on chunking.
            rng = np.random.default_rng([seed, block])
            writer.writerows(_synth_chunk(schema, min(SYNTH_BLOCK_ROWS, rows - start), rng))
    tmp.replace(out)
    return out


def _synth_chunk(schema: Schema, n: int, rng: Any) -> Iterator[tuple[Any, ...]]:
    import numpy as np

    score = rng.normal(0.0, 0.5, n)
    columns = []
    for f in schema.features:
        values, signal = _synth_feature(f, n, rng)
        columns.append(values)
        score = score + signal
    columns.append(_synth_label(schema.label, score))
    return zip(*(np.asarray(c).tolist() for c in columns))


def _synth_feature(f: Feature, n: int, rng: Any) -> tuple[Any, Any]:
    import numpy as np

    use = f.use
    size = f.size or 1
    if use["kind"] in ("numeric", "bucketized"):
        norm = use.get("normalize", {"mean": 0.0, "std": 1.0})
        if use["kind"] == "bucketized":
            b = use["boundaries"]
            norm = {"mean": (b[0] + b[-1]) / 2, "std": max((b[-1] - b[0]) / 2, 1e-6)}
        z = rng.normal(0.0, 1.0, n)
        values = norm["mean"] + norm["std"] * z
        values = np.round(values).astype(np.int64) if f.dtype == "int64" else np.round(values, 4)
        return _repeat(values, size), z * 0.5
    tokens = _tokens(f)
    idx = rng.integers(0, len(tokens), n)
    weights = np.linspace(-1.0, 1.0, len(tokens)) if len(tokens) > 1 else np.zeros(1)
    return _repeat(np.asarray(tokens, dtype=object)[idx], size), weights[idx] * 0.5


def _tokens(f: Feature) -> list[Any]:
    use = f.use
    if "vocabulary" in use:
        return list(use["vocabulary"])
    if use["kind"] == "identity":
        return list(range(use["num_buckets"]))
    count = use.get("buckets", 100)
    return [i if f.dtype == "int64" else f"{f.name}_{i}" for i in range(count)]


def _repeat(values: Any, size: int) -> Any:
    if size == 1:
        return values
    return ["|".join([str(v)] * size) for v in values]


def _synth_label(label: Label, score: Any) -> Any:
    import numpy as np

    if label.kind == "regression":
        return np.round(score, 4)
    if label.kind == "binary":
        positive = score > 0
        if label.vocabulary is None:
            return positive.astype(np.int64)
        return np.where(positive, label.vocabulary[1], label.vocabulary[0])
    vocab = np.asarray(label.vocabulary, dtype=object)
    edges = np.quantile(score, np.linspace(0, 1, len(vocab) + 1)[1:-1])
    return vocab[np.searchsorted(edges, score)]
