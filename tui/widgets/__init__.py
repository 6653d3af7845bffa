"""Widgets of the app: the timeline, the details pane, the panels and the status bar."""
