"""Secrets out of text before it leaves memento: ``***`` in place of every credential.

Two kinds of secret are found. The values of the environment variables whose names say they
hold one (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*SECRET*``, ``*PASSWORD*``) and any
value the caller names (the action's token inputs); and text in the shape of a common key,
whatever variable (if any) it came from: GitHub tokens, Anthropic and OpenAI-style keys,
AWS access key ids and PEM private key blocks.

Both are found whole when a log wrapped them across lines (a newline, or the two characters
``\\n`` of a JSON string, between any two of their characters): each piece becomes ``***``
and the line breaks stay, so a redacted log keeps its lines. A secret value is found also
with spaces or tabs inside it, and in its common encodings, which any program that has
it can print: hexadecimal (either case), and base64 (standard and URL-safe) at any of the
three places a secret can start inside a longer base64 text (``x-access-token:TOKEN`` in
a basic-auth header); of base64, the characters that hold the secret's bits alone.

Pure: the environment is a parameter.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from functools import cached_property
from typing import IO, TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

MASK = "***"
#: Values shorter than this are never redacted by value. Such values are flags and
#: placeholders (``1``, ``true``, ``none``, ``dummy``), and blanking each place the word
#: occurs would wreck a log without hiding anything: no real token or key is that short,
#: and a password under 8 characters is refused by every service that issues one.
MIN_SECRET_LENGTH = 8

#: Narrower than ``credentials.is_token``, which keeps every GITHUB_* variable but a few from
#: the agent: masking their values (the event's name, the workspace's path) would wreck the
#: text. The action's token input is INPUT_GITHUB-TOKEN.
_CREDENTIAL_NAME = re.compile(r"[_-](?:API[_-]KEY|TOKEN)$|SECRET|PASSWORD|PASSWD")
#: A line break in a wrapped log: a real one, or an escaped one inside a JSON string.
_BREAK = r"(?:\r?\n|\\(?:r\\)?n)"
_KEY_CHAR = r"[A-Za-z0-9_\-]"
#: One or more key characters, with a line break allowed between any two of them.
_WRAPPED_BODY = rf"{_KEY_CHAR}(?:{_BREAK}?{_KEY_CHAR})"
# Each starts with a plain character and looks behind only after it: the regex engine then
# skips to the places where one of those characters occurs, 4 to 7 times faster than with
# the lookbehind first (benchmarks/bench_redact.py).
_FORMATS = (
    # GitHub: classic, OAuth, user-to-server, server-to-server and refresh tokens, and the
    # fine-grained personal access tokens.
    rf"g(?<![A-Za-z0-9_]g)h[pousr]_{_WRAPPED_BODY}{{15,}}",
    rf"g(?<![A-Za-z0-9_]g)ithub_pat_{_WRAPPED_BODY}{{15,}}",
    # Anthropic (sk-ant-…) and OpenAI-style (sk-…, sk-proj-…) keys.
    rf"s(?<![A-Za-z0-9_\-]s)k-{_WRAPPED_BODY}{{15,}}",
    # AWS access key ids: long-lived (AKIA) and temporary (ASIA).
    r"A(?<![A-Z0-9]A)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Z0-9])",
    # PEM private keys, whole blocks (the body's lines, escaped or not, go with them).
    r"-----BEGIN[A-Z ]{0,30}PRIVATE KEY-----[\s\S]*?-----END[A-Z ]{0,30}PRIVATE KEY-----",
)
_BREAKS = re.compile(rf"({_BREAK})")


def credential_name(name: str) -> bool:
    """Whether an environment variable of this name holds a credential, by its name."""
    return _CREDENTIAL_NAME.search(name.upper()) is not None


def secrets_in(environ: Mapping[str, str], extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The values to redact: those of the credential-named variables of ``environ`` and
    ``extra``, each at least ``MIN_SECRET_LENGTH`` long, longest first."""
    found = {value for name, value in environ.items() if credential_name(name)}
    found.update(extra)
    return tuple(
        sorted((value for value in found if len(value) >= MIN_SECRET_LENGTH), key=len, reverse=True)
    )


class _Record(Protocol):
    """A NamedTuple, as ``hidden_repr`` reads it."""

    @property
    def _fields(self) -> tuple[str, ...]: ...

    def __iter__(self) -> Iterator[object]: ...


def hidden_repr(record: _Record, hidden: Collection[str]) -> str:
    """``Name(field=value, ...)``, as a NamedTuple prints itself, with ``***`` for the value
    of each field named in ``hidden`` that is set (an unset one shows as it is: None, "").
    A record holding a credential defines ``__repr__`` with it, so that printing it (a log
    line, a traceback, a failing test's diff) never shows the credential."""
    shown = (
        f"{name}={MASK if name in hidden and value else repr(value)}"
        for name, value in zip(record._fields, record, strict=True)
    )
    return f"{type(record).__name__}({', '.join(shown)})"


