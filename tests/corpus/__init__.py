"""corpus tests (see tests/README.md)."""
