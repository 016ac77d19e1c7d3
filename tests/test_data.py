"""Bundled penguins, schema inference and synthetic data."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tfship.data import explain_schema, infer_schema, penguins_csv, penguins_split, synthesize
from tfship.errors import DataError, InputError
from tfship.schema import CsvMissing, Schema


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_penguins_split_is_fixed_and_complete(tmp_path: Path) -> None:
    train, evaluation = penguins_split(tmp_path)
    assert (len(_rows(train)), len(_rows(evaluation))) == (276, 68)
    again_train, _ = penguins_split(tmp_path / "again")
    assert train.read_bytes() == again_train.read_bytes()


def test_infer_schema_on_penguins(tmp_path: Path) -> None:
    train, _ = penguins_split(tmp_path)
    schema = infer_schema(train, "species")
    assert schema.label.kind == "multiclass"
    assert schema.label.vocabulary == ("Adelie", "Chinstrap", "Gentoo")
    island = schema.feature("island")
    assert island.dtype == "string" and island.use["vocabulary"] == ["Biscoe", "Dream", "Torgersen"]
    assert schema.feature("bill_length_mm").dtype == "float32"
    assert schema.feature("bill_length_mm").default is not None  # it has NA values
    year = schema.feature("year")  # three years: a category, not a quantity
    assert year.dtype == "int64" and year.default is None
    assert year.use == {"kind": "categorical", "vocabulary": [2007, 2008, 2009], "as": "indicator"}
    # "NA" in a string column is text (a category) unless asked to mean missing there too.
    sex = schema.feature("sex")
    assert sex.use["vocabulary"] == ["NA", "female", "male"] and sex.default is None
    asked = infer_schema(train, "species", csv_missing=CsvMissing(strings=True)).feature("sex")
    assert asked.use["vocabulary"] == ["female", "male"] and asked.default == ""


def test_infer_schema_missing_cells_by_column_type(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    rows = ["1.5,None,a", "NA,  ,b", "2.5,NA,c", "null,null,d", ",x,e", "3.0,,f"]
    path.write_text("num,text,y\n" + "".join(r + "\n" for r in rows))
    schema = infer_schema(path, "y")
    num, text = schema.feature("num"), schema.feature("text")
    assert num.dtype == "float32" and num.default == 2.333333  # mean of the 3 numbers
    # Only the empty cell is missing in a string column: "None", "NA", "null", "  " are values.
    assert text.dtype == "string" and text.default == ""
    assert text.use["vocabulary"] == ["  ", "NA", "None", "null", "x"]
    other = infer_schema(path, "y", csv_missing=CsvMissing(na_values=("null",)))
    assert other.feature("num").dtype == "string"  # "NA" is no longer a missing number


def test_infer_schema_high_cardinality_gets_hash_buckets(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("user,score,y\n" + "".join(f"u{i % 150},{i * 0.5},{i % 2}\n" for i in range(200)))
    schema = infer_schema(path, "y")
    assert schema.feature("user").use["kind"] == "hash"
    assert schema.feature("user").use["buckets"] == 512
    assert schema.label.kind == "binary" and schema.label.vocabulary is None


def test_infer_schema_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"does not exist"):
        infer_schema(tmp_path / "none.csv", "y")
    path = tmp_path / "d.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match=r"label column 'y' is not in .*columns are \['a', 'b'\]"):
        infer_schema(path, "y")
    path.write_text("a,b\n1,2\n3\n")  # a bad row is skipped and named, as training names it
    from tfship.data import explain_schema

    _, reasons = explain_schema(path, "b")
    assert reasons[0] == f"skipped 1 bad row(s): {path}:3: expected 2 CSV cells (as in the header), found 1"
    path.write_text("a,b\n3\n")
    with pytest.raises(DataError, match=r"every row of .*d.csv is malformed, first: .*d.csv:2: expected 2"):
        infer_schema(path, "b")


def test_synthesize_follows_the_schema(tmp_path: Path) -> None:
    train, _ = penguins_split(tmp_path)
    schema = infer_schema(train, "species")
    out = synthesize(schema, 2500, tmp_path / "synth.csv", seed=3)
    rows = _rows(out)
    assert len(rows) == 2500
    assert schema.label.vocabulary is not None
    for i, row in enumerate(rows[:200]):
        schema.convert_record(row, where=f"synth.csv:{i + 2}", csv=CsvMissing())
        assert schema.convert_label(row, csv=CsvMissing()) in schema.label.vocabulary
    assert {r["species"] for r in rows} == set(schema.label.vocabulary)
    again = synthesize(schema, 2500, tmp_path / "again.csv", seed=3)
    assert again.read_bytes() == out.read_bytes()
    other = synthesize(schema, 2500, tmp_path / "other.csv", seed=4)
    assert other.read_bytes() != out.read_bytes()


def test_infer_schema_keeps_leading_zeros_and_explains_each_column(tmp_path: Path) -> None:
    from tfship.data import explain_schema

    path = tmp_path / "churn.csv"
    rows = [f"{i % 300:05d},{i % 3},{i * 1.5},{i % 2}" for i in range(1200)]
    path.write_text("zip,plan,spend,churned\n" + "\n".join(rows) + "\n")
    schema, reasons = explain_schema(path, "churned")
    zip_code = schema.feature("zip")
    assert zip_code.dtype == "string" and zip_code.use["kind"] == "hash" and zip_code.use["buckets"] == 1024
    assert schema.feature("plan").use["kind"] == "categorical"
    assert schema.feature("plan").use["vocabulary"] == [0, 1, 2]
    assert schema.feature("spend").use["kind"] == "numeric"
    assert reasons[0] == "zip: 300 values, leading zeros -> string, hash 1024 (embedding 32)"
    assert reasons[1].startswith("plan: 3 values, integers with few values")
    assert reasons[-1] == "churned (label): 2 classes -> binary"


def test_a_number_column_with_a_typo_stays_numeric(tmp_path: Path) -> None:
    from tfship.data import explain_schema

    path = tmp_path / "d.csv"
    cells = [str(v % 60) for v in range(100)]
    cells[7] = "twelve"
    path.write_text("n,y\n" + "".join(f"{c},{i % 2}\n" for i, c in enumerate(cells)))
    schema, reasons = explain_schema(path, "y")
    assert schema.feature("n").dtype == "int64" and schema.feature("n").use["kind"] == "numeric"
    assert reasons[0].startswith("n: 61 values, 1 non-number(s) ('twelve') will be bad values -> int64")


def test_every_command_that_writes_a_file_takes_o_for_out(tmp_path: Path) -> None:
    # `-o` is what a user guesses first: `tfship predict -o` has it, so these take it too.
    from click.testing import CliRunner

    from tfship.cli import cli

    runner = CliRunner()
    data = tmp_path / "data"
    assert runner.invoke(cli, ["data", "penguins", "-o", str(data)]).exit_code == 0
    schema = tmp_path / "schema.json"
    inferred = runner.invoke(
        cli, ["schema", "infer", str(data / "train.csv"), "--label", "species", "-o", str(schema)]
    )
    assert inferred.exit_code == 0, inferred.output
    synth = runner.invoke(
        cli, ["data", "synth", "--schema", str(schema), "--rows", "3", "-o", str(tmp_path / "s.csv")]
    )
    assert synth.exit_code == 0, synth.output
    assert len((tmp_path / "s.csv").read_text().splitlines()) == 4


@pytest.mark.estimator  # tfship export needs tf.estimator, even for its help
def test_export_takes_o_for_out_too() -> None:
    from click.testing import CliRunner

    from tfship.cli import cli

    assert "-o, --out" in CliRunner().invoke(cli, ["export", "--help"]).output


@pytest.mark.estimator  # training's input function
def test_a_byte_order_mark_is_not_part_of_the_first_name(tmp_path: Path) -> None:
    from tfship.trainer import InputOptions, build_input_fn

    train, _ = penguins_split(tmp_path)
    bom = tmp_path / "excel.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + train.read_bytes())  # what "CSV UTF-8" in a spreadsheet writes
    schema = infer_schema(bom, "species")
    assert schema == infer_schema(train, "species")
    assert schema.feature_names[0] == "island"
    # training reads the same names: the first column is data, not a missing feature
    features, _ = next(iter(build_input_fn(schema, [str(bom)], InputOptions(batch_size=4), training=False)()))
    assert set(features["island"].numpy().tolist()) <= {b"Biscoe", b"Dream", b"Torgersen"}


def test_an_excluded_name_that_is_not_a_column_is_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tfship.cli import cli

    train, _ = penguins_split(tmp_path)
    result = CliRunner().invoke(
        cli,
        [
            "schema",
            "infer",
            str(train),
            "--label",
            "species",
            "--exclude",
            "Year",
            "-o",
            str(tmp_path / "s.json"),
        ],
    )
    assert result.exit_code == 2
    expected = f"Error: column to exclude 'Year' is not in {train} (did you mean 'year'?)"
    assert result.stderr.startswith(expected)
    assert not (tmp_path / "s.json").exists()
    with pytest.raises(InputError, match=r"label column 'Species' is not in .* \(did you mean 'species'\?\)"):
        infer_schema(train, "Species")


def _passengers(path: Path, rows: int = 60) -> Path:
    """A passenger table: an id and a name per row, ages with NA, a yes/no label."""
    lines = ["PassengerId,Name,Ticket,Pclass,Age,Fare,Survived"]
    for i in range(rows):
        age = "NA" if i % 7 == 0 else str(20 + i % 30)
        ticket = (i * 37) % rows + 100  # all distinct and consecutive, but shuffled
        lines.append(
            f'{i + 1},"Person {i}, Mr",{ticket},{1 + i % 3},{age},{(i * 13) % 50 + 7},'
            f"{'yes' if i % 3 else 'no'}"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_identifier_columns_are_left_out_with_a_reason(tmp_path: Path) -> None:
    from tfship.data import explain_schema

    path = _passengers(tmp_path / "passengers.csv")
    schema, reasons = explain_schema(path, "Survived")
    assert schema.feature_names == ["Pclass", "Age", "Fare"]
    assert reasons[0] == (
        "PassengerId: 60 values, every one distinct, in order: a row number -> left out "
        "(a model would memorise it); keep it to use it anyway"
    )
    assert reasons[1].startswith("Name: 60 values, every one distinct: an identifier -> left out")
    assert reasons[2].startswith("Ticket: 60 values, every one distinct, consecutive: an identifier")
    kept = infer_schema(path, "Survived", keep=["Name"])
    assert kept.feature_names == ["Name", "Pclass", "Age", "Fare"]
    assert kept.feature("Name").use["kind"] == "hash"


def test_row_numbers_of_a_shuffled_sample_are_an_identifier(tmp_path: Path) -> None:
    import random

    from tfship.data import explain_schema

    rng = random.Random(0)
    ids = rng.sample(range(1, 301), 239) + [1100]  # 80% of the rows of a table, shuffled; one odd number
    lines = ["rownames,income,deny"] + [
        f"{i},{rng.randint(20, 90) * 1000 + i % 7},{'yes' if i % 3 else 'no'}" for i in ids
    ]
    path = tmp_path / "sample.csv"
    path.write_text("\n".join(lines) + "\n")
    schema, reasons = explain_schema(path, "deny")
    assert reasons[0].startswith("rownames: 240 values, every one distinct, ")
    assert "row numbers -> left out" in reasons[0]
    # A measurement whose values are distinct but spread thinly over their range is kept.
    assert schema.feature_names == ["income"]


def test_schema_infer_says_how_to_keep_an_identifier(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tfship.cli import cli

    path = _passengers(tmp_path / "passengers.csv")
    out = tmp_path / "schema.json"
    result = CliRunner().invoke(cli, ["schema", "infer", str(path), "--label", "Survived", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (
        "left out: PassengerId, Name, Ticket (each for the reason above); --keep NAME uses one "
        "anyway (or add it to the schema)"
    ) in result.stderr
    result = CliRunner().invoke(cli, ["schema", "infer", str(path), "--label", "Survived", "--keep", "Nmae"])
    assert result.exit_code == 2
    assert "column to keep 'Nmae' is not in" in result.stderr and "(did you mean 'Name'?)" in result.stderr


def test_the_penguins_schema_keeps_every_column(tmp_path: Path) -> None:
    train, _ = penguins_split(tmp_path)
    schema = infer_schema(train, "species")
    assert schema.feature_names == [
        "island",
        "bill_length_mm",
        "bill_depth_mm",
        "flipper_length_mm",
        "body_mass_g",
        "sex",
        "year",
    ]


def test_missing_labels_are_named_by_line_with_the_remedy(tmp_path: Path) -> None:
    path = tmp_path / "salaries.csv"
    rows = [f"{i * 0.37 % 5:.2f},{'NA' if i in (3, 8) else 1000 + i * 7 % 300}" for i in range(40)]
    path.write_text("years,salary\n" + "\n".join(rows) + "\n")
    from tfship.data import explain_schema

    schema, reasons = explain_schema(path, "salary")
    assert schema.label.kind == "regression"
    assert reasons[-1].startswith(
        f"note: {path}: label column 'salary' is missing in 2 row(s), "
        "at line(s) 5, 10; training refuses such rows as bad"
    )
    path.write_text("years,salary\n1,\n2,\n")
    with pytest.raises(DataError, match=r"label column 'salary' has no value in any row"):
        infer_schema(path, "salary")


def _raw_penguins() -> Path:
    """The penguins as the field station recorded them: a date per nest (Date Egg), columns of
    one value (Region, Stage), sample numbers, isotopes with gaps."""
    return penguins_csv().parent / "penguins-raw.csv"


@pytest.mark.parametrize("label", ["Body Mass (g)", "Culmen Length (mm)"])
def test_synthetic_numbers_are_in_the_schema_units_and_range(tmp_path: Path, label: str) -> None:
    schema = infer_schema(_raw_penguins(), label)
    out = synthesize(schema, 3000, tmp_path / "synth.csv", seed=5)
    rows = _rows(out)
    numbers = [f for f in schema.features if f.use["kind"] == "numeric"]
    assert {f.name for f in numbers} >= {"Flipper Length (mm)", "Culmen Depth (mm)", "Sample Number"}
    for f in numbers:
        low, high = f.use["range"]
        cells = [r[f.name] for r in rows]
        assert all(low <= float(c) <= high for c in cells), (f.name, low, high)
        if f.dtype == "int64":  # whole numbers stay whole
            assert all(c.lstrip("-").isdigit() for c in cells), f.name
    values = [float(r[label]) for r in rows]
    mean, std = schema.label.scale or (0.0, 1.0)
    low, high = schema.label.range or (0.0, 0.0)
    assert low <= min(values) and max(values) <= high
    assert abs(sum(values) / len(values) - mean) < 0.15 * std  # the label's units, not standardised
    spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    assert 0.75 * std < spread < 1.25 * std
    whole = all(r[label].isdigit() for r in rows)
    assert whole == (label == "Body Mass (g)")  # an integer label stays whole too


def test_synth_names_what_the_schema_leaves_open(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tfship.cli import cli

    path = tmp_path / "schema.json"
    Schema.from_dict(
        {
            "label": {"name": "spend", "kind": "regression"},
            "features": [
                {
                    "name": "age",
                    "dtype": "int64",
                    "use": {"kind": "numeric", "normalize": {"mean": 40, "std": 9}, "range": [18, 90]},
                },
                {"name": "visits", "dtype": "int64", "use": {"kind": "numeric"}},
            ],
        }
    ).save(path)
    out = tmp_path / "synth.csv"
    result = CliRunner().invoke(
        cli, ["data", "synth", "--schema", str(path), "--rows", "500", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"note: no range recorded for 'visits': its values are drawn without bounds ({path})",
        f"note: label 'spend' has no scale: its values are standardised (mean 0, std 1), not in its own "
        f"units ({path})",
        f"note: no range recorded for label 'spend': its values are drawn without bounds ({path})",
    ]
    ages = [int(r["age"]) for r in _rows(out)]
    assert min(ages) >= 18 and max(ages) <= 90


def test_dates_and_columns_of_one_value_are_named_for_what_they_are(tmp_path: Path) -> None:
    schema, reasons = explain_schema(_raw_penguins(), "Species")
    by_column = {line.split(":")[0]: line for line in reasons if not line.startswith("note:")}
    assert by_column["Region"] == (
        "Region: one value ('Anvers') in every row -> left out (it carries no "
        "information); keep it to use it anyway"
    )
    assert by_column["Stage"].startswith("Stage: one value ('Adult, 1 Egg Stage') in every row -> left out")
    # A date is a feature: kept (its days repeat, one per nest), with a note on how to use it.
    assert schema.feature("Date Egg").use["kind"] == "categorical"
    assert (
        "note: Date Egg holds dates (2007-11-09 to 2009-12-01): kept as a category of the days seen, "
        "so a day after them is unknown to the model; for season or weekday, add them to the data as "
        "columns (month, weekday)"
    ) in reasons
    assert not any("identifier" in line for line in reasons if "Date Egg" in line)
    assert "Region" not in schema.feature_names and "Stage" not in schema.feature_names
    kept = infer_schema(_raw_penguins(), "Species", keep=["Region"])
    assert kept.feature("Region").use["vocabulary"] == ["Anvers"]


def _daily(path: Path) -> Path:
    """A shop's daily takings: one row per day, the row names of a 3% sample of a larger table
    (sparse, unordered), a store of one value, the temperature."""
    import datetime
    import random

    rng = random.Random(7)
    names = rng.sample(range(1, 4000), 120)
    start = datetime.date(2019, 3, 1)
    lines = ["rownames,day,store,temperature,takings"]
    for i, name in enumerate(names):
        day = start + datetime.timedelta(days=i)
        temperature = round(8 + 10 * rng.random(), 1)
        lines.append(f"{name},{day.isoformat()},Leeds,{temperature},{round(900 + 40 * temperature)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_date_per_row_and_sparse_row_names_are_left_out_and_named(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tfship.cli import cli

    path = _daily(tmp_path / "daily.csv")
    schema, reasons = explain_schema(path, "takings")
    assert schema.feature_names == ["temperature"]
    assert reasons[0].startswith("rownames: 120 values, every one distinct, spread over ")
    assert reasons[0].endswith(
        "named like one: an identifier -> left out (a model would memorise it); keep it to use it anyway"
    )
    assert reasons[1] == (
        "day: 120 values, dates (2019-03-01 to 2019-06-28) -> left out: as a category a "
        "model would only know the days it saw; add the parts that recur (month, weekday, "
        "day of year) to the data as columns, or keep it to use it as a category"
    )
    assert reasons[2].startswith("store: one value ('Leeds') in every row -> left out")
    assert schema.feature("temperature").use["range"][0] >= 8
    assert infer_schema(path, "takings", keep=["day"]).feature("day").use["kind"] == "hash"
    measured = tmp_path / "measured.csv"  # the same numbers under a measurement's name are kept
    measured.write_text(path.read_text().replace("rownames,", "price index,", 1))
    assert infer_schema(measured, "takings").feature_names == ["price index", "temperature"]
    gaps = tmp_path / "gaps.csv"  # days not recorded, as R writes them, are still dates
    gaps.write_text(path.read_text().replace(",2019-03-05,", ",NA,").replace(",2019-03-09,", ",NA,"))
    gapped = explain_schema(gaps, "takings")[1][1]
    assert gapped.startswith("day: 118 values, dates (2019-03-01 to 2019-06-28)")
    result = CliRunner().invoke(cli, ["schema", "infer", str(path), "--label", "takings"])
    assert result.exit_code == 0, result.output
    assert (
        "left out: rownames, day, store (each for the reason above); --keep NAME uses one anyway "
        "(or add it to the schema)"
    ) in result.stderr


def test_an_empty_column_is_left_out_so_the_schema_loads(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("remarks,score,y\n" + "".join(f",{i * 0.5},{i % 2}\n" for i in range(30)))
    schema, reasons = explain_schema(path, "y", keep=["remarks"])
    assert reasons[0] == (
        "remarks: no value in any of 30 row(s) -> left out (nothing to learn from, so keep cannot use it)"
    )
    schema.save(tmp_path / "s.json")
    assert Schema.load(tmp_path / "s.json").feature_names == ["score"]
