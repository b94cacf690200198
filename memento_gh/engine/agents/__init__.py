"""The programs a tick starts: the agent presets and their checks, cost reports and provider
limits, verify, and the one process runner."""
