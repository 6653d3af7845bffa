"""tui tests (see tests/README.md)."""
