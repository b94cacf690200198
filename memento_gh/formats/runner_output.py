"""What a verify command's output says, read from its text: the one line that sums a run up
(``summary``), the lines worth keeping of it (``excerpt``), the lines every run of a runner
prints whatever went wrong (``is_boilerplate``), and a runner that could not even start
(``runner_missing``). Text in, values out.

Runners known by their output: pytest, unittest, doctest, cargo test, go test, eslint's
stylish report, and whatever prints ``path:line`` before its message (tsc, mypy, ruff, gcc,
go build, eslint's unix format). Anything else is read for its first line that names an
error, or, for a run that passed, its last line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

#: Lines an excerpt keeps, and characters of each (an ellipsis marks a cut).
EXCERPT_LINES = 8
LINE_CHARS = 300
SUMMARY_CHARS = 300

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# Lines that carry nothing but their shape: rules (`=====`, `*****`, `-----`), Python's
# `^^^^`/`~~^~~` markers under an expression, rustc's `|` gutters, progress dots (`F.E`,
# `.. [100%]`).
_RULE = re.compile(r"([-=_*#+.~])\1{2,}")
_MARKERS = re.compile(r"[\^~| ]*[\^~|][\^~| ]*")
_PROGRESS = re.compile(r"(?:\S+\.py )?[.FEsxX]*[.FE][.FEsxX]*(?: +\[ *\d+%\])?")
_TITLED_RULE = re.compile(r"([-=_*!])\1{2,} (?P<title>.+?) \1{2,}")

_BOILERPLATE = re.compile(
    "|".join(
        (
            # doctest
            r"Failed example:",
            r"Expected:",
            r"Expected nothing",
            r"Got:",
            r"Got nothing",
            r"Exception raised:",
            r"\d+ items? had failures:",
            r"\d+ of +\d+ in \S+",
            r"\*\*\*Test Failed\*\*\* \d+ failures?\.",
            # unittest and Python
            r"Traceback \(most recent call last\):",
            r"Traceback:",
            r"Ran \d+ tests? in [\d.]+s",
            r"OK(?: \(.*\))?",
            r"FAILED \(\w+(?: \w+)?=\d+(?:, \w+(?: \w+)?=\d+)*\)",
            r"NO TESTS RAN",
            # pytest
            r"(?:[=_!-]+ )?(?:short test summary info|FAILURES|ERRORS|test session starts|"
            r"warnings summary|PASSES|Interrupted: .*)(?: [=_!-]+)?",
            r"(?:=+ )?(?:\d+ (?:passed|failed|skipped|deselected|xfailed|xpassed|errors?|"
            r"warnings?|rerun)(?:, )?)+(?: in [\d.]+s(?: \(.*\))?)?(?: =+)?",
            r"collect(?:ed|ing) .*",
            r"Hint: make sure your test modules/packages have valid Python names\.",
            # cargo
            r"running \d+ tests?",
            r"failures:",
            r"test result: \w+\. .*",
            r"error: test failed, to rerun pass .*",
            r"error: could not compile .*",
            r"warning: build failed, waiting for other jobs to finish\.\.\.",
            r"note: (?:run with `RUST_BACKTRACE|Some details are omitted).*",
            r"stack backtrace:",
            r"For more information about this error, try `rustc --explain \w+`\.",
            # go test
            r"FAIL",
            r"PASS",
            r"exit status \d+",
            r"FAIL\s+\S+\s+(?:[\d.]+s|\[build failed\]|\(cached\))",
            r"ok\s+\S+\s+(?:[\d.]+s|\(cached\)).*",
            # eslint, tsc, mypy, npm, make
            r"✖ \d+ problems? \(.*\)",
            r"Found \d+ errors?\b.*",
            r"npm (?:ERR!|error) .*",
            r"make(?:\[\d+\])?: \*\*\* .*",
        )
    )
)

# Lines that name an error, then lines with an error word: the best and second best of a
# run no runner reader knows.
_NAMED_ERROR = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\berror(?:\[\w+\])?:|\bError:|^E\s|\bpanicked at\b"
)
_ERROR_WORD = re.compile(
    r"(?i)\b(?:error|fatal|panic|failed|failure|cannot|can't|no such|not found|undefined|"
    r"denied|refused|missing|invalid|unexpected|no module named)\b"
)


class Reading(NamedTuple):
    """What one reader found: the summary, and where a failure's excerpt starts (the line
    index ``anchor``, with ``context`` kept lines before it)."""

    summary: str
    anchor: int | None = None
    context: int = 0


Reader = Callable[[Sequence[str], bool], "Reading | None"]


# -- the lines ---------------------------------------------------------------------------------


def clean_lines(output: str) -> list[str]:
    """The output's lines without colour codes or control characters, trailing spaces
    trimmed, indentation kept (``\\r`` alone, as progress bars use it, breaks a line too)."""
    plain = _ESCAPES.sub("", output) if "\x1b" in output else output
    return [_CONTROL.sub("", line).rstrip() for line in plain.splitlines()]


def is_noise(line: str) -> bool:
    """A line that carries nothing but its shape: blank, a rule, markers, progress dots."""
    text = line.strip()
    if not text:
        return True
    if _RULE.fullmatch(text) or _MARKERS.fullmatch(text) or _PROGRESS.fullmatch(text):
        return True
    titled = _TITLED_RULE.fullmatch(text)
    return titled is not None and bool(_BOILERPLATE.fullmatch(titled.group("title")))


def is_boilerplate(line: str) -> bool:
    """A line a runner prints whatever failed (``Failed example:``, ``FAILED (failures=1)``,
    ``1 failed, 2 passed in 0.42s``, ``test result: FAILED. ...``, a rule): never the error
    itself, so never the signature of one."""
    text = " ".join(line.split())
    return not text or bool(
        _RULE.fullmatch(text) or _TITLED_RULE.fullmatch(text) or _BOILERPLATE.fullmatch(text)
    )


# -- what the output says ------------------------------------------------------------------------


def read(output: str, exit_code: int | None = 1) -> Reading:
    """The reading of the first runner that knows this output, else the generic one.
    ``exit_code`` 0 reads a run that passed; anything else (None: timed out) one that failed."""
    lines = clean_lines(output)
    failed = exit_code != 0
    for reader in READERS:
        found = reader(lines, failed)
        if found is not None:
            return found._replace(summary=_one_line(found.summary, SUMMARY_CHARS))
    found = _generic(lines, failed)
    return found._replace(summary=_one_line(found.summary, SUMMARY_CHARS))


def summary(output: str, exit_code: int | None = 1) -> str:
    """The one informative line of a run: its first failure as the runner reports it, or,
    for a run that passed, the runner's result line; "" without output."""
    return read(output, exit_code).summary


