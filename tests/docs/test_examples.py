"""Every code block of the docs and the README runs in a test, or says why it cannot.

The pages whose blocks run are listed with the test that runs them; on every other page each
block carries ``<!-- illustrative: why -->``. The blocks of the data, schema and errors pages
run here, in a fresh directory, and must print what they show.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .examples import DOCS, ROOT, Block, blocks, pages, run_console, runnable

# page -> the test that runs each of its blocks not marked illustrative
RUN_BY = {
    "README.md": "tests/docs/test_readme.py",
    "docs/guides/data.md": "tests/docs/test_examples.py",
    "docs/guides/schema.md": "tests/docs/test_examples.py",
    "docs/errors.md": "tests/docs/test_examples.py",
    "docs/guides/client.md": "tests/serve_client/test_client_guide.py",
    "docs/guides/records.md": "tests/records/test_records_guide.py",
    "docs/guides/train.md": "tests/docs/test_guides.py",
    "docs/guides/serve.md": "tests/docs/test_guides.py",
    "docs/guides/predict.md": "tests/docs/test_predict_guide.py",
    "docs/guides/predict-pipeline.md": "tests/docs/test_predict_guide.py",
    "docs/serving/open-inference-protocol.md": "tests/docs/test_serving_guides.py",
    "docs/serving/health-and-model-list.md": "tests/docs/test_serving_guides.py",
    "docs/serving/request-logging.md": "tests/docs/test_serving_guides.py",
    "docs/serving/tf-serving-2.20.md": "tests/docs/test_serving_guides.py",
}


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", pages(), ids=_rel)
def test_each_block_runs_in_a_test_or_says_why_not(page: Path) -> None:
    rel = _rel(page)
    silent = [b for b in blocks(page) if b.why_not_run is None and rel not in RUN_BY]
    assert not silent, (
        f"{rel}:{silent[0].line}: a block no test runs and no comment explains: run it in a test and "
        "list the page in RUN_BY, or say why it cannot run in <!-- illustrative: why --> above it"
    )
    for block in blocks(page):
        if block.why_not_run is not None:
            assert len(block.why_not_run.split()) >= 3, f"{rel}:{block.line}: say why it is not run"


def test_the_pages_said_to_run_exist_and_hold_blocks() -> None:
    for page, test in RUN_BY.items():
        assert runnable(ROOT / page), page
        assert (ROOT / test).is_file(), test


def test_the_block_finder_sees_a_marked_and_an_unmarked_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n<!-- illustrative: a cluster of four machines -->\n```console\n$ tfship x\n```\n\n"
        "```python\nprint(1)\n```\n\n```text\nnot code\n```\n"
    )
    found = blocks(page)
    assert [(b.kind, b.why_not_run) for b in found] == [
        ("console", "a cluster of four machines"),
        ("python", None),
    ]


def test_every_public_package_has_an_api_page() -> None:
    source = ROOT / "src" / "tfship"
    packages = ["tfship"] + sorted(
        f"tfship.{p.stem if p.is_file() else p.name}"
        for p in source.iterdir()
        if not p.name.startswith("_")
        and (p.suffix == ".py" or (p / "__init__.py").is_file())
        and p.stem != "cli"
    )
    documented = set(re.findall(r"^::: (\S+)$", _api_text(), re.M))
    assert set(packages) <= documented, sorted(set(packages) - documented)


def _api_text() -> str:
    return "".join(p.read_text() for p in (DOCS / "reference" / "api").glob("*.md"))


def test_the_data_guide_runs_as_shown(tmp_path: Path) -> None:
    for block in runnable(DOCS / "guides" / "data.md", "console"):
        run_console(block, tmp_path)


def test_the_schema_guide_runs_as_shown(tmp_path: Path) -> None:
    # bad.json: the penguins' schema with its label's vocabulary lost
    consoles = runnable(DOCS / "guides" / "schema.md", "console")
    run_console(consoles[0], tmp_path)
    schema = json.loads((tmp_path / "schema.json").read_text())
    schema["label"].pop("vocabulary")
    (tmp_path / "bad.json").write_text(json.dumps(schema))
    for block in consoles[1:]:
        run_console(block, tmp_path)
    assert not runnable(DOCS / "guides" / "schema.md", "python")


def test_the_errors_page_runs_as_shown(tmp_path: Path) -> None:
    page = DOCS / "errors.md"
    schema = {
        "version": 1,
        "label": {"name": "species", "kind": "multiclass"},
        "features": [{"name": "island", "dtype": "string"}],
    }
    (tmp_path / "bad.json").write_text(json.dumps(schema))
    for block in runnable(page, "console"):
        run_console(block, tmp_path)
    for block in runnable(page, "python"):
        exec(compile(block.code, f"{block.page}:{block.line}", "exec"), {})


def test_a_block_that_prints_otherwise_fails(tmp_path: Path) -> None:
    wrong = Block("page.md", 1, "console", "$ echo tfship\nsomething else\n", None)
    with pytest.raises(AssertionError, match="something else"):
        run_console(wrong, tmp_path)
    failing = Block("page.md", 1, "console", "$ tfship schema check missing.json\n...\n", None)
    with pytest.raises(AssertionError, match="exit 2"):
        run_console(failing, tmp_path)


def test_where_numbers_vary_only_numbers_may_differ(tmp_path: Path) -> None:
    script = "$ echo 'rows in: 68 (0.25 s)'; echo 'done 1,619' >&2\nrows in: 2,070 (3.5 s)\ndone 7\n"
    run_console(Block("page.md", 1, "console", script, None, numbers_vary=True), tmp_path)
    worded = "$ echo 'rows out: 68 (0.25 s)'\nrows in: 68 (0.25 s)\n"
    with pytest.raises(AssertionError, match="rows out"):
        run_console(Block("page.md", 1, "console", worded, None, numbers_vary=True), tmp_path)
    reordered = "$ echo 'a 1'; echo 'b 2'\nb 2\na 1\n"
    with pytest.raises(AssertionError, match="shown"):
        run_console(Block("page.md", 1, "console", reordered, None, numbers_vary=True), tmp_path)
