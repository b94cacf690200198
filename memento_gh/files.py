"""Reading and writing the Markdown files: UTF-8 exactly as on disk, atomic replacement."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from memento_gh.errors import UserError


def read_text(path: Path) -> str:
    """The file's text, decoded as UTF-8 with every byte kept (no newline translation)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(
            f"{path}: no such file; run `memento init` to create the plan files"
        ) from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, not a file") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read it ({error.strerror})") from None
    return decode_utf8(data, path)


def read_optional(path: Path) -> str | None:
    """``read_text`` of a file that may be missing (None then)."""
    return read_text(path) if path.exists() else None


class NotUtf8(UserError):
    """A file whose bytes are not UTF-8; ``line`` is where the first bad byte is."""

    def __init__(self, path: Path, line: int, offset: int) -> None:
        self.line = line
        self.reason = f"the file is not valid UTF-8 (byte {offset}); save it as UTF-8"
        super().__init__(f"{path}:{line}: {self.reason}")


def decode_utf8(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise NotUtf8(path, line, error.start) from None


def write_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Replace ``path`` with ``text`` so that a reader sees the old or the new file, never half.

    The temporary file sits beside the target (same file system, so the rename is atomic)
    and takes over the target's permission bits. It reaches the disk before the rename, so
    that a power cut cannot leave an empty file in place of the old one, unless
    ``durable`` is false: for a file whose loss the next run repairs anyway.
    """
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    # Beside the target, readable by its owner only until it is renamed.
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(text.encode("utf-8"))
            if durable:
                stream.flush()
                os.fsync(stream.fileno())
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
        temporary.chmod(mode)
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def make_folder(path: Path, command: str, hint: str) -> None:
    """Create ``path`` (and its parents) for ``command``, or say plainly why not."""
    from memento_gh.layout import display

    if path.exists() and not path.is_dir():
        raise UserError(f"{display(path)} is a file; give `{command}` {hint}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(
            f"{display(path)}: cannot create the folder ({error.strerror or error}); "
            "check the path and its permissions"
        ) from None
