"""The columnar cache: exact round trip on real traces, staleness, corruption, concurrent processes, size bound,
and the ways to bypass it. Every test uses its own cache folder (never the user's)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gputop_trace.load import cache, cache_entry, cache_keys
from gputop_trace.load.loader import load_paths
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.tables import CounterSeries, GpuInfo, TraceMeta
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.chrome import loader as chrome
from tests.conftest import SAMPLES, corpus_file
from tests.trace_compare import assert_traces_equal

OPTIONS = {"format": "chrome", "default_rank": 0}
CHROME_FILES = [
    "kineto/h200_gpt_train_small.json.gz",
    "kineto/h200_inductor_compiled.json.gz",
    "kineto/h200_ddp_2gpu/rank0.pt.trace.json.gz",
    "kineto/h200_ddp_2gpu/rank1.pt.trace.json.gz",
    "jax/h200_jax_mlp.perfetto_trace.json.gz",
]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("GPUTOP_TRACE_CACHE_DIR", str(root))
    monkeypatch.setenv("GPUTOP_TRACE_CACHE_MIN", "0")
    monkeypatch.delenv("GPUTOP_TRACE_NO_CACHE", raising=False)
    monkeypatch.delenv("GPUTOP_TRACE_CACHE_SIZE", raising=False)
    return root


def _load(path: str, **kw: Any) -> tuple[Trace, cache.CacheResult]:
    res = cache.CacheResult()
    t = cache.load_cached(path, OPTIONS, lambda: chrome.load(path), result=res, **kw)
    return t, res


def _entries(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []


def _copy_trace(tmp_path: Path, name: str = "trace.json.gz") -> Path:
    dst = tmp_path / name
    dst.write_bytes(Path(corpus_file(CHROME_FILES[0])).read_bytes())
    return dst


# ---------------------------------------------------------------------------------------------------------
# round trip
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.corpus
@pytest.mark.parametrize("rel", CHROME_FILES)
def test_reopened_trace_is_exactly_the_parsed_one(rel: str, cache_dir: Path) -> None:
    path = corpus_file(rel)
    first, res1 = _load(path)
    assert res1.written and not res1.hit
    again, res2 = _load(path)
    assert res2.hit
    assert_traces_equal(again, first)
    assert_traces_equal(again, chrome.load(path))
    # columns are memory-mapped from the cache and read-only, like a parsed trace's
    assert not again.start_ns.flags.writeable
    assert isinstance(again.start_ns.base, np.memmap) or again.start_ns.base is not None
    assert again.name_ids  # derived properties work on the reopened trace
    assert again.lane_rows.shape == (len(again.lanes),)


def test_bundled_samples_round_trip() -> None:
    for name in ("h200_train_step.json.gz", "h200_compiled.json.gz"):
        path = str(SAMPLES / name)
        first, _ = _load(path)
        again, res = _load(path)
        assert res.hit
        assert_traces_equal(again, first)


@pytest.mark.corpus
def test_directory_of_ranks_is_cached_file_by_file(cache_dir: Path) -> None:
    folder = corpus_file("kineto/h200_ddp_2gpu")
    merged = load_paths([folder])
    assert len(_entries(cache_dir)) == 2
    stamps = {p.name: (p / cache_entry.HEADER).stat().st_mtime_ns for p in _entries(cache_dir)}
    again = load_paths([folder])
    assert_traces_equal(again, merged)
    assert {p.name: (p / cache_entry.HEADER).stat().st_mtime_ns for p in _entries(cache_dir)} == stamps
    assert_traces_equal(again, load_paths([folder], use_cache=False))


def test_metadata_values_keep_their_exact_types(tmp_path: Path) -> None:
    """Tuples, int dict keys, enums, NaN/inf, numpy scalars and nested dicts survive the JSON side."""
    path = str(SAMPLES / "h200_compiled.json.gz")
    base = chrome.load(path)
    meta = dataclasses.replace(
        base.meta,
        rank_shift_ns={0: 0, 3: -1250},
        gpus=(GpuInfo(device=0, name="H200", sm_count=132, memory_bandwidth=4.8e12, properties={"x": [1, 2.5]}),),
        properties={
            "nan": math.nan,
            "inf": -math.inf,
            "tuple": (1, "a", (2.5,)),
            "int keys": {1: "a", 2: None},
            "kind": Kind.KERNEL,
            "np": np.int32(7),
            "text": '{"$tuple": [1]}',
            "$dict": True,
        },
    )
    counters = (
        CounterSeries("mem", np.array([1, 2], dtype=np.int64), np.array([0.5, math.nan]), rank=1, pid=4),
        CounterSeries("empty", np.zeros(0, dtype=np.int64), np.zeros(0), rank=0, pid=-1),
    )
    t = dataclasses.replace(base, meta=meta, counters=counters)
    res = cache.CacheResult()
    cache.load_cached(path, OPTIONS, lambda: t, result=res)
    again, res2 = _load(path)
    assert res.written and res2.hit
    assert_traces_equal(again, t)
    assert type(again.meta.properties["kind"]) is Kind
    assert type(again.meta.properties["np"]) is np.int32
    assert again.lanes[0].kind in LaneKind


def test_empty_trace_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text('{"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}}]}')
    first, _ = _load(str(path))
    again, res = _load(str(path))
    assert res.hit and len(again) == 0
    assert_traces_equal(again, first)


# ---------------------------------------------------------------------------------------------------------
# staleness and corruption: rebuilt, never trusted
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.corpus
def test_changed_source_is_parsed_again_and_old_entry_removed(tmp_path: Path, cache_dir: Path) -> None:
    src = _copy_trace(tmp_path)
    old, _ = _load(str(src))
    (old_entry,) = _entries(cache_dir)
    # same size, different content and mtime: a rewritten trace
    doc = '{"traceEvents": [{"ph": "X", "name": "only", "pid": 1, "tid": 1, "ts": 5, "dur": 2}]}'
    src.write_bytes(doc.encode().ljust(src.stat().st_size))
    os.utime(src, ns=(time.time_ns(), old_entry.stat().st_mtime_ns + 10_000_000_000))
    new, res = _load(str(src))
    assert not res.hit and res.written
    assert len(new) == 1 and new.names == ("only",)
    assert [p.name for p in _entries(cache_dir)] != [old_entry.name]
    assert len(_entries(cache_dir)) == 1
    assert len(old) > 1000


@pytest.mark.corpus
def test_touched_source_is_not_trusted(tmp_path: Path) -> None:
    src = _copy_trace(tmp_path)
    _load(str(src))
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    _, res = _load(str(src))
    assert not res.hit and res.written


@pytest.mark.corpus
def test_other_load_options_are_other_entries(tmp_path: Path, cache_dir: Path) -> None:
    src = str(_copy_trace(tmp_path))
    cache.load_cached(src, {"format": "chrome", "default_rank": 0}, lambda: chrome.load(src))
    res = cache.CacheResult()
    t = cache.load_cached(
        src, {"format": "chrome", "default_rank": 5}, lambda: chrome.load(src, default_rank=5), result=res
    )
    assert not res.hit and t.meta.ranks == (5,)
    assert len(_entries(cache_dir)) == 2


def _corrupt_and_reload(tmp_path: Path, cache_dir: Path, damage: Any) -> tuple[Trace, cache.CacheResult, Trace]:
    src = str(_copy_trace(tmp_path))
    fresh, _ = _load(src)
    (entry,) = _entries(cache_dir)
    damage(entry)
    again, res = _load(src)
    return again, res, fresh


@pytest.mark.corpus
def test_truncated_column_file_is_rebuilt(tmp_path: Path, cache_dir: Path) -> None:
    def truncate(entry: Path) -> None:
        col = entry / "start_ns.npy"
        col.write_bytes(col.read_bytes()[:-8])

    again, res, fresh = _corrupt_and_reload(tmp_path, cache_dir, truncate)
    assert not res.hit and res.written
    assert "start_ns.npy" in res.rebuilt_because
    assert_traces_equal(again, fresh)
    reopened, res2 = _load(str(tmp_path / "trace.json.gz"))
    assert res2.hit
    assert_traces_equal(reopened, fresh)


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("what", "damage", "reason"),
    [
        ("flipped byte", lambda e: _flip_last_byte(e / "dur_ns.npy"), "checksum"),
        ("missing column", lambda e: (e / "kernels" / "grid.npy").unlink(), "No such file"),
        ("garbage header", lambda e: (e / cache_entry.HEADER).write_text("{not json"), "header"),
        ("empty header", lambda e: (e / cache_entry.HEADER).write_bytes(b""), "header"),
        ("other dtype", lambda e: _resave(e / "lane.npy", np.int64), "lane.npy"),
        ("header lies about size", lambda e: _edit_header(e, "n_events", 3), "events"),
        ("name id out of range", lambda e: _replace_column(e, "name.npy", lambda a: a + 10**6), "names"),
        ("lane offsets", lambda e: _replace_column(e, "lane_offsets.npy", lambda a: a[::-1].copy()), "lane"),
    ],
)
def test_damaged_entry_is_rebuilt(tmp_path: Path, cache_dir: Path, what: str, damage: Any, reason: str) -> None:
    again, res, fresh = _corrupt_and_reload(tmp_path, cache_dir, damage)
    assert not res.hit, what
    assert reason.lower() in res.rebuilt_because.lower(), res.rebuilt_because
    assert_traces_equal(again, fresh)
    _, res2 = _load(str(tmp_path / "trace.json.gz"))
    assert res2.hit, f"{what}: the damaged entry was not replaced"


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def _resave(path: Path, dtype: Any) -> None:
    a = np.load(path)
    np.save(path, a.astype(dtype))


def _edit_header(entry: Path, key: str, value: Any) -> None:
    h = json.loads((entry / cache_entry.HEADER).read_text())
    h[key] = value
    (entry / cache_entry.HEADER).write_text(json.dumps(h))


def _replace_column(entry: Path, rel: str, change: Any) -> None:
    """Rewrite a column and fix up its size and checksum in the header (a consistent-looking lie)."""
    import zlib

    a = change(np.load(entry / rel))
    np.save(entry / rel, a)
    h = json.loads((entry / cache_entry.HEADER).read_text())
    h["columns"][rel].update(bytes=(entry / rel).stat().st_size, crc32=zlib.crc32(np.ascontiguousarray(a).data))
    (entry / cache_entry.HEADER).write_text(json.dumps(h))


# ---------------------------------------------------------------------------------------------------------
# concurrency: real processes
# ---------------------------------------------------------------------------------------------------------
_WORKER = textwrap.dedent(
    """
    import hashlib, json, os, sys, time
    from gputop_trace.load import cache
    from gputop_trace.parsers.chrome import loader as chrome
    path, go, out = sys.argv[1], sys.argv[2], sys.argv[3]
    while not os.path.exists(go):
        time.sleep(0.001)
    results = []
    for _ in range(3):
        res = cache.CacheResult()
        t = cache.load_cached(path, {"format": "chrome", "default_rank": 0}, lambda: chrome.load(path), result=res)
        h = hashlib.sha256()
        for name in ("start_ns", "dur_ns", "kind", "lane", "name", "depth", "corr", "ext", "lane_offsets"):
            h.update(getattr(t, name).tobytes())
        for table in (t.kernels, t.copies, t.flows):
            for f in table.__dataclass_fields__:
                h.update(getattr(table, f).tobytes())
        h.update(repr((t.names, t.lanes, t.meta)).encode())
        results.append({"hit": res.hit, "written": res.written, "digest": h.hexdigest()})
    json.dump(results, open(out, "w"))
    """
)


@pytest.mark.corpus
def test_processes_opening_one_trace_at_once_all_get_the_same_model(tmp_path: Path, cache_dir: Path) -> None:
    src = _copy_trace(tmp_path)
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    go = tmp_path / "go"
    env = {**os.environ, "GPUTOP_TRACE_CACHE_DIR": str(cache_dir), "GPUTOP_TRACE_CACHE_MIN": "0"}
    outs = [tmp_path / f"out{i}.json" for i in range(4)]
    procs = [
        subprocess.Popen([sys.executable, str(script), str(src), str(go), str(o)], env=env, cwd=os.getcwd())
        for o in outs
    ]
    time.sleep(1.5)  # let every worker import and wait at the start line
    go.touch()
    for p in procs:
        assert p.wait(timeout=120) == 0
    results = [r for o in outs for r in json.loads(o.read_text())]
    expected = json.loads(_digest_in_subprocess(src, tmp_path, env))
    assert {r["digest"] for r in results} == {expected}
    assert any(r["written"] for r in results)
    assert sum(r["hit"] for r in results) >= 4  # every worker's later loads reopen the cache
    assert len(_entries(cache_dir)) == 1
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(cache_entry.TMP_PREFIX)]


def _digest_in_subprocess(src: Path, tmp_path: Path, env: dict[str, str]) -> str:
    out = tmp_path / "fresh.json"
    go = tmp_path / "go-fresh"
    go.touch()
    script = tmp_path / "worker.py"
    env = {**env, "GPUTOP_TRACE_CACHE_DIR": str(tmp_path / "other-cache")}
    subprocess.run([sys.executable, str(script), str(src), str(go), str(out)], env=env, check=True, timeout=120)
    return json.dumps(json.loads(out.read_text())[0]["digest"])


# ---------------------------------------------------------------------------------------------------------
# size bound, bypass, settings
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.corpus
def test_least_recently_used_entries_are_evicted_beyond_the_limit(tmp_path: Path, cache_dir: Path) -> None:
    paths = [str(_copy_trace(tmp_path, f"t{i}.json.gz")) for i in range(3)]
    for i, p in enumerate(paths):
        _load(p)
        entry = next(e for e in _entries(cache_dir) if e.name.startswith(cache_keys.SourceKey.of(p, OPTIONS).family))
        os.utime(entry, (1_000_000 + i, 1_000_000 + i))
    _load(paths[0])  # a hit makes t0 the most recently used
    sizes = {e.name: cache._entry_bytes(str(e)) for e in _entries(cache_dir)}
    removed = cache.evict(cache_dir, sum(sizes.values()) - 1)
    assert removed == [cache_keys.SourceKey.of(paths[1], OPTIONS).name]
    assert len(_entries(cache_dir)) == 2


@pytest.mark.corpus
def test_writing_a_new_entry_keeps_the_cache_under_its_limit(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = str(_copy_trace(tmp_path, "a.json.gz")), str(_copy_trace(tmp_path, "b.json.gz"))
    _load(a)
    (only,) = _entries(cache_dir)
    monkeypatch.setenv("GPUTOP_TRACE_CACHE_SIZE", str(cache._entry_bytes(str(only)) + 1000))
    _load(b)
    assert [e.name for e in _entries(cache_dir)] == [cache_keys.SourceKey.of(b, OPTIONS).name]


def test_stale_temporary_folders_are_cleared(cache_dir: Path) -> None:
    cache_dir.mkdir(parents=True)
    old = cache_dir / f"{cache_entry.TMP_PREFIX}dead-writer"
    old.mkdir()
    (old / "start_ns.npy").write_bytes(b"x")
    os.utime(old, (1_000_000, 1_000_000))
    fresh = cache_dir / f"{cache_entry.TMP_PREFIX}live-writer"
    fresh.mkdir()
    cache.evict(cache_dir, 1 << 30)
    assert not old.exists() and fresh.exists()


@pytest.mark.corpus
def test_bypassing_the_cache(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = corpus_file(CHROME_FILES[0])
    load_paths([path], use_cache=False)
    assert not cache_dir.exists()
    monkeypatch.setenv("GPUTOP_TRACE_NO_CACHE", "1")
    load_paths([path])
    assert not cache_dir.exists()
    monkeypatch.delenv("GPUTOP_TRACE_NO_CACHE")
    load_paths([path])
    assert len(_entries(cache_dir)) == 1


@pytest.mark.corpus
def test_small_traces_are_not_cached_by_default(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUTOP_TRACE_CACHE_MIN")
    load_paths([corpus_file(CHROME_FILES[0])])  # 138 kB, below the 16 MiB default
    assert not cache_dir.exists()


@pytest.mark.corpus
def test_cache_lives_in_xdg_cache_home_never_next_to_the_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUTOP_TRACE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "traces").mkdir()
    src = _copy_trace(tmp_path / "traces")
    before = sorted(os.listdir(src.parent))
    load_paths([str(src)])
    assert sorted(os.listdir(src.parent)) == before
    assert len(_entries(tmp_path / "xdg" / "gputop-trace")) == 1
    assert cache_keys.cache_root() == tmp_path / "xdg" / "gputop-trace"


@pytest.mark.corpus
def test_no_cache_option_reaches_the_loader(tmp_path: Path, cache_dir: Path) -> None:
    from gputop_trace.cli.common import load
    from gputop_trace.cli.main import build_parser

    src = str(_copy_trace(tmp_path))
    args = build_parser().parse_args(["summary", "--no-cache", src])
    assert args.no_cache is True
    load(args)
    assert not cache_dir.exists()
    load(build_parser().parse_args(["summary", src]))
    assert len(_entries(cache_dir)) == 1


def test_size_settings_parse() -> None:
    assert cache_keys.parse_size("4G") == 4 << 30
    assert cache_keys.parse_size("500M") == 500 << 20
    assert cache_keys.parse_size("1.5k") == 1536
    assert cache_keys.parse_size("123") == 123
    with pytest.raises(ValueError):
        cache_keys.parse_size("lots")


@pytest.mark.corpus
def test_unwritable_cache_folder_falls_back_to_parsing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GPUTOP_TRACE_CACHE_DIR", str(blocker / "cache"))
    src = str(_copy_trace(tmp_path))
    t, res = _load(src)
    assert len(t) > 1000 and not res.written


def _hash(t: Trace) -> str:
    return hashlib.sha256(t.start_ns.tobytes()).hexdigest()


@pytest.mark.corpus
def test_meta_type_is_unchanged_by_a_cache_hit(tmp_path: Path) -> None:
    src = str(_copy_trace(tmp_path))
    first, _ = _load(src)
    again, _ = _load(src)
    assert isinstance(again.meta, TraceMeta) and _hash(again) == _hash(first)


NSYS_FILES = (
    sorted(p.name for p in (Path(corpus_file("nsys"))).glob("*.sqlite")) if Path(corpus_file("nsys")).is_dir() else []
)


@pytest.mark.corpus
@pytest.mark.parametrize("name", NSYS_FILES or ["(no nsys corpus)"])
def test_nsys_exports_round_trip_through_the_cache(name: str, cache_dir: Path) -> None:
    """Every corpus nsys export (all 20 load as timelines) reopens from the cache as exactly the parsed model."""
    path = corpus_file(f"nsys/{name}")
    parsed = load_paths([path], use_cache=False)
    load_paths([path])
    assert len(_entries(cache_dir)) == 1, "the model could not be stored (a metadata value of an unknown type?)"
    assert_traces_equal(load_paths([path]), parsed)


def test_the_code_fingerprint_covers_every_parser_and_model_module_in_sub_folders_too() -> None:
    """An edit to parsers/chrome/*.py or parsers/nsys/*.py must make older cache entries stale."""
    from gputop_trace.load.cache_keys import fingerprint_sources
    from tests.paths import ROOT

    hashed = {path.resolve() for _, path in fingerprint_sources()}
    expected = {p.resolve() for p in (ROOT / "parsers").rglob("*.py")}
    expected |= {p.resolve() for p in (ROOT / "gputop_trace" / "model").glob("*.py")}
    expected.add((ROOT / "gputop_trace" / "load" / "loader.py").resolve())
    assert any(p.parent.name == "chrome" for p in expected) and any(p.parent.name == "nsys" for p in expected)
    assert expected <= hashed, sorted(str(p) for p in expected - hashed)


@pytest.mark.corpus
def test_a_small_gzip_holding_a_large_trace_is_cached(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The threshold is on what the file holds: the MTIA trace is a 3 MB gzip of 87 MB of JSON (seconds to parse)."""
    monkeypatch.delenv("GPUTOP_TRACE_CACHE_MIN")
    path = corpus_file("external/mtia_trace_single_rank/mtia_rank_0.json.gz")
    assert os.path.getsize(path) < 16 << 20  # below the default threshold on disk
    first = load_paths([path])
    assert len(_entries(cache_dir)) == 1
    again = load_paths([path])
    assert len(again) == len(first) and np.array_equal(again.start_ns, first.start_ns)
