"""Earlier spellings a module still answers to, each with a ``DeprecationWarning``.

A module lists them in ``OldNames`` and hands its ``__getattr__`` to it: a name renamed points
to its new spelling, a name withdrawn from the public surface (tfship's own plumbing between
its packages) says so. Either way the old spelling keeps working, for now, and the warning
names what to write instead.

Example:
    >>> import warnings
    >>> old = OldNames("tfship.example", renamed={"TLSConfig": "tfship.serve_client.TlsConfig"})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old.resolve("TLSConfig").__name__
    'TlsConfig'
    >>> str(caught[0].message)
    'tfship.example.TLSConfig is deprecated: use tfship.serve_client.TlsConfig'
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from typing import Any


class OldNames:
    """The old names of ``module``: ``renamed`` maps each to its new dotted spelling;
    ``withdrawn`` maps each to the dotted place that still holds it, no longer public."""

    def __init__(
        self,
        module: str,
        *,
        renamed: Mapping[str, str] | None = None,
        withdrawn: Mapping[str, str] | None = None,
    ) -> None:
        self.module = module
        self.renamed = dict(renamed or {})
        self.withdrawn = dict(withdrawn or {})

    def __contains__(self, name: object) -> bool:
        return name in self.renamed or name in self.withdrawn

    def resolve(self, name: str) -> Any:
        """The object ``name`` stands for, after a warning naming the new spelling.

        Raises:
            AttributeError: ``name`` is no old name of the module.
        """
        if name in self.renamed:
            where = self.renamed[name]
            message = f"{self.module}.{name} is deprecated: use {where}"
        elif name in self.withdrawn:
            where = self.withdrawn[name]
            message = (
                f"{self.module}.{name} is deprecated: it is internal to tfship, no longer part of its "
                "public API, and will be removed"
            )
        else:
            raise AttributeError(f"module {self.module!r} has no attribute {name!r}")
        # 1 this frame, 2 the module's __getattr__, 3 the code that named the old spelling
        warnings.warn(message, DeprecationWarning, stacklevel=3)
        home, _, attribute = where.rpartition(".")
        return getattr(importlib.import_module(home), attribute)
