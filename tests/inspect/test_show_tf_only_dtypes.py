"""``tfship inspect show`` on signatures of TensorFlow's float8, float4, int4 and int2 types, against
the installed TensorFlow's ``saved_model_cli show``: each type is printed by TensorFlow's name.

The export is made here by the installed TensorFlow with every such type it has (TensorFlow 2.21
has ten, 2.15 four); the reference runs in a subprocess on it.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

from click.testing import CliRunner

from tfship.cli import cli

HERE = pathlib.Path(__file__).parent
# TensorFlow's numbers of the types tfship's tensor codec does not carry.
TF_ONLY = range(24, 34)


def _export(path: pathlib.Path) -> list[str]:
    """A SavedModel with a signature per type the installed TensorFlow has; their keys."""
    import tensorflow as tf

    module = tf.Module()
    signatures = {}
    for enum in TF_ONLY:
        try:
            dtype = tf.dtypes.as_dtype(enum)
        except TypeError:  # an older TensorFlow without this type
            continue

        @tf.function(input_signature=[tf.TensorSpec([None, 2], dtype, name="x")])
        def echo(x: object) -> dict[str, object]:
            return {"y": tf.identity(x), "count": tf.size(x)}

        signatures[dtype.name] = echo.get_concrete_function()
    assert {"float8_e5m2", "float8_e4m3fn", "int4", "uint4"} <= set(signatures)
    tf.saved_model.save(module, str(path), signatures=signatures)
    return sorted(signatures)


def test_show_names_each_type_as_saved_model_cli_does(tmp_path: pathlib.Path) -> None:
    keys = _export(tmp_path / "1")
    cases = [[f"--dir={tmp_path / '1'}", "--tag_set=serve", f"--signature_def={key}"] for key in keys]
    run = subprocess.run(
        [sys.executable, str(HERE / "smcli_driver.py"), json.dumps(cases)],
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = json.loads(run.stdout)
    for key, args, want in zip(keys, cases, theirs):
        result = CliRunner().invoke(cli, ["inspect", "show", *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert result.stdout == want
        assert f"dtype: DT_{key.upper()}\n" in result.stdout


def test_request_refuses_a_type_it_cannot_write_in_one_line(tmp_path: pathlib.Path) -> None:
    keys = _export(tmp_path / "1")
    for key in keys:
        for form in ("grpc", "rest"):
            result = CliRunner().invoke(
                cli,
                ["inspect", "request", str(tmp_path / "1"), "--signature", key, "--format", form],
                catch_exceptions=False,
            )
            assert result.exit_code != 0, (key, form, result.output)
            assert result.stderr == (
                f"Error: input 'x' has dtype DT_{key.upper()}, which tfship cannot write an "
                "example request for\n"
            ), (key, form)
