"""The promotion report in a real headless Chromium: it renders, shows every check, logs no error."""

from __future__ import annotations

from pathlib import Path

import pytest

from browser import chromium, console_errors
from tfship.promote import CHECKS, PromoteOptions, promote, write_report

from .conftest import base_with

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(modules: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    base = base_with(tmp, modules["baseline"])
    options = PromoteOptions(
        requests=modules["requests"],
        max_diff=1.0,
        min_agreement=0.0,
        latency_calls=20,
        max_latency_ratio=100.0,
        dry_run=True,
    )
    decision = promote(modules["differs"], base, options)
    return write_report(decision, tmp / "report.html")


def test_the_report_is_one_page_that_loads_nothing(report: Path) -> None:
    page = report.read_text()
    assert page.startswith("<!DOCTYPE html>")
    # nothing to fetch: no scripts, links, sources or remote references (xmlns names are not loads)
    for probe in ("<script", "<link", "src=", 'href="http', "url(http", "@import"):
        assert probe not in page, probe
    assert page.count("<svg") == 3  # latency, scores, class agreement


def test_chromium_renders_every_check_and_logs_no_console_error(report: Path) -> None:
    dom = chromium(report, "--dump-dom")
    assert dom.returncode == 0, dom.stderr
    for name in CHECKS:
        assert f'data-check="{name}"' in dom.stdout, name
    assert 'id="plot-latency"' in dom.stdout and 'id="plot-scores"' in dom.stdout
    assert 'id="plot-agreement"' in dom.stdout
    assert console_errors(dom.stderr) == []


def test_the_screenshot_shows_the_page(report: Path, tmp_path: Path) -> None:
    import matplotlib.image

    shot = tmp_path / "report.png"
    result = chromium(report, f"--screenshot={shot}")
    assert result.returncode == 0 and shot.is_file(), result.stderr
    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] == 1400 and pixels.shape[1] == 1300
    # not a blank page: the table's borders, the text and the plots' colours are there
    assert pixels[..., :3].std() > 0.05
    assert len({tuple(p) for p in pixels[::20, ::20, :3].reshape(-1, 3).round(2)}) > 20
    assert console_errors(result.stderr) == []


def test_the_console_probe_sees_an_error(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>console.error('broken')</script></body></html>")
    assert console_errors(chromium(page, "--dump-dom").stderr)