def runner_summary(output: str, exit_code: int | None = 1) -> str | None:
    """``summary`` when a runner this module knows printed ``output``, else None."""
    lines = clean_lines(output)
    for reader in READERS:
        found = reader(lines, exit_code != 0)
        if found is not None:
            return _one_line(found.summary, SUMMARY_CHARS)
    return None


def excerpt(
    output: str, exit_code: int | None = 1, limit: int = EXCERPT_LINES, width: int = LINE_CHARS
) -> str:
    """The lines of ``output`` worth keeping, at most ``limit``: for a failure, from where
    its runner reports it (doctest's ``File ...``, pytest's failing line, unittest's
    ``FAIL:``), else the first ones; for a run that passed, the last ones. Rules, markers and
    progress dots are left out; indentation is kept (less what all the lines share)."""
    lines = clean_lines(output)
    kept = [index for index, line in enumerate(lines) if not is_noise(line)]
    reading = read(output, exit_code)
    if exit_code == 0:
        chosen = kept[-limit:]
    elif reading.anchor is None:
        chosen = kept[:limit]
    else:
        start = next((n for n, index in enumerate(kept) if index >= reading.anchor), len(kept))
        chosen = kept[max(0, start - reading.context) :][:limit]
    shown = [lines[index] for index in chosen]
    margin = min((len(line) - len(line.lstrip()) for line in shown), default=0)
    return "\n".join(_cut(line[margin:], width) for line in shown)


def runner_missing(output: str, command: str, exit_code: int | None, fixed: Iterable[str]) -> bool:
    """The verify command could not start what it runs (``No module named pytest`` for
    ``python -m pytest``, a shell's ``not found``), and the change that fixed it did not
    create that: the environment was at fault, not the code."""
    paths = [path.replace("\\", "/") for path in fixed]
    words = _command_words(command)
    for name in _missing_names(output, exit_code):
        if name in words and not any(_creates(path, name) for path in paths):
            return True
    return False


