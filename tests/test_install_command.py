"""The pip command an error line names installs tfship the way it was installed: from the
index by name, from a checkout (editable or not), from a wheel, from version control."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tfship._tf import install_command

ROOT = Path(__file__).resolve().parents[1]


def _command_with(tmp_path: Path, direct_url: dict[str, object] | None) -> str:
    """``install_command("spark")`` in a Python that finds a tfship distribution whose pip
    record is ``direct_url`` (none: installed from an index) before the installed one."""
    dist = tmp_path / "site" / "tfship-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tfship\nVersion: 0.1.0\n")
    if direct_url is not None:
        (dist / "direct_url.json").write_text(json.dumps(direct_url))
    done = subprocess.run(
        [sys.executable, "-c", "from tfship._tf import install_command; print(install_command('spark'))"],
        env={"PYTHONPATH": f"{tmp_path / 'site'}:{ROOT / 'src'}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_this_checkout_is_named_with_its_path() -> None:
    # the development install is editable, from this checkout
    assert install_command("run") == f'pip install -e "{ROOT}[run]"'


@pytest.mark.parametrize("case", ["index", "wheel", "checkout", "gone", "git"])
def test_each_way_of_installing_gets_its_own_command(case: str, tmp_path: Path) -> None:
    wheel = tmp_path / "tfship-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    records: dict[str, dict[str, object] | None] = {
        "index": None,
        "wheel": {"url": wheel.as_uri(), "archive_info": {}},
        "checkout": {"url": ROOT.as_uri(), "dir_info": {}},
        "gone": {"url": (tmp_path / "deleted").as_uri(), "dir_info": {}},
        "git": {"url": "https://example.org/tfship.git", "vcs_info": {"vcs": "git", "commit_id": "0" * 40}},
    }
    expected = {
        "index": 'pip install "tfship[spark]"',
        "wheel": f'pip install "{wheel}[spark]"',
        "checkout": f'pip install "{ROOT}[spark]"',
        "gone": 'pip install "tfship[spark]"',
        "git": 'pip install "tfship[spark] @ git+https://example.org/tfship.git"',
    }
    assert _command_with(tmp_path, records[case]) == expected[case]
