"""Names and args from traces are untrusted text: what reaches the terminal from every command holds no escape
sequence, control character, bidi override or zero-width character, and Rich markup in a name shows literally.

The hostile traces (tests/fixtures/hostile.py) put a payload in every kernel, range, thread, process and GPU name
and in args, as a Kineto trace, a directory of two ranks and an nsys SQLite export; the ncu command reads a real
CSV page with such a kernel name. The app is covered in test_terminal_safety_tui.py.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputop_trace.safe_text import clean, escape_for_csv, escape_for_json, is_clean, shell_join, shell_quote
from tests.cli_run import run_cli
from tests.conftest import CORPUS
from tests.fixtures.hostile import (
    ALL_IN_ONE_EXPECTED,
    EXPECTED,
    NCU_FUNCTION,
    NCU_FUNCTION_EXPECTED,
    NSYS_PAYLOADS,
    PAYLOADS,
    unsafe_characters,
    write_kineto,
    write_ncu_csv,
    write_nsys,
    write_ranks,
)

# ---------------------------------------------------------------------------------------------------------
# clean(): what each kind of hostile text becomes
# ---------------------------------------------------------------------------------------------------------
CLEAN_CASES = [
    ("plain", "void gemm<float>(float*, int)", "void gemm<float>(float*, int)"),
    ("csi colour and clear screen", "a\x1b[1;31mb\x1b[0m\x1b[2J\x1b[H", "ab"),
    ("osc 52 clipboard write (BEL)", "x\x1b]52;c;cHduZWQ=\x07y", "xy"),
    ("osc 52 clipboard write (ST)", "x\x1b]52;c;cHduZWQ=\x1b\\y", "xy"),
    ("osc 8 hyperlink", "\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\", "link"),
    ("window title", "\x1b]0;PWNED\x07t", "t"),
    ("unterminated osc eats to the end", "ok\x1b]52;c;AAAA", "ok"),
    ("dcs", "a\x1bP1$r0m\x1b\\b", "ab"),
    ("8-bit csi", "a\x9b31mb", "ab"),
    ("8-bit osc", "a\x9d0;title\x9cb", "ab"),
    ("lone esc", "a\x1bcb\x1b", "ab"),
    ("bel backspace del nul", "a\x07b\x08c\x7fd\x00e", "abcde"),
    ("newline tab cr become spaces", "a\nb\tc\rd\x0be\x0cf", "a b c d e f"),
    ("line and paragraph separators", "a\u2028b\u2029c\x85d", "a b c d"),
    ("bidi override and isolates", "abc\u202edcb\u2066x\u2069\u200f", "abcdcbx"),
    ("zero-width characters and bom", "z\u200bw\u200c\u200dj\u2060\ufeffz", "zwjz"),
    ("soft hyphen and tag characters", "a\u00adb\U000e0041\U000e007fc", "abc"),
    ("lone surrogate", "a\ud800b", "a\ufffdb"),
    ("non-ascii spaces", "a\u00a0b\u3000c", "a b c"),
    ("rich markup is left for Text() to show literally", "[bold red]x[/] [link=http://e.x]y[/link]",
     "[bold red]x[/] [link=http://e.x]y[/link]"),
    ("wide characters and emoji are kept", "🔥核心 ñ é", "🔥核心 ñ é"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "raw", "shown"), CLEAN_CASES, ids=[c[0] for c in CLEAN_CASES])
def test_clean(what: str, raw: str, shown: str) -> None:
    assert clean(raw) == shown
    assert unsafe_characters(clean(raw)) == []


def test_every_fixture_payload_is_shown_as_expected() -> None:
    for tag, raw in PAYLOADS.items():
        assert clean(raw).startswith(EXPECTED[tag]), tag


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=[]) | st.sampled_from("\x1b\x9b\x9d[]\x07")))
def test_clean_never_lets_anything_through_and_is_idempotent(text: str) -> None:
    out = clean(text)
    assert not unsafe_characters(out.replace("\n", " "))
    assert "\n" not in out and "\x1b" not in out
    assert clean(out) == out
    if text.isprintable():
        assert out == text  # ordinary names are untouched


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_json_escaping_is_exact_and_safe(text: str) -> None:
    doc = json.dumps({"name": text}, ensure_ascii=False)
    out = escape_for_json(doc)
    assert json.loads(out) == {"name": text}
    assert unsafe_characters(out) == []


def test_csv_escaping_is_visible() -> None:
    assert escape_for_csv("plain name, with comma") == "plain name, with comma"
    assert escape_for_csv("a\x1b[31mb\u202ec\n🔥") == "a\\x1b[31mb\\u202ec\\x0a🔥"
    assert escape_for_csv("\U000e0041") == "\\U000e0041"
    assert is_clean(escape_for_csv(PAYLOADS["osc52"] + PAYLOADS["bidi"] + PAYLOADS["surrogate"]))


def test_shell_quoting_shows_exactly_what_runs() -> None:
    argv = [
        "ncu",
        "-k",
        "regex:^" + NCU_FUNCTION + "$",
        "--",
        "python3",
        "-c",
        "print('x'); import os",
        "$(id)",
        "a b",
        "",
        "'\"",
        PAYLOADS["ctl"].replace("\x00", ""),
        PAYLOADS["osc52"],
        PAYLOADS["bidi"],
        "\udc9b",
    ]  # fmt: skip (no NUL: no program can receive one in an argument)
    shown = shell_join(argv)
    assert is_clean(shown)  # nothing in it acts on the terminal
    assert shell_quote("plain-arg_1.json") == "plain-arg_1.json"
    assert shell_quote("a b") == "'a b'"
    # pasted into bash, the shown line gives back exactly the bytes execvp passes
    out = subprocess.run(["bash", "-c", "printf '%s\\0' " + shown], capture_output=True, check=True).stdout
    assert out == b"".join(a.encode("utf-8", "surrogateescape") + b"\0" for a in argv)


# ---------------------------------------------------------------------------------------------------------
# every command, every output form, on the hostile traces
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hostile")
    return {
        "kineto": write_kineto(d / "hostile.json"),
        "ranks": write_ranks(d / "ranks"),
        "nsys": write_nsys(d / "hostile.sqlite"),
    }


COMMANDS = ["summary", "kernels", "gaps", "transfers", "ranges", "ranks", "critical-path"]


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _raw_payloads(source: str) -> dict[str, str]:
    return NSYS_PAYLOADS if source == "nsys" else PAYLOADS


@pytest.mark.parametrize("source", ["kineto", "ranks", "nsys"])
@pytest.mark.parametrize("command", COMMANDS)
def test_text_output_is_clean_and_shows_markup_literally(
    hostile: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str,
    source: str,
) -> None:  # fmt: skip
    monkeypatch.setenv("COLUMNS", "220")
    code, out, err = run_cli(capsys, command, str(hostile[source]))
    assert code == 0, err
    assert unsafe_characters(out + err) == []
    assert "\x1b" not in out + err
    flat = _squash(out)
    if command in ("kernels", "ranges"):  # tables that list every name
        for tag in _raw_payloads(source):
            want = EXPECTED[tag] if tag != "long" else "HlongLLLL"
            assert _squash(want) in flat, (tag, want)
    if command == "summary":
        assert _squash("NVIDIA H200 " + ALL_IN_ONE_EXPECTED.replace("Hsurrogate \ufffdx", "")) in flat
        for tag in ("markup", "link", "badmarkup", "wide"):
            assert _squash(EXPECTED[tag]) in flat, tag


@pytest.mark.parametrize("source", ["kineto", "ranks", "nsys"])
@pytest.mark.parametrize("command", COMMANDS)
def test_json_output_keeps_names_exact_with_nothing_raw_for_the_terminal(
    hostile: dict[str, Path], capsys: pytest.CaptureFixture[str], command: str, source: str
) -> None:
    code, out, err = run_cli(capsys, command, str(hostile[source]), "--json")
    assert code == 0, err
    assert unsafe_characters(out) == []
    doc = json.loads(out)
    if command == "kernels":
        names = {row["name"] for row in doc["kernels"]}
        assert names == set(_raw_payloads(source).values())
    if command == "ranges":
        names = {row["name"] for row in doc["ranges"]}
        assert set(_raw_payloads(source).values()) <= names


@pytest.mark.parametrize("source", ["kineto", "nsys"])
@pytest.mark.parametrize("command", ["kernels", "gaps", "transfers", "ranges", "ranks"])
def test_csv_output_writes_control_characters_as_visible_escapes(
    hostile: dict[str, Path], capsys: pytest.CaptureFixture[str], command: str, source: str
) -> None:
    code, out, err = run_cli(capsys, command, str(hostile[source]), "--csv")
    assert code == 0, err
    assert unsafe_characters(out) == []
    rows = list(csv.DictReader(io.StringIO(out)))
    if command == "kernels":
        assert {r["name"] for r in rows} == {escape_for_csv(v) for v in _raw_payloads(source).values()}


@pytest.mark.corpus
@pytest.mark.parametrize("form", [[], ["--json"]])
def test_ncu_on_a_csv_page_with_a_hostile_kernel_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, form: list[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    page = write_ncu_csv(CORPUS / "ncu" / "full_raw.csv", tmp_path / "hostile_raw.csv")
    code, out, err = run_cli(capsys, "ncu", str(page), *form)
    assert code == 0, err
    assert unsafe_characters(out + err) == []
    if form:
        (k,) = json.loads(out)["kernels"]
        assert k["name"] == NCU_FUNCTION
    else:
        assert NCU_FUNCTION_EXPECTED in out


def test_warnings_and_errors_that_quote_the_file_are_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": PAYLOADS["osc52"] + PAYLOADS["markup"], "dur": 1},
                                               {"ph": "X", "name": "ok", "ts": 1, "dur": 1}]}))  # fmt: skip
    code, out, err = run_cli(capsys, "summary", str(bad))
    assert code == 0 and "warning:" in out
    assert unsafe_characters(out + err) == []
    not_a_trace = tmp_path / "notes\x1b]52;c;AAAA\x07[bold]x[red].json"
    not_a_trace.write_bytes(b"\x1b]2;PWNED\x07 this is not json")
    code, out, err = run_cli(capsys, "summary", str(not_a_trace))
    assert code == 2
    assert unsafe_characters(err) == [] and "notes[bold]x[red].json" in _squash(err)
