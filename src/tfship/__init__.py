"""tfship: the life of a TensorFlow model after training.

Export it (``tfship.exporters``), inspect it (``tfship.inspect``), run it without a server
(``tfship.loaders``), serve it and call it (``tfship.serve_client``). Importing ``tfship`` does
not import TensorFlow; each subpackage imports it when first used.

Example:
    >>> import tfship
    >>> tfship.__version__
    '0.1.0'
"""

from __future__ import annotations

__version__ = "0.1.0"
"""The version of this tfship."""

__all__ = ["__version__"]
