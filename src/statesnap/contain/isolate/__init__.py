"""Per-test process isolation (fork or spawn) and what the child sends back."""
