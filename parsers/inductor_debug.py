"""torch.compile's debug output → :class:`~gputop_trace.model.inductor.InductorSource` records.

Reads a ``TORCH_COMPILE_DEBUG=1`` folder (``torch_compile_debug/run_*/torchinductor/<graph>/``) or any folder
holding ``output_code.py`` files (``TORCH_LOGS=output_code`` saved per graph). In each ``output_code.py``:

- the comment block above a kernel's definition (``NAME = async_compile.triton('NAME', …``):
  ``# kernel path: …/<hash>.py``, ``# Topologically Sorted Source Nodes: [input_2], Original ATen: [aten.gelu]``
  and ``# Source node to ATen node mapping:`` lines ``#   input_2 => add, erf, mul`` (the post-grad nodes);
- the same ``Topologically Sorted Source Nodes`` comment above each launch in ``call()`` (C++ kernels carry no
  block above their definition);

next to it, ``inductor_provenance_tracking_node_mappings.json`` (``…CodeToPost``: ``NAME:N`` → post-grad nodes)
and ``fx_graph_readable.py`` (``# File: model.py:201 in forward, code: …`` above each node: the source lines).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from gputop_trace.errors import TraceError
from gputop_trace.model.inductor import InductorSource

#: at most this many output_code.py files are read (a debug folder of a long run can hold thousands)
MAX_MODULES = 2000
#: a file larger than this is not read (bytes)
MAX_FILE_BYTES = 64 << 20

_DEFINE = re.compile(r"^(\w+) = async_compile\.\w+\(")
_KERNEL_PATH = re.compile(r"^#\s*kernel path:\s*(\S+)")
_SORTED = re.compile(r"#\s*Topologically Sorted Source Nodes:\s*\[(.*?)\],\s*Original ATen:\s*\[(.*?)\]")
_MAPPING_HEAD = re.compile(r"^#\s*Source node to ATen node mapping:")
_MAPPING = re.compile(r"^#\s+(\S*)\s*=>\s*(.+)$")
_PROVENANCE = re.compile(r"#\s*\[Provenance debug handles\]\s*(\S+)")
_CALL = re.compile(r"^\s+([\w.]+)\(")
_AOT_ID = re.compile(r"^#\s*AOT ID:\s*\[?'?([^'\]]+)")
_FILE = re.compile(r"^\s*#\s*File:\s*(\S+?):(\d+) in (\S+), code: (.*)$")
_NODE = re.compile(r"^\s+(\w+)(?:\s*:\s*\"[^\"]*\")?\s*=\s*\S")


def find_output_code(folder: str) -> list[str]:
    """Every ``output_code.py`` under ``folder``, sorted; a clear error when there is none or the folder is
    missing."""
    if not os.path.isdir(folder):
        raise TraceError(
            f"--inductor-dir {folder}: not a folder. Give the folder torch.compile wrote its debug output to "
            "(TORCH_COMPILE_DEBUG=1 writes ./torch_compile_debug; TORCH_COMPILE_DEBUG_DIR chooses another)."
        )
    found: list[str] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        if "output_code.py" in files:
            found.append(os.path.join(root, "output_code.py"))
            if len(found) >= MAX_MODULES:
                break
    if not found:
        raise TraceError(
            f"--inductor-dir {folder}: no output_code.py in it. Record with TORCH_COMPILE_DEBUG=1 (or "
            "TORCH_LOGS=output_code, saving each graph's code as output_code.py) and give that folder."
        )
    return sorted(found)


def read_inductor_dir(folder: str) -> list[InductorSource]:
    """The kernels of every generated module under ``folder`` (one record per kernel per module)."""
    out: list[InductorSource] = []
    for path in find_output_code(folder):
        out.extend(read_output_code(path))
    return out


@dataclass
class _Kernel:
    line: int
    kernel_hash: str = ""
    source_nodes: list[str] = field(default_factory=list)
    aten_ops: list[str] = field(default_factory=list)
    post_grad: list[str] = field(default_factory=list)


def _add(dst: list[str], items: list[str]) -> None:
    for x in items:
        if x and x not in dst:
            dst.append(x)


def _split_list(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def _read_text(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_output_code(path: str) -> list[InductorSource]:
    """The kernels one ``output_code.py`` defines or launches, with what its comments and the files next to it
    say about them."""
    text = _read_text(path)
    if text is None:
        return []
    lines = text.splitlines()
    graph = os.path.basename(os.path.dirname(path))
    kernels: dict[str, _Kernel] = {}
    block: list[str] = []
    pending: tuple[list[str], list[str]] | None = None  # the last "Topologically Sorted" comment in call()
    handles: dict[str, list[str]] = {}  # kernel → its provenance handles (NAME:N)
    for no, line in enumerate(lines, start=1):
        if no <= 3:
            m = _AOT_ID.match(line)
            if m:
                graph = m.group(1).strip()
        if line.startswith("#"):
            block.append(line)
            continue
        d = _DEFINE.match(line)
        if d:
            kernels[d.group(1)] = _from_block(block, no)
            block = []
            continue
        block = []
        stripped = line.strip()
        if stripped.startswith("#"):
            s = _SORTED.search(stripped)
            if s:
                pending = (_split_list(s.group(1)), _split_list(s.group(2)))
            p = _PROVENANCE.search(stripped)
            if p:
                name = p.group(1).rsplit(":", 1)[0]
                handles.setdefault(name, []).append(p.group(1))
            continue
        call = _CALL.match(line)
        if call:  # a launch (``NAME.run(…)``, ``NAME(…)``) or another call (``extern_kernels.addmm(…)``)
            k = kernels.get(call.group(1).removesuffix(".run"))
            if k is not None and pending is not None:
                _add(k.source_nodes, pending[0])
                _add(k.aten_ops, pending[1])
            pending = None
    folder = os.path.dirname(path)
    _add_provenance(folder, kernels, handles)
    node_lines = _node_source_lines(os.path.join(folder, "fx_graph_readable.py"))
    out = []
    for name, k in kernels.items():
        src: list[str] = []
        _add(src, [node_lines[n] for n in k.post_grad if n in node_lines])
        out.append(
            InductorSource(
                kernel=name,
                graph=graph,
                path=path,
                line=k.line,
                kernel_hash=k.kernel_hash,
                source_nodes=tuple(k.source_nodes),
                aten_ops=tuple(k.aten_ops),
                post_grad_nodes=tuple(k.post_grad),
                source_lines=tuple(src),
            )
        )
    return out


def _from_block(block: list[str], line: int) -> _Kernel:
    """A kernel from the comment block above its definition."""
    k = _Kernel(line=line)
    in_mapping = False
    for c in block:
        m = _KERNEL_PATH.match(c)
        if m:
            k.kernel_hash = os.path.splitext(os.path.basename(m.group(1)))[0]
            continue
        s = _SORTED.search(c)
        if s:
            _add(k.source_nodes, _split_list(s.group(1)))
            _add(k.aten_ops, _split_list(s.group(2)))
            continue
        if _MAPPING_HEAD.match(c):
            in_mapping = True
            continue
        mm = _MAPPING.match(c) if in_mapping else None
        if mm:
            _add(k.post_grad, _split_list(mm.group(2)))
        else:
            in_mapping = False
    return k


def _add_provenance(folder: str, kernels: dict[str, _Kernel], handles: dict[str, list[str]]) -> None:
    """Post-grad nodes from ``inductor_provenance_tracking_node_mappings.json`` (``…CodeToPost``)."""
    text = _read_text(os.path.join(folder, "inductor_provenance_tracking_node_mappings.json"))
    if not text:
        return
    try:
        doc = json.loads(text)
    except ValueError:
        return
    if not isinstance(doc, dict):
        return
    for key, table in doc.items():
        if not (isinstance(key, str) and key.endswith("CodeToPost") and isinstance(table, dict)):
            continue
        for handle, nodes in table.items():
            name = str(handle).rsplit(":", 1)[0]
            if name in kernels and isinstance(nodes, list):
                _add(kernels[name].post_grad, [str(n) for n in nodes])
    post_to_pre = doc.get("postToPre")
    if isinstance(post_to_pre, dict):  # the pre-grad (source) nodes of kernels whose comments name none
        for k in kernels.values():
            if not k.source_nodes:
                for n in k.post_grad:
                    pre = post_to_pre.get(n)
                    if isinstance(pre, list):
                        _add(k.source_nodes, [str(x) for x in pre])


def _node_source_lines(path: str) -> dict[str, str]:
    """Graph node → the user's line it comes from (``model.py:201 in forward: x = self.a2(self.a(x))``), from the
    ``# File:`` comments of ``fx_graph_readable.py``."""
    text = _read_text(path)
    if not text:
        return {}
    out: dict[str, str] = {}
    where = ""
    for line in text.splitlines():
        f = _FILE.match(line)
        if f:
            where = f"{os.path.basename(f.group(1))}:{f.group(2)} in {f.group(3)}: {f.group(4).strip()}"
            continue
        n = _NODE.match(line)
        if n and where and not line.lstrip().startswith(("def ", "return", "#")):
            out.setdefault(n.group(1), where)
    return out
