"""The optional compiled part of gputop-trace (everything else is in pyproject.toml).

``parsers/chrome/_fastscan.c`` scans Chrome trace chunks into columns. It is optional: on a machine without a C
compiler the build skips it (``optional=True``) and the loader uses its pure-Python path, which gives the same
model (tests/corpus/test_fastscan_equivalence.py compares the two on every corpus trace).
``gputop_trace/model/_rows.c`` assigns the rows of the timeline's lanes; it is optional in the same way
(gputop_trace/model/depths.py falls back to numpy; tests/unit/test_rows_compiled.py compares the two).
``parsers/nsys/_sqlite_ints.c`` reads the integer columns of Nsight Systems exports into numpy buffers; it is optional
in the same way (parsers/nsys/columns.py falls back to its text path; tests/unit/test_nsys_native.py compares them).
``analysis/critical_path/_replay.c`` replays a step's critical-path graph (the what-ifs) in one pass; it is optional
in the same way (analysis/critical_path/walk.py falls back to numpy scans and an ordered Python pass;
tests/unit/test_critical_path_replay.py compares them).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "gputop_trace.parsers.chrome._fastscan",
            ["parsers/chrome/_fastscan.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "gputop_trace.model._rows",
            ["gputop_trace/model/_rows.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "gputop_trace.parsers.nsys._sqlite_ints",
            ["parsers/nsys/_sqlite_ints.c"],
            optional=True,
            extra_compile_args=["-O2"],
            libraries=["dl"],
        ),
        Extension(
            "gputop_trace.analysis.critical_path._replay",
            ["analysis/critical_path/_replay.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
    ]
)
