"""argparse's parser and help formatter as the command line uses them (``cli.py`` imports
this only when it builds a parser: a plain ``memento tick`` never needs argparse)."""

from __future__ import annotations

import argparse
import os
from typing import Any


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, minus its start-up cost: it imports shutil (and with it the
    compression modules) for the terminal width on every add_argument; os gives that."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24) -> None:
        try:
            columns = int(os.environ.get("COLUMNS", "")) or os.get_terminal_size().columns
        except (ValueError, OSError):
            columns = 80
        super().__init__(prog, indent_increment, max_help_position, width=columns - 2)


class Parser(argparse.ArgumentParser):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)
