"""What other tfship packages need of ``inspect`` and a user does not: its door to them.

The checks that ``loaders`` runs before loading a model (ops newer than the TensorFlow that
would run it, variables a signature reads that the restore step never writes, and the remedy
the server names for them) and the ops with effects on the host that ``promote`` refuses. A
module of another package imports these here, never from the modules that define them; none
of them is public API.
"""

from __future__ import annotations

from tfship.inspect._check import describe_newer_ops, newer_op_problems
from tfship.inspect._restore import REMEDY, unrestored_variables
from tfship.inspect._scan import HOST_EFFECT_OPS, host_effects, host_effects_refusal

__all__ = [
    "HOST_EFFECT_OPS",
    "REMEDY",
    "describe_newer_ops",
    "host_effects",
    "host_effects_refusal",
    "newer_op_problems",
    "unrestored_variables",
]
