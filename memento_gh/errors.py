"""The one exception users see (a sentence they can act on), and what an unexpected one
gets instead of a traceback."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from memento_gh import __version__


class UserError(Exception):
    """Bad input or a state the user must fix; the message names the fix.

    The CLI prints it without a traceback and exits 1.
    """


def crash_message(error: BaseException) -> str:
    """The two lines an unexpected exception gets, its traceback saved to a log if possible."""
    # Imported here, on the crash path only: traceback (with linecache and tokenize) was
    # 10M of the 388M instructions of a 1,000-task tick's process (valgrind).
    import traceback

    report = Path(tempfile.gettempdir()) / "memento-crash.log"
    summary = f"memento: internal error: {type(error).__name__}: {' '.join(str(error).split())}"
    try:
        report.write_text(
            f"memento {__version__}\nargv: {sys.argv}\n\n"
            + "".join(traceback.format_exception(type(error), error, error.__traceback__)),
            encoding="utf-8",
        )
    except OSError:
        return f"{summary}\nThis is a bug in memento; please report it with the command you ran."
    return (
        f"{summary} (details: {report})\nThis is a bug in memento; please report it with that file."
    )
