"""What an unexpected exception gets instead of a traceback: two lines, and its traceback
saved in a report of its own."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from memento_gh import __version__, files


def crash_message(error: BaseException) -> str:
    """The two lines an unexpected exception gets, its traceback saved to a log if possible."""
    # Imported here, on the crash path only: traceback (with linecache and tokenize) was
    # 10M of the 388M instructions of a 1,000-task tick's process (valgrind).
    import traceback

    summary = f"memento: internal error: {type(error).__name__}: {' '.join(str(error).split())}"
    text = f"memento {__version__}\nargv: {sys.argv}\n\n" + "".join(
        traceback.format_exception(type(error), error, error.__traceback__)
    )
    try:
        # A new file under a name nobody can guess: the temporary folder is shared, and a
        # link planted at a fixed name there would have the report overwrite its target.
        report = files.create_private(Path(tempfile.gettempdir()), "memento-crash-", ".log", text)
    except OSError:
        return f"{summary}\nThis is a bug in memento; please report it with the command you ran."
    return (
        f"{summary} (details: {report})\nThis is a bug in memento; please report it with that file."
    )
