"""Screens of the app: loading progress, the main browser, help, dialogs."""
