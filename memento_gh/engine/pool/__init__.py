"""How a tick takes a task and publishes its result, alone or in a pool of workers sharing a
branch."""
