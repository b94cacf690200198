"""Redaction: given this text and this environment, this is what may leave memento."""

from __future__ import annotations

import base64
import io
import json

import pytest

from memento_gh.redact import (
    MASK,
    RedactingText,
    RedactingWriter,
    Redactor,
    credential_name,
    secrets_in,
)

pytestmark = pytest.mark.timeout(30)

GITHUB = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
FINE_GRAINED = "github_pat_11ABCDEFG0" + "x" * 40
ANTHROPIC = "sk-ant-api03-" + "Zq9" * 20 + "-AA"
OPENAI = "sk-proj-" + "Ab3" * 16
AWS = "AKIAIOSFODNN7EXAMPLE"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA1c3m2xXdkMC0Zt9b\n"
    "q8Y0l0eOqwH3cRZ4kjXkV3l1o9y+0w==\n"
    "-----END RSA PRIVATE KEY-----"
)
FORMATS = [GITHUB, FINE_GRAINED, ANTHROPIC, OPENAI, AWS, PEM]


@pytest.mark.parametrize("key", FORMATS)
def test_every_key_format_is_masked_whatever_variable_it_came_from(key: str) -> None:
    redacted = Redactor().redact(f"before {key} after")
    assert key not in redacted
    assert redacted.startswith("before ***")
    assert redacted.endswith(" after")


@pytest.mark.parametrize("key", FORMATS)
def test_a_key_inside_a_json_string_is_masked(key: str) -> None:
    document = json.dumps({"output": f"the key is {key}\n", "ok": True})
    redacted = Redactor().redact(document)
    assert key not in redacted
    assert json.dumps(key)[1:-1] not in redacted
    assert json.loads(redacted)["ok"] is True  # still JSON


@pytest.mark.parametrize("key", [GITHUB, ANTHROPIC, OPENAI, FINE_GRAINED])
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\\n"])
def test_a_key_wrapped_across_lines_is_masked_and_the_lines_stay(key: str, newline: str) -> None:
    half = len(key) // 2
    text = f"first line\ntoken: {key[:half]}{newline}{key[half:]}\n  last line"
    redacted = Redactor().redact(text)
    assert key[:half] not in redacted
    assert key[half:] not in redacted
    assert redacted == f"first line\ntoken: ***{newline}***\n  last line"


def test_a_key_at_a_line_end_takes_the_next_lines_first_word_with_it() -> None:
    # A wrapped key cannot be told from a key followed by a word on the next line: the
    # word goes too, the safe side.
    assert Redactor().redact(f"{GITHUB}\nnext line") == "***\n*** line"


def test_the_same_key_repeated_is_masked_every_time() -> None:
    text = f"{GITHUB} and {GITHUB}\n{GITHUB}{GITHUB[:3]}"
    assert Redactor().redact(text) == f"{MASK} and {MASK}\n{MASK}"


def test_credential_variables_are_masked_by_value_plain_wrapped_or_in_json() -> None:
    secret = 'pa$$w0rd"with\\quotes'
    redactor = Redactor.from_environ({"DB_PASSWORD": secret, "HOME": "/home/runner"})
    assert redactor.redact(f"x {secret} y") == "x *** y"
    assert redactor.redact(json.dumps({"v": secret})) == json.dumps({"v": "***"})
    assert redactor.redact(f"{secret[:5]}\n{secret[5:]}") == "***\n***"
    assert redactor.redact("/home/runner") == "/home/runner"


