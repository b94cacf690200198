"""The tick engine: pure scheduling, guards and prompt building, plus the process adapters."""
