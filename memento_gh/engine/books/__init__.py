"""The tick's bookkeeping: pure edits from plan and outcome, the plan file and the ledger that
write them, lessons, the circuit breaker's rules."""
