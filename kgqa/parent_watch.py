"""Child processes that end with their parent: ``eval --workers`` and train's planner process.

Why: a parent killed with SIGKILL (or SIGTERM, whose default action runs no cleanup) cannot stop
its children, and they would answer questions or train on, hundreds of MB each, to no one. A
daemon thread in the child compares :func:`os.getppid` with the parent it started under and, when
the parent is gone, runs the child's cleanup and exits. Polling (rather than Linux's
``PR_SET_PDEATHSIG``) works on every platform and does not fire when merely the parent's thread
that started the child ends.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

#: Seconds between two looks at the parent: a child outlives its parent by at most this much
#: (plus its cleanup).
POLL_S = 0.5


def exit_with_parent(
    on_exit: Callable[[], None] | None = None, *, parent: int | None = None, poll_s: float = POLL_S
) -> None:
    """Watch this process's parent from a daemon thread; when it has died, call ``on_exit``
    (e.g. remove the temporary files the parent would have removed) and end this process with
    exit code 1 at once, whatever its other threads are doing.

    Call it once, early in the child (a worker's initializer, a script's entry point), with
    ``parent`` the pid of the process that started it where that process can pass it: a parent
    that died while the child was still importing (torch takes seconds) has already left the
    child to another parent, which :func:`os.getppid` would then take for its own. ``None``: the
    parent the child has now.
    """
    started_by = os.getppid() if parent is None else parent

    def watch() -> None:
        event = threading.Event()
        while True:
            if os.getppid() != started_by:
                try:
                    if on_exit is not None:
                        on_exit()
                finally:
                    os._exit(1)
            event.wait(poll_s)

    threading.Thread(target=watch, name="kgqa-parent-watch", daemon=True).start()
