"""The Textual app (``gputop-trace view``). The only package that imports Textual."""