@pytest.mark.parametrize(
    ("name", "credential"),
    [
        ("ANTHROPIC_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("MEMENTO_GITHUB_TOKEN", True),
        ("INPUT_GITHUB-TOKEN", True),
        ("ACTIONS_RUNTIME_TOKEN", True),
        ("GITHUB_EVENT_NAME", False),
        ("INPUT_ALLOWED-ASSOCIATIONS", False),
        ("CLIENT_SECRET", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("PGPASSWORD", True),
        ("db_password_file", True),
        ("PATH", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("KEYBOARD", False),
    ],
)
def test_which_variable_names_hold_credentials(name: str, credential: bool) -> None:
    assert credential_name(name) is credential


def test_short_values_never_blank_out_ordinary_words() -> None:
    environ = {"DEBUG_TOKEN": "true", "X_API_KEY": "none", "Y_SECRET": "1234567"}
    assert secrets_in(environ) == ()
    text = "true or none: 1234567 is a number"
    assert Redactor.from_environ(environ).redact(text) == text


def test_given_values_are_masked_whatever_their_name() -> None:
    redactor = Redactor.from_environ({}, extra=["the-token-input-value"])
    assert redactor.redact("push with the-token-input-value") == "push with ***"


@pytest.mark.parametrize(
    "text",
    [
        "risk-assessment-of-the-whole-module passed",
        "task-1234567890123456789 and ask-questions-before-changing-code",
        "the ghp_ prefix and sk- alone are words, so is AKIA",
        "thigh_abcdefghijklmnopqrstuvwxyz",
        "BAKIAIOSFODNN7EXAMPLE is longer than an AWS id",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor().redact(text) == text


def test_bytes_that_are_not_utf8_pass_through() -> None:
    data = b"\xff\xfe " + GITHUB.encode() + b" \xc3"
    assert Redactor().redact_bytes(data) == b"\xff\xfe *** \xc3"


def _written(chunks: list[bytes], redactor: Redactor, hold: int = 1 << 20) -> bytes:
    target = io.BytesIO()
    target.close = lambda: None  # type: ignore[method-assign]  # read it after close
    writer = io.BufferedWriter(RedactingWriter(target, redactor, hold=hold))
    for chunk in chunks:
        writer.write(chunk)
        writer.flush()
    writer.close()
    return target.getvalue()


def test_a_stream_written_in_pieces_is_redacted_whole() -> None:
    text = f"start\nkey {GITHUB[:10]}\n{GITHUB[10:]} end\n{PEM}\ndone\n".encode()
    chunks = [text[index : index + 7] for index in range(0, len(text), 7)]
    written = _written(chunks, Redactor())
    assert written == b"start\nkey ***\n*** end\n***\n***\n***\n***\ndone\n"


def test_a_stream_passes_lines_on_as_they_end() -> None:
    target = io.BytesIO()
    writer = io.BufferedWriter(RedactingWriter(target, Redactor()))
    writer.write(b"one line.\nhalf a li")
    writer.flush()
    assert target.getvalue() == b"one line.\n"


def test_a_stream_without_a_safe_break_is_passed_on_at_the_hold_limit() -> None:
    target = io.BytesIO()
    writer = io.BufferedWriter(RedactingWriter(target, Redactor(), hold=100))
    writer.write(b"x" * 150)
    writer.flush()
    assert target.getvalue() == b"x" * 150


ENCODED_KEY = "sk-ant-api03-" + "Enc0d3d" * 8 + "-AA"
_KEY_BYTES = ENCODED_KEY.encode()


@pytest.mark.parametrize(
    ("shown", "kept"),
    [
        (base64.b64encode(_KEY_BYTES).decode(), 0),
        # a secret inside a longer text starts mid-group: what stands for the text before it
        # (14 characters here) and its last partial group are left
        (base64.b64encode(b"x-api-key:" + _KEY_BYTES).decode(), 14),
        (base64.b64encode(b"ab" + _KEY_BYTES).decode(), 3),
        (base64.urlsafe_b64encode(b"?>" + _KEY_BYTES).decode(), 3),
        (_KEY_BYTES.hex(), 0),
        (_KEY_BYTES.hex().upper(), 0),
        (ENCODED_KEY[:9] + " " + ENCODED_KEY[9:], 0),
        (" ".join(f"{byte:02x}" for byte in _KEY_BYTES), 0),  # od, xxd
        ("\t".join([ENCODED_KEY[:5], ENCODED_KEY[5:20], ENCODED_KEY[20:]]), 0),
    ],
    ids=[
        "base64",
        "base64-in-header",
        "base64-offset-2",
        "urlsafe",
        "hex",
        "HEX",
        "a-space",
        "hex-bytes",
        "tabs",
    ],
)
def test_a_known_secret_is_found_in_its_common_encodings(shown: str, kept: int) -> None:
    """Issue #27, class 11: the agent has its provider key, and can print it encoded."""
    redactor = Redactor.from_environ({"ANTHROPIC_API_KEY": ENCODED_KEY})

    redacted = redactor.redact(f"it said: {shown} (done)")

    assert redacted.startswith("it said: ") and redacted.endswith(" (done)")
    left = redacted.removeprefix("it said: ").removesuffix(" (done)").split(MASK)
    assert len(left) == 2, redacted
    # besides what stands for other text, at most a last partial base64 group is left
    assert len(left[0]) <= kept and len(left[1]) <= 4, redacted
    stream = io.StringIO()
    RedactingText(stream, redactor).write(shown)  # the command line's own output too
    assert MASK in stream.getvalue()