def _creates(path: str, name: str) -> bool:
    """Whether writing ``path`` makes the module or program ``name`` exist."""
    plain = name.removeprefix("./")
    module = plain.replace(".", "/")
    return (
        path in (plain, f"{module}.py")
        or path.endswith(f"/{plain}")
        or path.startswith(f"{module}/")
    )


_NO_MODULE = re.compile(r"No module named '?(?P<name>[\w.]+)'?")
_NOT_FOUND = re.compile(r"(?P<name>[^\s:]+): (?:command )?not found")


def _missing_names(output: str, exit_code: int | None) -> list[str]:
    names = [found.group("name").split(".")[0] for found in _NO_MODULE.finditer(output)]
    if exit_code in (126, 127):
        names += [found.group("name") for found in _NOT_FOUND.finditer(output)]
    return names


def _command_words(command: str) -> set[str]:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return {word.rsplit("/", 1)[-1] for word in words} | set(words)


# -- the readers --------------------------------------------------------------------------------

_DOCTEST_FILE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)')
_DOCTEST_HEADS = ("Failed example:", "Expected:", "Got:", "Exception raised:")


def _doctest(lines: Sequence[str], failed: bool) -> Reading | None:
    starts = [
        index
        for index, line in enumerate(lines)
        if _DOCTEST_FILE.fullmatch(line) and _next_text(lines, index) == "Failed example:"
    ]
    if not starts:
        return None
    first = starts[0]
    found = _DOCTEST_FILE.fullmatch(lines[first])
    assert found is not None
    blocks = _doctest_blocks(lines, first + 1)
    example = _first(blocks.get("Failed example:"))
    if "Exception raised:" in blocks:
        raised = [line for line in blocks["Exception raised:"] if line and line[0] != " "]
        detail = f"{example} raised {raised[-1] if raised else 'an exception'}"
    else:
        expected = _first(blocks.get("Expected:"), "nothing")
        got = _first(blocks.get("Got:"), "nothing")
        detail = f"{example}: expected {expected}, got {got}"
    where = f"{found.group('path')}:{found.group('line')} in {found.group('name')}"
    return Reading(f"{where} — {detail}{_more(len(starts))}", first)


