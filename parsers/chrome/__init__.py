"""Chrome trace JSON (PyTorch/Kineto, JAX/XLA, generic producers) → :class:`~gputop_trace.model.trace.Trace`.

The public entry is :func:`gputop_trace.parsers.chrome.loader.load`. Modules, in the order a load runs through them:

- ``opening``: opens the file and starts reading it (``ahead``: on a thread of its own) before the rest is imported;
- ``stream``: reads the ``traceEvents`` array out of the (gzip) byte stream in chunks cut at element boundaries;
- ``scanner``, ``parallel_scan``, ``fast``, ``fast_columns``: the compiled scanner's path (raw scan, in parts,
  columns into the loader's state);
- ``document``: what the streamer learns of the document, the chunks it hands on, the header keys;
- ``decode``: decodes one run of elements into a chunk of typed events (exact timestamps where a float is not);
- ``lenient``: element-by-element decoding of chunks the typed structs reject (repairs, skips, non-strict JSON);
- ``recovery``: damaged bytes: the run before them, where decoding works again, elements nested too deeply;
- ``structs``: the msgspec event structs and their decoders;
- ``columns``: decoded chunks → numpy columns and side rows (no Python loop per slice);
- ``state``: what streaming gathers (``State``), the phase-class values of its columns;
- ``values``: µs → ns conversion, lenient integer readers, dense ids;
- ``matching``: B/E and async b/e pairs → slices;
- ``conventions``: Kineto categories → kinds, JAX name patterns, copy direction and memory-kind words;
- ``classify``: the format, and the kind and lane of every event;
- ``side_tables``: kernel, collective and copy rows;
- ``flows``: launch flows by correlation id, the file's flow events bound to slices;
- ``loader``: ``load()``, the trace's assembly and metadata, ``rank_from_filename``.
"""
