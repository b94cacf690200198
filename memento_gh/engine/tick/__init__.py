"""One tick's step order and what its steps share: the session, the pipeline's own events, recovery
from a dead tick, one attempt, its recorded result."""