def _doctest_blocks(lines: Sequence[str], start: int) -> dict[str, list[str]]:
    """The example's sections: each heading's indented lines, less four spaces."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines[start:]:
        if _RULE.fullmatch(line.strip()) or _DOCTEST_FILE.fullmatch(line):
            break
        if line in _DOCTEST_HEADS:
            current = blocks.setdefault(line, [])
        elif line in ("Expected nothing", "Got nothing"):
            current = blocks.setdefault(line.split()[0] + ":", [])
        elif current is not None and line.startswith("    "):
            current.append(line[4:])
    return blocks


def _first(block: list[str] | None, default: str = "?") -> str:
    texts = [line.strip() for line in block or () if line.strip()]
    if not texts:
        return default
    return texts[0] + (" …" if len(texts) > 1 else "")


_PYTEST_SHORT = re.compile(r"(?P<kind>FAILED|ERROR) (?P<node>\S*\.py\b.*?)(?: - (?P<reason>.*))?")
_PYTEST_E = re.compile(r"E {2,}(?P<text>\S.*)")
_PYTEST_WHERE = re.compile(r"(?P<where>\S+\.py:\d+): (?P<kind>\w+)")
_PYTEST_RESULT = re.compile(
    r"(?:=+ )?(?P<result>\d+ (?:passed|failed|skipped|deselected|xfailed|xpassed|errors?|"
    r"warnings?)(?:, \d+ \w+)* in [\d.]+s(?: \([^)]*\))?)(?: =+)?"
)


def _pytest(lines: Sequence[str], failed: bool) -> Reading | None:
    short = [index for index, line in enumerate(lines) if _PYTEST_SHORT.fullmatch(line.strip())]
    errors = [index for index, line in enumerate(lines) if _PYTEST_E.fullmatch(line)]
    if not failed:
        results = [_PYTEST_RESULT.fullmatch(line.strip()) for line in lines]
        found = next((result for result in reversed(results) if result), None)
        return None if found is None else Reading(found.group("result"))
    # From the first `E` line, with the two before it: the failing line (`>`) and its test,
    # or the import that failed.
    anchor = errors[0] if errors else (short[0] if short else None)
    first_error = _pytest_error(lines, errors)
    if short:
        line = lines[short[0]].strip()
        found = _PYTEST_SHORT.fullmatch(line)
        assert found is not None
        if not found.group("reason") and first_error:
            line = f"{line}: {first_error}"
        return Reading(line + _more(len(short)), anchor, context=2)
    where = next((m for m in map(_PYTEST_WHERE.fullmatch, lines) if m), None)
    if first_error is None or where is None:
        return None
    return Reading(f"{where.group('where')}: {first_error}", anchor, context=2)


def _pytest_error(lines: Sequence[str], errors: Sequence[int]) -> str | None:
    if not errors:
        return None
    found = _PYTEST_E.fullmatch(lines[errors[0]])
    return found.group("text") if found else None


_UNITTEST_HEAD = re.compile(r"(?P<kind>FAIL|ERROR): (?P<test>\S+) \((?P<where>[^)]*)\).*")
_UNITTEST_RAN = re.compile(r"Ran \d+ tests? in [\d.]+s")


def _unittest(lines: Sequence[str], failed: bool) -> Reading | None:
    heads = [index for index, line in enumerate(lines) if _UNITTEST_HEAD.fullmatch(line)]
    if not heads:
        ran = next((i for i, line in enumerate(lines) if _UNITTEST_RAN.fullmatch(line)), None)
        if ran is None:
            return None
        verdict = _next_text(lines, ran)
        return Reading(f"{lines[ran]}: {verdict}" if verdict else lines[ran])
    first = heads[0]
    raised = None
    for line in lines[first + 1 :]:
        if _UNITTEST_HEAD.fullmatch(line) or _UNITTEST_RAN.fullmatch(line):
            break
        if is_noise(line) or line[0] in " \t" or line.startswith("Traceback"):
            continue
        raised = line
        break
    headline = lines[first].strip()
    text = f"{headline} — {raised}" if raised else headline
    return Reading(text + _more(len(heads)), first)


_CARGO_FAILED = re.compile(r"(?:test )?(?P<name>\S+) (?:\.\.\. |--- )FAILED")
_CARGO_PANIC = re.compile(
    r"thread '(?P<name>[^']*)'(?: \(\d+\))? panicked at (?:'(?P<old>.*)', )?"
    r"(?P<where>[^\s:']+:\d+:\d+):?(?P<rest>.*)"
)
_CARGO_ERROR = re.compile(r"error(?P<code>\[\w+\])?: (?P<message>.+)")
_CARGO_WHERE = re.compile(r"\s*--> (?P<where>\S+)")
_CARGO_OK = re.compile(r"test result: ok\. .*")


def _cargo(lines: Sequence[str], failed: bool) -> Reading | None:
    if not failed:
        found = next((line for line in lines if _CARGO_OK.fullmatch(line)), None)
        return None if found is None else Reading(found)
    for index, line in enumerate(lines):
        error = _CARGO_ERROR.fullmatch(line)
        where = _CARGO_WHERE.fullmatch(lines[index + 1]) if index + 1 < len(lines) else None
        if error and where:
            code = error.group("code") or ""
            text = f"{where.group('where')}: error{code}: {error.group('message')}"
            return Reading(text, index)
    tests = [m.group("name") for m in map(_CARGO_FAILED.fullmatch, lines) if m]
    panics = [index for index, line in enumerate(lines) if _CARGO_PANIC.fullmatch(line)]
    if not panics:
        return None
    panic = _CARGO_PANIC.fullmatch(lines[panics[0]])
    assert panic is not None
    message = panic.group("old") or panic.group("rest").strip(" :") or _next_text(lines, panics[0])
    name = tests[0] if tests else panic.group("name")
    text = f"{name} FAILED — panicked at {panic.group('where')}: {message}"
    return Reading(text + _more(max(len(tests), len(panics))), panics[0], context=1)


_GO_FAIL = re.compile(r"\s*--- FAIL: (?P<name>\S+) \((?P<time>[\d.]+s)\)")
_GO_MESSAGE = re.compile(r"\s+(?P<message>\S+\.go:\d+: .*)")
_GO_OK = re.compile(r"ok\s+\S+\s+(?:[\d.]+s|\(cached\)).*")


def _go_test(lines: Sequence[str], failed: bool) -> Reading | None:
    if not failed:
        found = next((line for line in lines if _GO_OK.fullmatch(line)), None)
        return None if found is None else Reading(found)
    fails = [index for index, line in enumerate(lines) if _GO_FAIL.fullmatch(line)]
    if not fails:
        return None
    first = fails[0]
    # The test's log lines follow its FAIL line, or precede it under -v (streamed as run).
    after = [i for i in range(first + 1, len(lines)) if _GO_MESSAGE.fullmatch(lines[i])][:1]
    run_start = max((i for i in range(first) if lines[i].startswith("=== RUN")), default=0)
    before = [i for i in range(run_start, first) if _GO_MESSAGE.fullmatch(lines[i])][:1]
    chosen = (after and after[0] == first + 1 and after) or before or after
    headline = lines[first].strip()
    if not chosen:
        return Reading(headline + _more(len(fails)), first)
    message = _GO_MESSAGE.fullmatch(lines[chosen[0]])
    assert message is not None
    text = f"{headline} — {message.group('message')}"
    return Reading(text + _more(len(fails)), min(first, chosen[0]), context=1)


_ESLINT_PROBLEM = re.compile(
    r"\s+(?P<line>\d+):(?P<col>\d+)\s+(?P<level>error|warning)\s+(?P<message>.+?)"
    r"(?:\s{2,}(?P<rule>[\w@/-]+))?"
)


def _eslint(lines: Sequence[str], failed: bool) -> Reading | None:
    problems = [
        (i, found) for i, found in enumerate(map(_ESLINT_PROBLEM.fullmatch, lines)) if found
    ]
    if not problems or not failed:
        return None
    errors = [(i, found) for i, found in problems if found.group("level") == "error"]
    chosen, found = (errors or problems)[0]
    # The file's path is the line above its problems that is not indented.
    heads = [i for i in range(chosen) if lines[i] and lines[i][0] not in " \t"]
    if not heads:
        return None
    path_index = heads[-1]
    rule = f" [{found.group('rule')}]" if found.group("rule") else ""
    text = (
        f"{lines[path_index].strip()}:{found.group('line')}:{found.group('col')}: "
        f"{found.group('level')}: {found.group('message')}{rule}"
    )
    return Reading(text + _more(len(errors or problems)), path_index)


_LOCATED = re.compile(
    r"(?P<path>(?:[A-Za-z]:)?[^\s:()]*[./][^\s:()]*)(?:\(\d+,\d+\)|:\d+(?::\d+)?)"
    r"(?::|\s+-)\s+(?P<message>\S.*)"
)


def _located(lines: Sequence[str], failed: bool) -> Reading | None:
    if not failed:
        return None
    located = [index for index, line in enumerate(lines) if _LOCATED.fullmatch(line.strip())]
    if not located:
        return None
    errors = [index for index in located if _ERROR_WORD.search(lines[index])]
    chosen = errors or located
    return Reading(lines[chosen[0]].strip() + _more(len(chosen)), chosen[0])


def _generic(lines: Sequence[str], failed: bool) -> Reading:
    kept = [index for index, line in enumerate(lines) if not is_noise(line)]
    telling = [index for index in kept if not is_boilerplate(lines[index])] or kept
    if not telling:
        return Reading("")
    if not failed:
        return Reading(lines[telling[-1]].strip())
    # An error at the start of a line (Python's exception under its traceback) before one
    # inside an indented line (the code that raised it).
    flush = [index for index in telling if lines[index][:1] not in (" ", "\t")]
    for pattern in (_NAMED_ERROR, _ERROR_WORD):
        for candidates in (flush, telling):
            found = next((index for index in candidates if pattern.search(lines[index])), None)
            if found is not None:
                return Reading(lines[found].strip(), found, context=2)
    return Reading(lines[telling[0]].strip())


READERS: tuple[Reader, ...] = (_doctest, _pytest, _unittest, _cargo, _go_test, _eslint, _located)


# -- helpers --------------------------------------------------------------------------------------


def _next_text(lines: Sequence[str], index: int) -> str:
    """The first line after ``index`` that is not noise, stripped ("" when none)."""
    return next((line.strip() for line in lines[index + 1 :] if not is_noise(line)), "")


def _more(count: int) -> str:
    return f" (and {count - 1} more)" if count > 1 else ""


def _one_line(text: str, width: int) -> str:
    return _cut(" ".join(text.split()), width)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
