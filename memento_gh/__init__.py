"""memento-gh: one guarded, verified, committed agent tick at a time."""

__version__ = "0.1.0"
