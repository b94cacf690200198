"""The other Markdown files memento reads and writes: notes, project map, status log."""
