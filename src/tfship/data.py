"""Data for tfship: the bundled penguins, schema inference from a CSV, synthetic rows.

Example:
    >>> train, evaluation = penguins_split("penguins")
    >>> schema = infer_schema(train, label="species")
    >>> schema.label.kind, schema.label.vocabulary
    ('multiclass', ('Adelie', 'Chinstrap', 'Gentoo'))
"""

from __future__ import annotations

import csv
import datetime
import math
import os
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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

__all__ = [
    "explain_schema",
    "infer_schema",
    "penguins_csv",
    "penguins_split",
    "synthesis_notes",
    "synthesize",
]

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
    sampled table too), or is named like one (``rownames``, ``id``, ``customer_id``), once it
    has at least 20 values. A model would memorise them and learn nothing that holds for new
    rows. A column of one value is left out too (it carries no information), and so is an ISO
    date column of more than 50 days (a category of days seen says nothing of a new day); one
    of fewer days is kept as a category, with a note. ``keep`` names those to use anyway; every
    numeric feature and a regression label record the ``range`` seen.

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
        raise InputError(
            f"label column {label!r} is not in {path}{did_you_mean(label, columns)}; "
            f"columns are {list(columns)}"
        )
    for role, names in (("exclude", exclude), ("keep", keep)):
        for name in names:
            if name not in columns:
                raise InputError(
                    f"column to {role} {name!r} is not in {path}{did_you_mean(name, columns)}; "
                    f"columns are {list(columns)}"
                )
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
            left_out = _left_out(name, values, rule, kept=name in keep)
            if left_out is not None:
                reasons.append(f"{name}: {left_out}")
                continue
            feature, why = _infer_feature(name, values, rule)
            features.append(feature)
            reasons.append(f"{name}: {why} -> {_chosen(feature)}")
            dates = _date_span(_present(values, feature.dtype, rule), rule)
            if dates is not None:
                reasons.append(
                    f"note: {name} holds dates ({dates}): kept as a category of the days "
                    f"seen, so a day after them is unknown to the model; for season or "
                    f"weekday, add them to the data as columns (month, weekday)"
                )
    target = _infer_label(label, columns[label], rule, where=(str(path), lines))
    reasons.append(f"{label} (label): {_label_reason(target, columns[label])}")
    unlabelled = _unlabelled_lines(columns[label], rule, lines)
    if unlabelled:
        reasons.append(
            f"note: {path}: label column {label!r} is missing in {len(unlabelled)} row(s), at "
            f"line(s) {_shown(unlabelled)}; training refuses such rows as bad (a model cannot "
            f"learn from a row without a label): drop them, or let training skip them"
        )
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
        scaled = (
            f", learned standardised (mean {target.scale[0]:.6g}, std {target.scale[1]:.6g})"
            if target.scale
            else ""
        )
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


def _left_out(name: str, values: list[str], rule: CsvMissing, *, kept: bool) -> str | None:
    """Why a column is no feature (what was seen, then ``-> left out``), or None to use it.

    A column without any value cannot be one even when asked to be kept. A column of one value
    carries no information; dates of more than 50 days are left out (fewer are kept as a
    category, with a note); identifiers are left out. ``kept`` (the user's ``keep``) keeps the
    last three.
    """
    dtype = csv_column_dtype(values, rule)
    present = _present(values, dtype, rule)
    if not present:
        return (
            f"no value in any of {len(values)} row(s) -> left out (nothing to learn from, "
            f"so keep cannot use it)"
        )
    if kept:
        return None
    distinct = set(present)
    if len(distinct) == 1 and len(present) == len(values):
        return (
            f"one value ({next(iter(distinct))!r}) in every row -> left out (it carries no "
            f"information); keep it to use it anyway"
        )
    dates = _date_span(present, rule)
    if dates is not None:
        distinct -= rule.tokens("float32")
        if len(distinct) <= VOCABULARY_LIMIT:
            return None  # kept as a category, with a note
        return (
            f"{len(distinct)} values, dates ({dates}) -> left out: as a category a model would "
            f"only know the days it saw; add the parts that recur (month, weekday, day of year) "
            f"to the data as columns, or keep it to use it as a category"
        )
    identifier = _identifier(name, values, rule)
    if identifier is None:
        return None
    return f"{identifier} -> left out (a model would memorise it); keep it to use it anyway"


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$")


