"""The typed ``msgspec`` structs a Chrome trace's events are decoded into (only the fields the loader reads are
decoded; everything else is skipped by msgspec) and their decoders. (What the streamer hands on, the decoded
chunks and what it learnt of the document, is in :mod:`~gputop_trace.parsers.chrome.document`.)"""

from __future__ import annotations

import math
from typing import Annotated, Any, Union

import msgspec

#: an integer that fits int64 (a larger one in the file fails typed decoding and takes the lenient path)
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class Args(msgspec.Struct, gc=False):
    """The ``args`` fields the loader reads (Kineto, JAX and metadata events)."""

    external_id: Int64 = msgspec.field(default=-1, name="External id")
    correlation: Int64 = -1
    device: Int64 = -1
    # ``stream`` and ``kind`` are not decoded: a device event's stream is its ``tid``, and runtime calls write
    # them as text (HIP: ``"stream": "0x0"``, ``"kind": "1"``)
    # a kernel's launch grid; text on other events (Triton's CPU op: ``"grid": "grid(100,)"``) is no kernel
    grid: tuple[Int64, Int64, Int64] | str | None = None
    block: tuple[Int64, Int64, Int64] | str | None = None
    registers: Int64 = msgspec.field(default=-1, name="registers per thread")
    shared_memory: Int64 = msgspec.field(default=-1, name="shared memory")
    blocks_per_sm: float = msgspec.field(default=-1.0, name="blocks per SM")
    warps_per_sm: float = msgspec.field(default=-1.0, name="warps per SM")
    occupancy: float = msgspec.field(default=-1.0, name="est. achieved occupancy %")
    bytes: Int64 = -1
    #: bytes of a runtime copy call, as HIP writes them (``"size": "2560"``): the copy's bytes when it has none
    size: Int64 | str = -1
    #: a copy's direction in words (MTIA's ``dma_request``: ``"DEVICE_TO_HOST"``); any other value is ignored
    direction: Any = None
    collective: str | None = msgspec.field(default=None, name="Collective name")
    in_nelems: Int64 = msgspec.field(default=-1, name="In msg nelems")
    out_nelems: Int64 = msgspec.field(default=-1, name="Out msg nelems")
    group_size: Int64 = msgspec.field(default=0, name="Group size")
    group: str | None = msgspec.field(default=None, name="Process Group Name")
    dtype: str | None = None
    name: str | None = None
    sort_index: Int64 | None = None
    labels: str | None = None
    correlation_id: str | None = None
    memcpy_details: str | None = None
    #: a JAX (XLA/CUPTI) memset's details: ``"kind:unknown num_bytes:4 async:1"``
    memset_details: str | None = msgspec.field(default=None, name="Memset_details")
    kernel_details: str | None = None
    # torch.compile's Triton launcher op (a CPU op named like its kernel): the generated file, its hash, the backend
    kernel_file: Any = None
    kernel_hash: Any = None
    kernel_backend: Any = None
    # operator args (record_shapes) and allocator records (profile_memory): parsers/chrome/op_args.py
    input_dims: Any = msgspec.field(default=None, name="Input Dims")
    input_type: Any = msgspec.field(default=None, name="Input type")
    sequence_number: Int64 = msgspec.field(default=-1, name="Sequence number")
    fwd_thread_id: Int64 = msgspec.field(default=-1, name="Fwd thread id")
    total_allocated: Int64 | None = msgspec.field(default=None, name="Total Allocated")
    total_reserved: Int64 = msgspec.field(default=-1, name="Total Reserved")
    alloc_bytes: Int64 = msgspec.field(default=0, name="Bytes")
    device_id: Int64 = msgspec.field(default=-1, name="Device Id")
    device_type: Int64 = msgspec.field(default=-1, name="Device Type")


class Event(msgspec.Struct, gc=False):
    """One Chrome trace event. ``ts``/``dur`` are microseconds."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: Union[Int64, str] = 0  # noqa: UP007 - msgspec needs typing.Union on 3.10
    tid: Union[Int64, str] = 0  # noqa: UP007
    ts: float = math.nan  # NaN = missing (metadata events need none; other events without one are skipped)
    dur: float = 0.0
    id: Union[Int64, str, None] = None  # noqa: UP007
    id2: Any = None
    s: str = ""
    bp: str = ""
    args: Args | None = None


class ExactEvent(msgspec.Struct, gc=False):
    """The same event with ``ts``/``dur`` kept as their JSON text (empty when absent), for files whose timestamps
    are too large for a float: :func:`~gputop_trace.parsers.chrome.values.tokens_to_ns` reads them exactly."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: Union[Int64, str] = 0  # noqa: UP007
    tid: Union[Int64, str] = 0  # noqa: UP007
    ts: msgspec.Raw = msgspec.Raw()
    dur: msgspec.Raw = msgspec.Raw()
    id: Union[Int64, str, None] = None  # noqa: UP007
    id2: Any = None
    s: str = ""
    bp: str = ""
    args: Args | None = None


class CounterEvent(msgspec.Struct, gc=False):
    """A ``C`` event with its series values."""

    ph: str = ""
    name: str = ""
    pid: Union[Int64, str] = 0  # noqa: UP007
    tid: Union[Int64, str] = 0  # noqa: UP007
    ts: msgspec.Raw = msgspec.Raw(b"0")  # the text of the µs
    id: Union[Int64, str, None] = None  # noqa: UP007
    args: dict[str, Any] | None = None


DEC_EVENTS = msgspec.json.Decoder(list[Event])
DEC_EXACT = msgspec.json.Decoder(list[ExactEvent])
DEC_COUNTER = msgspec.json.Decoder(CounterEvent)
DEC_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
DEC_ONE = msgspec.json.Decoder(Event)
DEC_ANY = msgspec.json.Decoder()
