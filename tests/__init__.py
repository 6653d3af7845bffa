"""The test suite: unit/, tui/, e2e/ and corpus/ tests, with shared helpers and fixtures here."""
