"""The wall around the agent: what it could use against memento, found and put back."""
