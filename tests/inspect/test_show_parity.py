"""``tfship inspect show`` against the installed TensorFlow's ``saved_model_cli show``, byte for byte.

The reference runs in a subprocess on the same exports. Only orders that the original leaves to
chance are normalised, as we print them sorted: the ops set (a Python set), and the entries of
a dict-valued argument (a protobuf map, whose order from protobuf 5 on changes with each process).
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tfship.cli import cli

HERE = pathlib.Path(__file__).parent
SMCLI = pathlib.Path(sys.executable).parent / "saved_model_cli"
_OPS = re.compile(r"(contains the following ops: )\{(.*)\}$", re.M)

TF2 = ("tf2_module", "keras", "tf2_composite", "keras_seq")

pytestmark = pytest.mark.slow


def _normalise_ops(text: str) -> str:
    text = _OPS.sub(lambda m: m.group(1) + "{" + ", ".join(sorted(m.group(2).split(", "))) + "}", text)
    return "\n".join(_sorted_dicts(line) if "Value: {" in line else line for line in text.split("\n"))


def _sorted_dicts(line: str) -> str:
    """The line with the entries of each dict literal in it sorted, nested ones too; what ends a
    literal (saved_model_cli's ``, \\b\\b}``) stays as it is."""
    out, i = [], 0
    while (start := line.find("{", i)) >= 0:
        end = _closing(line, start)
        parts = [part.strip(" ") for part in _top_level(line[start + 1 : end])]
        ending = ", " + parts.pop() if parts and parts[-1].strip("\b") == "" else ""
        out.append(line[i:start] + "{" + ", ".join(sorted(map(_sorted_dicts, parts))) + ending + "}")
        i = end + 1
    return "".join(out) + line[i:]


def _closing(text: str, start: int) -> int:
    depth = 0
    for at in range(start, len(text)):
        depth += (text[at] in "{[(") - (text[at] in "}])")
        if depth == 0:
            return at
    return len(text)


def _top_level(body: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for at, char in enumerate(body):
        depth += (char in "{[(") - (char in "}])")
        if depth == 0 and char == ",":
            parts.append(body[start:at])
            start = at + 1
    return [*parts, body[start:]] if body else []


def _ours(args: list[str]) -> str:
    result = CliRunner().invoke(cli, ["inspect", "show", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout  # stdout only: hints go to stderr


def _cases(exports: dict[str, pathlib.Path]) -> list[list[str]]:
    cases: list[list[str]] = []
    from tfship.inspect import read_saved_model

    for name, path in exports.items():
        d = f"--dir={path}"
        cases.append([d])
        if name in TF2:
            continue  # --all of TF2 models runs in a fresh process below
        cases.append([d, "--all"])
        info = read_saved_model(path)
        for mg in info.meta_graphs:
            tags = ",".join(mg.tags)
            cases.append([d, f"--tag_set={tags}"])
            cases.append([d, f"--tag_set={tags}", "--list_ops"])
            for key in mg.signatures:
                cases.append([d, f"--tag_set={tags}", f"--signature_def={key}"])
    cases.append([f"--dir={exports['linear_parsing']}", "--list_ops"])
    cases.append([f"--dir={exports['linear_parsing']}", "--signature_def=predict"])
    cases.append(
        [f"--dir={exports['tf2_module']}", "--tag_set=serve", "--signature_def=__saved_model_init_op"]
    )
    return cases


def _to_ours(argv: list[str]) -> list[str]:
    out = []
    for arg in argv:
        flag, _, value = arg.partition("=")
        if flag == "--dir":
            out.append(value)
        elif value:
            out.extend([flag, value])
        else:
            out.append(flag)
    return out


def test_show_matches_saved_model_cli(exports: dict[str, pathlib.Path]) -> None:
    cases = _cases(exports)
    run = subprocess.run(
        [sys.executable, str(HERE / "smcli_driver.py"), json.dumps(cases)],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads(run.stdout)
    assert len(expected) == len(cases)
    for argv, reference in zip(cases, expected):
        assert reference.strip(), argv  # the reference printed something
        assert _ours(_to_ours(argv)) == _normalise_ops(reference), argv


@pytest.mark.parametrize("kind", [*TF2, "custom_sparse"])
def test_show_all_matches_a_fresh_saved_model_cli(exports: dict[str, pathlib.Path], kind: str) -> None:
    # A fresh process: the option order of concrete functions depends on the loader's counter.
    run = subprocess.run(
        [str(SMCLI), "show", "--dir", str(exports[kind]), "--all"], capture_output=True, text=True, check=True
    )
    ours = _ours([str(exports[kind]), "--all"])
    assert ours == _normalise_ops(run.stdout)
    if kind != "custom_sparse":
        assert "\nConcrete Functions:" in ours and "Option #1" in ours
