"""``python -m tfship.promote._child PID serve ...``: ``tfship serve`` that ends with promote.

On Linux the kernel kills a served model's process when the promote that started it dies,
even by SIGKILL (``PR_SET_PDEATHSIG``). This is the fallback on every system: a thread that
sees the process's parent is no longer ``PID`` (promote is gone, the process was re-parented)
ends the process at once. Nothing is lost: the server writes nothing, and its one client was
promote. (SIGTERM would wait for the models to finish loading, seconds or minutes.)
"""

from __future__ import annotations

import os
import sys
import threading
import time

from tfship.cli import main

_POLL_SECONDS = 0.2


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_POLL_SECONDS)
    os._exit(1)


if __name__ == "__main__":
    watched = int(sys.argv.pop(1))
    threading.Thread(target=_watch, args=(watched,), daemon=True).start()
    main()
