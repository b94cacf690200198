"""``memento demo``: a sample project, its plan, and a scripted worker that needs no LLM."""
