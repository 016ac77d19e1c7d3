"""Install size and time: the core (``pip install .``) against the full install (``".[estimator]"``).

Each install goes into a fresh venv in a temporary directory, with pip's cache as it is (after
a first run the time is resolving, unpacking and byte-compiling, not downloading); the size is
what the venv's ``site-packages`` holds on disk. The core installs on the newest Python here
(3.13, else 3.12, else this one), the full install on this Python (TensorFlow 2.15 needs
3.9-3.11). Target: the core at most a tenth of the full install's size.

``--short`` installs nothing: it reports the sizes of venvs that exist already, the one running
it (a full install, e.g. ``.venv`` with the ``dev`` and ``beam`` extras too) and
``.venv-core-py3.1x-install-protobuf6`` (the core alone, built by
``tests/test_core_install.py``), for the test suite.

Run: python benchmarks/install.py [--short]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from venvs import clean_env, interpreters, package_copy  # noqa: E402  (the one place that finds other Pythons)

TARGET_RATIO = 0.1


def site_packages_bytes(venv: pathlib.Path) -> int:
    """Bytes of the files under the venv's ``site-packages``."""
    found = sorted(venv.glob("lib/python3.*/site-packages"))
    if not found:
        raise SystemExit(f"error: {venv} has no lib/python3.*/site-packages")
    total = 0
    for folder, _, files in os.walk(found[0]):
        for name in files:
            total += os.lstat(os.path.join(folder, name)).st_size
    return total


def install(command: list[str], env: dict[str, str], venv: pathlib.Path, target: str) -> float:
    """Seconds to make ``venv`` and ``pip install target`` into it."""
    start = time.perf_counter()
    subprocess.run(command + ["-m", "venv", str(venv)], env=env, check=True)
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            target,
        ],
        env=clean_env(),
        check=True,
    )
    return time.perf_counter() - start


def row(name: str, size: int, seconds: float | None) -> str:
    took = "(existing venv)" if seconds is None else f"{seconds:.0f} s"
    return f"{name:<28} {size / 1e6:>9.1f} MB  {took}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="Report existing venvs; install nothing.")
    args = parser.parse_args()
    pythons = interpreters(("3.12", "3.13"))
    newest = next(
        minor for minor in ("3.13", "3.12", "{}.{}".format(*sys.version_info[:2])) if minor in pythons
    )
    if args.short:
        core_venv = ROOT / f".venv-core-py{newest}-install-protobuf6"
        full_venv = pathlib.Path(sys.prefix)
        if not (core_venv / "bin" / "python").is_file():
            raise SystemExit(f"error: {core_venv.name} does not exist; run make test-core (or drop --short)")
        if sys.prefix == sys.base_prefix or importlib.util.find_spec("tensorflow") is None:
            raise SystemExit(
                "error: --short measures the venv running it as the full install; run it "
                "with the python of a venv that has tfship[estimator] (.venv/bin/python)"
            )
        rows: list[tuple[str, int, float | None]] = [
            (f"core (Python {newest})", site_packages_bytes(core_venv), None),
            ("full (this venv)", site_packages_bytes(full_venv), None),
        ]
    else:
        this = "{}.{}".format(*sys.version_info[:2])
        with tempfile.TemporaryDirectory(prefix="tfship-install-") as tmp:
            core, full = pathlib.Path(tmp) / "core", pathlib.Path(tmp) / "full"
            checkout = package_copy(pathlib.Path(tmp))
            core_s = install(*pythons[newest], core, str(checkout))
            full_s = install(*pythons[this], full, f"{checkout}[estimator]")
            rows = [
                (f"core (Python {newest})", site_packages_bytes(core), core_s),
                (f"full, [estimator] (Python {this})", site_packages_bytes(full), full_s),
            ]
    print(f"{'install':<28} {'size':>12}  time")
    for name, size, seconds in rows:
        print(row(name, size, seconds))
    ratio = rows[0][1] / rows[1][1]
    met = "met" if ratio <= TARGET_RATIO else "not met"
    print(f"core / full size: {ratio:.3f} (target <= {TARGET_RATIO}: {met})")
    if rows[0][2] is not None and rows[1][2] is not None:
        print(f"core / full time: {rows[0][2] / rows[1][2]:.3f}")


if __name__ == "__main__":
    main()
