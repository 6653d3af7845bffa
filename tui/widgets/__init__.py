"""Widgets of the Textual app."""
