"""``python -m tfship``: the same command as ``tfship``."""

from __future__ import annotations

from tfship.cli import main

if __name__ == "__main__":
    main()