def _date_span(present: list[str], rule: CsvMissing) -> str | None:
    """``first to last`` when every value is an ISO date (2019-03-01, or with a time), or None.

    A missing-value token (``NA``) among the dates does not make them text.
    """
    na = rule.tokens("float32")
    days = {v.strip() for v in present} - na
    if not days or not all(_ISO_DATE.match(v) for v in days):
        return None
    try:
        for value in days:
            datetime.date.fromisoformat(value[:10])
    except ValueError:
        return None  # 2019-13-45 is no date
    return f"{min(days)} to {max(days)}"


# Names that say a column numbers or keys its rows: the whole name (in any case), or its last
# word (``customer_id``, ``PassengerId``; but not ``price index``).
_ID_NAMES = frozenset({"rownames", "rowname", "rownum", "row", "index", "idx", "key", "unnamed: 0", ""})
_ID_WORDS = frozenset({"id", "ids", "uuid"})


def _named_like_an_identifier(name: str) -> bool:
    """Whether a column's name says it is an identifier: ``rownames``, ``id``, ``customer_id``,
    ``PassengerId``, an empty name or ``Unnamed: 0`` (a data frame's written index)."""
    if name.strip().lower() in _ID_NAMES:
        return True
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
    return bool(words) and words[-1].lower() in _ID_WORDS


def _identifier(name: str, values: list[str], rule: CsvMissing) -> str | None:
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
        return (
            f"{distinct}, the middle {inside} fill {inside / (high - low + 1):.0%} of the whole "
            f"numbers from {low} to {high}: row numbers"
        )
    if _named_like_an_identifier(name):
        return f"{distinct}, spread over {min(numbers)} to {max(numbers)}, named like one: an identifier"
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
    use["range"] = _range(values, dtype)
    default: Any = None
    if has_missing:
        default = round(mean) if dtype == "int64" else round(mean, 6)
    return Feature(name, dtype, (), default, use)


def _range(values: list[float], dtype: str) -> list[Any]:
    """The smallest and largest value seen, as whole numbers in an integer column."""
    low, high = min(values), max(values)
    return [int(low), int(high)] if dtype == "int64" else [low, high]


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
        low, high = _range(numbers, dtype)
        return Label(name, "regression", scale=scale, range=(low, high))
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
    boundaries, vocabularies), within the ``range`` it records and as whole numbers in an
    integer column; the label is a noisy function of the features, so a model has something
    to learn, and a regression label is in the units of its ``scale`` and ``range``.
    :func:`synthesis_notes` names what the schema leaves open. The same seed writes the
    same file.
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


def synthesis_notes(schema: Schema) -> list[str]:
    """What :func:`synthesize` cannot keep to because the schema does not say it, one line each.

    A number without a recorded ``range`` is drawn without bounds; a regression label
    without a ``scale`` comes out standardised (mean 0, std 1). ``infer_schema`` records both.

    Example:
        >>> s = Schema.from_dict({"label": {"name": "y", "kind": "regression"},
        ...                       "features": [{"name": "x"}]})
        >>> synthesis_notes(s)[0]
        "note: no range recorded for 'x': its values are drawn without bounds"
    """
    notes = [
        f"note: no range recorded for {f.name!r}: its values are drawn without bounds"
        for f in schema.features
        if f.use["kind"] in ("numeric", "bucketized") and "range" not in f.use
    ]
    label = schema.label
    if label.kind == "regression" and label.scale is None:
        notes.append(
            f"note: label {label.name!r} has no scale: its values are standardised "
            f"(mean 0, std 1), not in its own units"
        )
    if label.kind == "regression" and label.range is None:
        notes.append(f"note: no range recorded for label {label.name!r}: its values are drawn without bounds")
    return notes


# Each synthetic feature moves the label by a term of about this standard deviation, and so
# does the noise.
_SIGNAL = 0.5
# Draws outside a recorded range are drawn again this many times, then clipped to it.
_REDRAWS = 20


