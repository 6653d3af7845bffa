"""The one error type a user sees, and the warnings a loader collects."""

from __future__ import annotations


class TraceError(Exception):
    """A problem with the user's input that they can act on.

    The message is one paragraph: what was wrong, where, and what to do. The command line prints it and exits
    with code 2; the app shows it in a dialog. Never raised for bugs in this program.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path

    @property
    def message(self) -> str:
        """The paragraph shown to the user."""
        return str(self.args[0])


class LoadCancelled(Exception):  # noqa: N818 - it is a signal, not an error
    """Raised from inside a loader when its progress callback asks it to stop."""
