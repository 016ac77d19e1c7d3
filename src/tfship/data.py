"""Data for tfship: the bundled penguins, schema inference from a CSV, synthetic rows.

Example:
    >>> train, evaluation = penguins_split("penguins")
    >>> schema = infer_schema(train, label="species")
    >>> schema.label.kind, schema.label.vocabulary
    ('multiclass', ('Adelie', 'Chinstrap', 'Gentoo'))
"""

from __future__ import annotations

import csv
import math
import os
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfship._files import atomic_write
from tfship.errors import DataError, InputError
from tfship.schema import (
    CsvLineError,
    CsvMissing,
    Feature,
    Label,
    Schema,
    csv_column_dtype,
    csv_line_cells,
    did_you_mean,
    read_csv_header,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = ["explain_schema", "infer_schema", "penguins_csv", "penguins_split", "synthesize"]

# Strings with at most this many distinct values get a vocabulary; more get hash buckets.
VOCABULARY_LIMIT = 50
# A vocabulary this small is shown to the model one-hot; larger ones get an embedding.
INDICATOR_LIMIT = 10
# An integer column with at most this many distinct values (each seen 4+ times) is a category
# (a year, a number of children), not a quantity.
INT_CATEGORY_LIMIT = 10
# A number column may hold one stray text cell in this many (a typo, a unit) and stay numeric.
STRAY_LIMIT = 50
# A column with at least this many values, all distinct, can be an identifier (a name per row,
# a row number): a model learns nothing from it that carries over to new rows.
IDENTIFIER_MIN_ROWS = 20
# ... and an integer column whose distinct values fill at least this share of the whole numbers
# between its smallest and largest is a row number of a shuffled or sampled table.
IDENTIFIER_DENSITY = 0.5
_LEADING_ZERO = re.compile(r"^[+-]?0\d")
EVAL_EVERY = 5  # every 5th penguin (by row) is held out for evaluation
SYNTH_BLOCK_ROWS = 50_000  # rows generated at once by synthesize(): bounds its memory


def penguins_csv() -> Path:
    """Path of the Palmer penguins CSV shipped by the ``palmerpenguins`` package (344 rows).

    Raises:
        ExtraNotInstalledError: ``palmerpenguins`` (installed by the ``tf`` extra) is missing.
    """
    try:
        import palmerpenguins
    except ImportError as exc:
        from tfship._tf import missing_extra

        raise missing_extra("the penguins data set", "palmerpenguins") from exc

    return Path(palmerpenguins.__file__).parent / "data" / "penguins.csv"


def penguins_split(out_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write the penguins as ``train.csv`` and ``eval.csv`` (every 5th row held out).

    The split is by row position, so it is the same on every machine and every run.
    """
    source = penguins_csv()  # before anything is written: it may need the tf extra
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with source.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = list(reader)
    train, evaluation = out / "train.csv", out / "eval.csv"
    _write_csv(train, header, (r for i, r in enumerate(rows) if i % EVAL_EVERY != EVAL_EVERY - 1))
    _write_csv(evaluation, header, (r for i, r in enumerate(rows) if i % EVAL_EVERY == EVAL_EVERY - 1))
    return train, evaluation


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    with atomic_write(path, newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


# ---- inference -------------------------------------------------------------------------------
def infer_schema(
    path: str | os.PathLike[str],
    label: str,
    *,
    exclude: Sequence[str] = (),
    keep: Sequence[str] = (),
    csv_missing: CsvMissing | None = None,
) -> Schema:
    """Propose a schema for a CSV file: dtypes, vocabularies or hash buckets, defaults, label kind.

    ``explain_schema`` gives the same schema with the reason for each column.

    Missing cells follow the loaders' rule (:class:`tfship.schema.CsvMissing`): an empty cell,
    or a token such as ``NA`` in a column that is otherwise numeric. In a string column
    ``NA`` is a category like any other.

    Identifiers are left out: a text column whose every value is distinct (a name per row), an
    integer column whose every value is distinct and which counts up or down or fills at least
    half of the whole numbers between its smallest and largest (row numbers, of a shuffled or
    sampled table too), once it has at least 20 values. A model would memorise them and learn
    nothing that holds for new rows; ``keep`` names those to use anyway.

    Args:
        path: a CSV file with a header row.
        label: the column the model predicts.
        exclude: columns to leave out (ids, timestamps).
        keep: columns to use even when they look like identifiers.
        csv_missing: which cells are missing; ``None`` uses the default tokens.

    Raises:
        InputError: the file is missing or empty, or ``label``, a name in ``exclude`` or in
            ``keep`` is not a column (the nearest name is suggested).
    """
    return explain_schema(path, label, exclude=exclude, keep=keep, csv_missing=csv_missing)[0]


def explain_schema(
    path: str | os.PathLike[str],
    label: str,
    *,
    exclude: Sequence[str] = (),
    keep: Sequence[str] = (),
    csv_missing: CsvMissing | None = None,
) -> tuple[Schema, list[str]]:
    """``infer_schema``, and one line per column saying what was seen and what was chosen.

    Example:
        >>> schema, reasons = explain_schema(penguins_csv(), "species")
        >>> reasons[0]
        'island: 3 values -> string, categorical of 3 (one-hot)'
        >>> reasons[-1]
        'species (label): 3 classes -> multiclass'
    """
    lines: list[int] = []
    blank: list[int] = []
    columns, malformed = _read_columns(Path(path), lines, blank)
    if label not in columns:
        raise InputError(f"label column {label!r} is not in {path}{did_you_mean(label, columns)}; "
                         f"columns are {list(columns)}")
    for role, names in (("exclude", exclude), ("keep", keep)):
        for name in names:
            if name not in columns:
                raise InputError(f"column to {role} {name!r} is not in {path}{did_you_mean(name, columns)}; "
                                 f"columns are {list(columns)}")
    rule = csv_missing or CsvMissing()
    features: list[Feature] = []
    reasons: list[str] = []
    if malformed:
        more = f" and {len(malformed) - 3} more" if len(malformed) > 3 else ""
        reasons.append(f"skipped {len(malformed)} bad row(s): {'; '.join(malformed[:3])}{more}")
    if blank:
        reasons.append(f"note: {path}: skipped {len(blank)} blank line(s), at line(s) {_shown(blank)}")
    for name, values in columns.items():
        if name != label and name not in exclude:
            identifier = None if name in keep else _identifier(values, rule)
            if identifier is not None:
                reasons.append(f"{name}: {identifier} -> left out (a model would memorise it); "
                               f"keep it to use it anyway")
                continue
            feature, why = _infer_feature(name, values, rule)
            features.append(feature)
            reasons.append(f"{name}: {why} -> {_chosen(feature)}")
    target = _infer_label(label, columns[label], rule, where=(str(path), lines))
    reasons.append(f"{label} (label): {_label_reason(target, columns[label])}")
    unlabelled = _unlabelled_lines(columns[label], rule, lines)
    if unlabelled:
        reasons.append(f"note: {path}: label column {label!r} is missing in {len(unlabelled)} row(s), at "
                       f"line(s) {_shown(unlabelled)}; training refuses such rows as bad (a model cannot "
                       f"learn from a row without a label): drop them, or let training skip them")
    return Schema(label=target, features=tuple(features)), reasons


def _shown(lines: list[int]) -> str:
    """Line numbers for a note: the first five, and how many more."""
    return ", ".join(map(str, lines[:5])) + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")


def _chosen(feature: Feature) -> str:
    use = feature.use
    shown = {"indicator": "one-hot", "embedding": f"embedding {use.get('dimension')}"}.get(
        str(use.get("as")), ""
    )
    kind = use["kind"]
    if kind == "hash":
        text = f"{feature.dtype}, hash {use['buckets']} ({shown})"
    elif kind == "categorical":
        text = f"{feature.dtype}, categorical of {len(use['vocabulary'])} ({shown})"
    else:
        norm = use.get("normalize")
        text = f"{feature.dtype}, numeric" + (
            f", normalized (mean {norm['mean']:.6g}, std {norm['std']:.6g})" if norm else ""
        )
    if feature.default is not None:
        text += f", default {feature.default!r}"
    return text


def _label_reason(target: Label, values: list[str]) -> str:
    if target.kind == "regression":
        scaled = f", learned standardised (mean {target.scale[0]:.6g}, std {target.scale[1]:.6g})" \
            if target.scale else ""
        return f"{len(set(values))} distinct numbers -> regression{scaled}"
    classes = len(target.vocabulary or ()) or 2
    return f"{classes} classes -> {target.kind}"


def _read_columns(
    path: Path, lines: list[int] | None = None, blank: list[int] | None = None
) -> tuple[dict[str, list[str]], list[str]]:
    """The columns of a CSV file, and where its bad rows are, by the readers' line rule.

    A proposal can do without a few bad rows (another number of fields, the header repeated,
    a line that is not UTF-8): they are left out and named, not fatal. ``lines``, when given,
    receives the line number of each row kept; ``blank`` that of each blank line skipped.
    """
    malformed: list[str] = []
    try:
        with path.open("rb") as raw:
            header = read_csv_header(raw)
            if not header:
                raise InputError(f"{path} is empty: a CSV with a header row is needed")
            columns: dict[str, list[str]] = {h: [] for h in header}
            for line, text in enumerate(raw, start=2):  # the header was line 1
                try:
                    row = csv_line_cells(text.rstrip(b"\n"), header)
                except CsvLineError as exc:
                    malformed.append(f"{path}:{line}: {exc}")
                    continue
                if row is None:
                    if blank is not None:
                        blank.append(line)
                    continue
                if lines is not None:
                    lines.append(line)
                for h, v in zip(header, row):
                    columns[h].append(v)
    except FileNotFoundError:
        raise InputError(f"data file {path} does not exist") from None
    if malformed and not any(columns.values()):
        raise DataError(f"every row of {path} is malformed, first: {malformed[0]}")
    return columns, malformed


def _identifier(values: list[str], rule: CsvMissing) -> str | None:
    """What makes a column an identifier (every value distinct, and text or a count), or None."""
    dtype = csv_column_dtype(values, rule)
    present = _present(values, dtype, rule)
    if len(present) < IDENTIFIER_MIN_ROWS or len(set(present)) < len(present):
        return None
    if dtype == "string":
        numeric, strays = _mostly_numbers(present, rule)
        if numeric is not None:  # numbers with a typo: see _infer_feature
            dtype, present = numeric, [v for v in present if v not in set(strays)]
    distinct = f"{len(present)} values, every one distinct"
    if dtype == "string" or (dtype == "int64" and any(_LEADING_ZERO.match(v.strip()) for v in present)):
        return f"{distinct}: an identifier"
    if dtype != "int64":
        return None  # measurements are often all distinct
    numbers = [int(v) for v in present]
    if numbers in (sorted(numbers), sorted(numbers, reverse=True)):
        return f"{distinct}, in order: a row number"
    span = max(numbers) - min(numbers) + 1
    if span == len(numbers):
        return f"{distinct}, consecutive: an identifier"
    # Row numbers of a shuffled or sampled table, measured on the middle 90% of the values so
    # that a few odd ones (a row numbered 1100 among 1 to 533) do not hide the rest.
    ordered = sorted(numbers)
    low, high = ordered[len(ordered) // 20], ordered[-1 - len(ordered) // 20]
    inside = sum(1 for n in ordered if low <= n <= high)
    if inside >= IDENTIFIER_DENSITY * (high - low + 1):
        return (f"{distinct}, the middle {inside} fill {inside / (high - low + 1):.0%} of the whole "
                f"numbers from {low} to {high}: row numbers")
    return None


def _present(values: list[str], dtype: str, rule: CsvMissing) -> list[str]:
    return [v for v in values if not rule.cell(v, dtype)]


def _infer_feature(name: str, values: list[str], rule: CsvMissing) -> tuple[Feature, str]:
    """The feature for one column, and what was seen in it."""
    dtype = csv_column_dtype(values, rule)
    present = _present(values, dtype, rule)
    missing = len(values) - len(present)
    seen = [f"{len(set(present))} values"] + ([f"{missing} missing"] if missing else [])
    if dtype == "string":
        numeric, strays = _mostly_numbers(present, rule)
        if numeric is not None:
            # a number column with a few typos: they are bad values, not categories
            dtype = numeric
            examples = ", ".join(map(repr, sorted(set(strays))[:3]))
            seen.append(f"{len(strays)} non-number(s) ({examples}) will be bad values")
            present = [v for v in present if v not in set(strays)]
    if dtype == "int64" and any(_LEADING_ZERO.match(v.strip()) for v in present):
        # zip codes and ids: "02134" is a name, not the number 2134
        dtype = "string"
        seen.append("leading zeros")
    elif dtype == "int64" and _few_integers(present):
        seen.append(f"integers with few values (at most {INT_CATEGORY_LIMIT})")
        numbers = sorted({int(v) for v in present})
        middle = round(statistics.median(int(v) for v in present)) if missing else None
        use: dict[str, Any] = {"kind": "categorical", "vocabulary": numbers, "as": "indicator"}
        return Feature(name, "int64", (), middle, use), ", ".join(seen)
    if dtype != "string":
        return _numeric_feature(name, [float(v) for v in present], dtype, bool(missing)), ", ".join(seen)
    counts = Counter(present)
    default = "" if missing else None
    if len(counts) <= VOCABULARY_LIMIT:
        vocab = sorted(counts)
        shown: dict[str, Any] = {"as": "indicator"}
        if len(vocab) > INDICATOR_LIMIT:
            shown = {"as": "embedding", "dimension": _embedding_dim(len(vocab))}
        use = {"kind": "categorical", "vocabulary": vocab, **shown}
        return Feature(name, "string", (), default, use), ", ".join(seen)
    buckets = 2 ** math.ceil(math.log2(2 * len(counts)))
    use = {"kind": "hash", "buckets": buckets, "as": "embedding", "dimension": _embedding_dim(buckets)}
    return Feature(name, "string", (), default, use), ", ".join(seen)


def _mostly_numbers(present: list[str], rule: CsvMissing) -> tuple[str | None, list[str]]:
    """A string column whose cells are numbers but for a few (at most 1 in 50): the number dtype
    and the stray cells; ``(None, [])`` for a real string column."""
    strays = [v for v in present if csv_column_dtype([v], rule) == "string"]
    if not strays or len(strays) * STRAY_LIMIT > len(present):
        return None, []
    stray = set(strays)
    return csv_column_dtype([v for v in present if v not in stray], rule), strays


def _few_integers(present: list[str]) -> bool:
    distinct = len(set(present))
    return distinct <= INT_CATEGORY_LIMIT and len(present) >= 4 * distinct


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


def _unlabelled_lines(values: list[str], rule: CsvMissing, lines: list[int]) -> list[int]:
    """The file lines of the rows whose label is missing."""
    dtype = csv_column_dtype(values, rule)
    return [lines[i] if i < len(lines) else i + 2 for i, v in enumerate(values) if rule.cell(v, dtype)]


def _infer_label(
    name: str, values: list[str], rule: CsvMissing, where: tuple[str, list[int]] = ("data", [])
) -> Label:
    dtype = csv_column_dtype(values, rule)
    present = _present(values, dtype, rule)
    if not present:
        raise DataError(f"{where[0]}: label column {name!r} has no value in any row")
    classes = sorted(set(present))
    if set(classes) <= {"0", "1"}:
        return Label(name, "binary")
    if dtype != "string" and len(classes) > 10:
        numbers = [float(v) for v in present]
        std = statistics.pstdev(numbers)
        scale = (round(statistics.fmean(numbers), 6), round(std, 6)) if std > 0 else None
        return Label(name, "regression", scale=scale)
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
    with atomic_write(out, newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for block, start in enumerate(range(0, rows, SYNTH_BLOCK_ROWS)):
            # One generator per block: the file depends on the seed alone, never on chunking.
            rng = np.random.default_rng([seed, block])
            writer.writerows(_synth_chunk(schema, min(SYNTH_BLOCK_ROWS, rows - start), rng))
    return out


def _synth_chunk(schema: Schema, n: int, rng: np.random.Generator) -> Iterator[tuple[Any, ...]]:
    import numpy as np

    score = rng.normal(0.0, 0.5, n)
    columns = []
    for f in schema.features:
        values, signal = _synth_feature(f, n, rng)
        columns.append(values)
        score = score + signal
    columns.append(_synth_label(schema.label, score))
    return zip(*(np.asarray(c).tolist() for c in columns))


def _synth_feature(f: Feature, n: int, rng: np.random.Generator) -> tuple[Any, Any]:
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
