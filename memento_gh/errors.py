"""The one exception users see: a sentence they can act on (an unexpected one gets
``crash.crash_message`` instead of a traceback)."""

from __future__ import annotations


class UserError(Exception):
    """Bad input or a state the user must fix; the message names the fix.

    The CLI prints it without a traceback and exits 1.
    """
