"""The optional compiled part of gputop-trace (everything else is in pyproject.toml).

``parsers/chrome/_fastscan.c`` scans Chrome trace chunks into columns. It is optional: on a machine without a C
compiler the build skips it (``optional=True``) and the loader uses its pure-Python path, which gives the same
model (tests/corpus/test_fastscan_equivalence.py compares the two on every corpus trace).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "gputop_trace.parsers.chrome._fastscan",
            ["parsers/chrome/_fastscan.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ]
)
