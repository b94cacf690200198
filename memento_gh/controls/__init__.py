"""Controls: how people steer the plan. ``model`` says what each one means (pure);
``apply`` writes it to the repository."""
