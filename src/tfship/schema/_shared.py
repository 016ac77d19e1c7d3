"""What other tfship packages need of ``schema`` and a user does not: its door to them.

Why a line of a CSV file is not UTF-8, in the words every CSV reader of tfship uses (the
records' line reader as much as the header and line rules here). A module of another package
imports it here, never from the module that defines it; it is not public API.
"""

from __future__ import annotations

from tfship.schema._headers import _not_utf8 as not_utf8

__all__ = ["not_utf8"]
