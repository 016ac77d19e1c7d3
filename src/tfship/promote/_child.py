"""``python -m tfship.promote._child PID serve ...``: ``tfship serve`` that ends with promote.

On Linux the kernel signals a served model's process when the promote that started it dies,
even by SIGKILL (``PR_SET_PDEATHSIG``). This is the fallback on every system: a thread that
sees the process's parent is no longer ``PID`` (promote is gone, the process was re-parented)
stops the server as SIGTERM does, and ends the process if stopping takes too long.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from tfship.cli import main

_POLL_SECONDS = 0.2
_STOP_SECONDS = 5.0


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_POLL_SECONDS)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(_STOP_SECONDS)
    os._exit(1)


if __name__ == "__main__":
    watched = int(sys.argv.pop(1))
    threading.Thread(target=_watch, args=(watched,), daemon=True).start()
    main()
