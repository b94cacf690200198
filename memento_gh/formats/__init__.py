"""The Markdown files other than the plan: the tick status log, the human notes, the project
map, STATE.md and the lessons. Each module reads and writes one format, text in, text out."""
