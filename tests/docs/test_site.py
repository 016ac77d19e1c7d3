"""The documentation site builds strictly and works in a real headless Chromium.

It is built from this checkout with ``mkdocs build --strict`` and served over HTTP on loopback
(the search runs in a web worker, which a ``file://`` page may not start); Chromium, driven over
the DevTools protocol, opens every page of the navigation, follows a link, and searches, and no
page logs a console error, throws, or fails to load a resource.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from browser import DevTools

from .examples import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.core]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    handler = functools.partial(_Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def tab() -> Iterator[DevTools]:
    with DevTools() as devtools:
        yield devtools


NAV_LINKS = "[...document.querySelectorAll('nav.md-nav--primary a.md-nav__link[href]')].map(a => a.href)"


def test_every_page_of_the_navigation_opens_with_a_title_and_no_error(site: str, tab: DevTools) -> None:
    tab.open(site + "index.html")
    links = sorted({link.split("#")[0] for link in tab.evaluate(NAV_LINKS)})
    pages = {
        p.relative_to(ROOT / "docs").with_suffix(".html").as_posix() for p in (ROOT / "docs").rglob("*.md")
    }
    assert {site + page for page in pages} <= set(links), sorted(
        pages - {link[len(site) :] for link in links}
    )
    for link in links:
        tab.open(link)
        title = tab.evaluate("document.querySelector('article h1')?.textContent ?? ''")
        assert title.strip(), link
        assert tab.errors == [], (link, tab.errors)


def test_a_guide_is_one_click_from_the_guides_page(site: str, tab: DevTools) -> None:
    tab.open(site + "guides/index.html")
    tab.follow('article a[href="promote.html"]')
    assert tab.evaluate("location.pathname").endswith("/guides/promote.html")
    assert (
        tab.evaluate("document.querySelector('article h1').firstChild.textContent").strip()
        == "tfship promote"
    )
    assert tab.errors == []


def test_the_api_pages_show_the_documented_names(site: str, tab: DevTools) -> None:
    tab.open(site + "reference/api/serve_client.html")
    headings = set(tab.evaluate("[...document.querySelectorAll('.doc-heading')].map(h => h.id)"))
    for name in ("ServingClient", "AsyncServingClient", "ServingCallError"):
        assert f"tfship.serve_client.{name}" in headings, sorted(headings)
    assert tab.errors == []


def test_search_finds_a_command_by_its_name(site: str, tab: DevTools) -> None:
    tab.open(site + "index.html")
    tab.evaluate("document.querySelector('label.md-search__icon, .md-search__input').click()")
    tab.evaluate("document.querySelector('.md-search__input').focus()")
    tab.type_text("rollback")
    found = tab.wait_for(
        "[...document.querySelectorAll('.md-search-result__item a')].map(a => a.href)", timeout=60
    )
    assert any("guides/promote.html" in href for href in found), found
    tab.type_text("zzzqqq")
    tab.wait_for("document.querySelector('.md-search-result__meta').textContent.includes('No matching')")
    assert tab.errors == []


def test_the_probe_sees_a_console_error(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>console.error('broken')</script></body></html>")
    with DevTools() as devtools:
        devtools.open(page.as_uri())
        devtools.settle(1.0)
        assert any("broken" in error for error in devtools.errors), devtools.errors