class Redactor:
    """Redacts the key formats and the given secret values (``secrets_in``)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.values = tuple(values)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], extra: Iterable[str] = ()) -> Redactor:
        return cls(secrets_in(environ, extra))

    @cached_property
    def alternatives(self) -> list[str]:
        """The patterns: the values in every spelling, longest first, then the formats."""
        spelled = {form for value in self.values for form in _spellings(value)}
        literal = [_wrapped_literal(form) for form in sorted(spelled, key=len, reverse=True)]
        return [*literal, *_FORMATS]

    @cached_property
    def _patterns(self) -> list[re.Pattern[str]]:
        # One pass each: faster than one pass of their alternation (bench_redact.py).
        return [re.compile(pattern) for pattern in self.alternatives]

    def redact(self, text: str) -> str:
        for pattern in self._patterns:
            text = pattern.sub(_mask, text)
        return text

    def redact_bytes(self, data: bytes) -> bytes:
        """``redact`` for bytes of any encoding: what is not UTF-8 passes through as it is."""
        text = data.decode("utf-8", errors="surrogateescape")
        return self.redact(text).encode("utf-8", errors="surrogateescape")


def _spellings(value: str) -> set[str]:
    """The value as it is, as it appears inside a JSON string, and encoded (``_encodings``)."""
    return {value, json.dumps(value)[1:-1], *_encodings(value.encode("utf-8"))}


#: The base64 characters a secret's bits alone decide, when the secret starts 0, 1 or 2
#: bytes into a group of three: the first ones mix with the bytes before it.
_BASE64_START = (0, 2, 3)
_URL_SAFE = str.maketrans("+/", "-_")


def _encodings(data: bytes) -> set[str]:
    """``data`` in hexadecimal, lower and upper case, and the base64 fragments that stand for
    it wherever it starts in a base64 text (as long as a secret must be, at least)."""
    import base64

    found = {data.hex(), data.hex().upper()}
    for offset, start in enumerate(_BASE64_START):
        encoded = base64.b64encode(bytes(offset) + data).decode()
        fragment = encoded[start : 4 * ((offset + len(data)) // 3)]  # none of what follows
        if len(fragment) >= MIN_SECRET_LENGTH:
            found.update({fragment, fragment.translate(_URL_SAFE)})
    return found


#: What may stand between two characters of a secret value in a text: a line break (real,
#: or escaped in JSON), or spaces and tabs.
_GAP = rf"(?:{_BREAK}|[ \t]+)?"


def _wrapped_literal(value: str) -> str:
    return _GAP.join(re.escape(char) for char in value)


def _mask(match: re.Match[str]) -> str:
    """``***`` for each piece of the match, keeping the line breaks between them."""
    pieces = _BREAKS.split(match.group(0))
    return "".join(piece if index % 2 else MASK for index, piece in enumerate(pieces))


class RedactingText:
    """A text stream (``sys.stdout``, ``sys.stderr``) whose writes are redacted on their way
    to ``target``: what memento prints reaches a terminal, a CI log or, under cron,
    ``logs/cron.log`` (the crontab line appends the tick's output there).

    Each write is redacted whole and passed on at once (nothing is held back: a prompt
    without a newline still shows); ``print`` writes a line's text in one call, so a key in
    it is found whole. Everything else (``isatty``, ``fileno``, ``encoding``...) is the
    target's."""

    def __init__(self, target: IO[str], redactor: Redactor) -> None:
        self.target = target
        self._redactor = redactor

    def write(self, text: str) -> int:
        self.target.write(self._redactor.redact(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:
        return getattr(self.target, name)


class RedactingWriter(io.RawIOBase):
    """A raw binary stream that redacts what is written before it reaches ``target``.

    Text is passed on a line at a time, at a line break no key can span (one not between
    two key characters), so that a key written in several pieces, or wrapped across lines,
    is found whole. What is held back is passed on when ``hold`` bytes gather without such
    a break, and at ``close``. Wrap it in ``io.BufferedWriter`` for a file object.
    """

    def __init__(self, target: IO[bytes], redactor: Redactor, hold: int = 1 << 20) -> None:
        super().__init__()
        self._target = target
        self._redactor = redactor
        self._hold = hold
        self._pending = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: WriteableBuffer, /) -> int:
        size = memoryview(data).nbytes
        self._pending += data
        cut = _safe_cut(self._pending)
        if cut == 0 and len(self._pending) >= self._hold:
            cut = len(self._pending)
        if cut:
            self._pass_on(bytes(self._pending[:cut]))
            del self._pending[:cut]
        return size

    def flush(self) -> None:
        if not self.closed:
            self._target.flush()

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._pending:
                self._pass_on(bytes(self._pending))
                self._pending.clear()
            super().close()  # flushes the target first
        finally:
            self._target.close()

    def _pass_on(self, data: bytes) -> None:
        self._target.write(self._redactor.redact_bytes(data))
        self._target.flush()


_KEY_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-=+/")


def _safe_cut(pending: bytearray) -> int:
    """The end of the last line break in ``pending`` that no key spans, or 0."""
    end = len(pending)
    while True:
        newline = pending.rfind(b"\n", 0, end)
        if newline < 0 or newline + 1 >= len(pending):
            if newline < 0:
                return 0
            end = newline
            continue
        before = pending[newline - 1] if newline else 0
        if before == 0x0D and newline >= 2:  # \r\n
            before = pending[newline - 2]
        if before not in _KEY_BYTES or pending[newline + 1] not in _KEY_BYTES:
            return newline + 1
        end = newline
