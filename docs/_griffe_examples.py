"""A griffe extension for the API pages: tfship's docstrings head their doctests ``Example:``.

Google style names the section ``Examples:``; griffe reads only that spelling as examples (code)
and would render ``Example:`` as an admonition of Markdown text, where a doctest's output such as
``['a'][0]`` reads as a link. The docstrings keep their spelling; the pages read it as examples.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR = re.compile(r"^(\s*)Example:[ \t]*$", re.M)


class ExampleSections(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
