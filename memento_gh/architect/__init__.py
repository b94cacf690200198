"""The architect: an agent that drafts the plan from a spec and revises it when tasks block.

It runs behind the worker's wall (``engine/wall``, from ``run.py``) and writes one file, its
proposal, which memento checks (``proposal.py``) before anything lands (``land.py``)."""