def _synth_chunk(schema: Schema, n: int, rng: np.random.Generator) -> Iterator[tuple[Any, ...]]:
    import numpy as np

    signal = np.zeros(n)
    variance = _SIGNAL**2  # the noise's
    columns = []
    for f in schema.features:
        values, term, term_variance = _synth_feature(f, n, rng)
        columns.append(values)
        signal = signal + term
        variance += term_variance
    columns.append(_synth_label(schema.label, signal, math.sqrt(variance), rng))
    return zip(*(np.asarray(c).tolist() for c in columns))


def _synth_feature(f: Feature, n: int, rng: np.random.Generator) -> tuple[Any, Any, float]:
    """A feature's values, the term they add to the label, and that term's variance."""
    import numpy as np

    use = f.use
    size = f.size or 1
    if use["kind"] in ("numeric", "bucketized"):
        mean, std = _centre(use)
        observed = use.get("range")
        values = _bounded(lambda rows: mean + std * rng.normal(0.0, 1.0, len(rows)), n, observed, f.dtype)
        values = np.round(values) if f.dtype == "int64" else np.round(values, 4)
        if observed is not None:  # rounding may step over an end; a whole number stays inside
            whole = f.dtype == "int64"
            values = np.clip(
                values,
                math.ceil(observed[0]) if whole else observed[0],
                math.floor(observed[1]) if whole else observed[1],
            )
        if f.dtype == "int64":
            values = values.astype(np.int64)
        return _repeat(values, size), (values - mean) / std * _SIGNAL, _SIGNAL**2
    tokens = _tokens(f)
    idx = rng.integers(0, len(tokens), n)
    weights = np.linspace(-1.0, 1.0, len(tokens)) * _SIGNAL if len(tokens) > 1 else np.zeros(1)
    return _repeat(np.asarray(tokens, dtype=object)[idx], size), weights[idx], float(np.mean(weights**2))


def _centre(use: Mapping[str, Any]) -> tuple[float, float]:
    """Mean and std to draw a number from: its normalisation, else the middle of its
    boundaries or of its range, else 0 and 1."""
    if "normalize" in use:
        return float(use["normalize"]["mean"]), float(use["normalize"]["std"])
    ends = use.get("boundaries") or use.get("range")
    if ends:
        return (ends[0] + ends[-1]) / 2, max((ends[-1] - ends[0]) / 2, 1e-6)
    return 0.0, 1.0


def _bounded(draw: Callable[[Any], Any], n: int, observed: Sequence[float] | None, dtype: str) -> Any:
    """``draw(rows)`` for all ``n`` rows, with the values outside ``observed`` (after rounding,
    for integers) drawn again, and any left after that clipped: a truncated distribution, not
    a pile at the ends. ``draw`` takes the row numbers to draw for."""
    import numpy as np

    values = draw(np.arange(n))
    if observed is None:
        return values
    low, high = observed

    def out_of_range(v: Any) -> Any:
        shown = np.round(v) if dtype == "int64" else v
        return (shown < low) | (shown > high)

    outside = np.flatnonzero(out_of_range(values))
    for _ in range(_REDRAWS):
        if not outside.size:
            break
        values[outside] = draw(outside)
        outside = outside[out_of_range(values[outside])]
    return np.clip(values, low, high)


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


def _synth_label(label: Label, signal: Any, spread: float, rng: np.random.Generator) -> Any:
    """Labels from the features' terms plus noise; ``spread`` is the std of that sum."""
    import numpy as np

    if label.kind == "regression":
        mean, std = label.scale or (0.0, 1.0)

        def draw(rows: Any) -> Any:  # only the noise is drawn again: the features keep their say
            return mean + std * (signal[rows] + rng.normal(0.0, _SIGNAL, len(rows))) / spread

        whole = label.range is not None and all(isinstance(v, int) for v in label.range)
        values = _bounded(draw, len(signal), label.range, "int64" if whole else "float32")
        return np.round(values).astype(np.int64) if whole else np.round(values, 4)
    score = signal + rng.normal(0.0, _SIGNAL, len(signal))
    if label.kind == "binary":
        positive = score > 0
        if label.vocabulary is None:
            return positive.astype(np.int64)
        return np.where(positive, label.vocabulary[1], label.vocabulary[0])
    vocab = np.asarray(label.vocabulary, dtype=object)
    edges = np.quantile(score, np.linspace(0, 1, len(vocab) + 1)[1:-1])
    return vocab[np.searchsorted(edges, score)]
