"""Reading and writing the Markdown files: UTF-8 exactly as on disk, atomic replacement.

memento reads only regular files, and never in a way that can block: an agent runs as the
same user and may leave a FIFO (reading one waits for a writer that never comes), a socket,
a device or a link to ``/dev/zero`` where memento's files go. Every read looks at the entry
first (``lstat``), opens it with ``O_NONBLOCK`` (and ``O_NOFOLLOW`` unless the caller follows
links), checks the open file again (``fstat``) and stops at ``READ_LIMIT`` bytes.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import BinaryIO

from memento_gh.errors import UserError

#: The most memento reads of one file: far above a 10,000-task plan (about 1 MB).
READ_LIMIT = 64 << 20
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
)
_CHUNK = 1 << 20
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def read_text(path: Path, *, follow_links: bool = False) -> str:
    """The file's text, decoded as UTF-8 with every byte kept (no newline translation).
    A ``UserError`` naming ``path`` when it is missing, not a regular file (a link too,
    unless ``follow_links``), larger than ``READ_LIMIT`` or not UTF-8."""
    data = read_bytes(path, follow_links=follow_links)
    if data is None:
        raise UserError(f"{path}: no such file; run `memento init` to create the plan files")
    return decode_utf8(data, path)


def read_optional(path: Path, *, follow_links: bool = False) -> str | None:
    """``read_text`` of a file that may be missing (None then)."""
    data = read_bytes(path, follow_links=follow_links)
    return None if data is None else decode_utf8(data, path)


def read_bytes(path: Path, *, follow_links: bool = False, limit: int = READ_LIMIT) -> bytes | None:
    """The bytes of the regular file at ``path``, None when there is none; never blocks.
    Anything else there is a ``UserError`` that names it and the fix."""
    descriptor = open_regular(path, os.O_RDONLY, follow_links=follow_links)
    if descriptor is None:
        return None
    chunks = []
    total = 0
    try:
        if os.fstat(descriptor).st_size > limit:
            raise _too_large(path, limit)
        # Up to one byte past the limit: a file that grows while it is read is caught too.
        while chunk := os.read(descriptor, min(_CHUNK, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise _too_large(path, limit)
    except OSError as error:
        raise UserError(f"{path}: cannot read it ({error.strerror})") from None
    finally:
        os.close(descriptor)
    return b"".join(chunks)


def open_append(path: Path) -> BinaryIO:
    """``path`` opened for appending (created when missing, with its folders): a log. Only
    a regular file of its own, never through a link: a FIFO there would block the writer, a
    symbolic link would make memento write wherever it points, and a hard link (a second
    name of ``.git/config``, say) would make it write into the file it names."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a file, or a link to one, where the folder goes
        raise UserError(
            f"{path.parent}: cannot make the folder for {path.name} ({error.strerror}); "
            f"memento keeps its logs in a folder there: remove what is in its place "
            f"(`rm {path.parent}`)"
        ) from None
    fix = f"memento writes its logs only into files of their own: remove it (`rm -r {path}`)"
    descriptor = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, fix=fix)
    assert descriptor is not None  # O_CREAT
    links = os.fstat(descriptor).st_nlink
    if links > 1:
        os.close(descriptor)
        raise UserError(f"{path}: this file has {links} names (a hard link to another file); {fix}")
    os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "ab")


def create_private(folder: Path, prefix: str, suffix: str, text: str) -> Path:
    """A new file in ``folder`` holding ``text``, readable by its owner only, under a name
    nobody can guess beforehand (``tempfile.mkstemp``: created exclusively, so no link or
    file planted in a shared folder such as ``/tmp`` is ever written through); its path."""
    handle, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=folder)
    with os.fdopen(handle, "wb") as stream:
        stream.write(text.encode("utf-8", errors="surrogateescape"))
    return Path(name)


def open_regular(
    path: Path,
    flags: int,
    *,
    follow_links: bool = False,
    dir_fd: int | None = None,
    fix: str | None = None,
) -> int | None:
    """A descriptor on the regular file at ``path`` opened with ``flags`` (None: there is
    none, and ``flags`` do not create one), without blocking and, unless ``follow_links``,
    not through a link. Anything but a regular file is a ``UserError`` naming its kind.
    ``dir_fd``: ``path`` is a name in that open folder (``os.fwalk``), so that no link in
    the folders above it is followed either. ``fix``: what the message about anything
    else there tells the user to do (default: put the file itself there).

    The entry is looked at before it is opened, so that memento never opens a device (some
    act on being opened) or a FIFO; the open file is looked at again, for an entry swapped
    in between (the open itself cannot block: ``O_NONBLOCK``)."""
    try:
        found = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow_links)
    except (FileNotFoundError, NotADirectoryError):
        if not flags & os.O_CREAT:
            return None
    except OSError as error:
        raise UserError(f"{path}: cannot open it ({error.strerror})") from None
    else:
        if not stat.S_ISREG(found.st_mode):
            raise not_regular(path, found.st_mode, fix)
    extra = os.O_NONBLOCK | _CLOEXEC | (0 if follow_links else _NOFOLLOW)
    try:
        descriptor = os.open(path, flags | extra, 0o644, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as error:
        swapped = error.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR)  # since the lstat
        with suppress(OSError):
            if swapped:
                mode = os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode
                raise not_regular(path, mode, fix) from None
        raise UserError(f"{path}: cannot open it ({error.strerror})") from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise not_regular(path, mode, fix)
    return descriptor


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, as messages say it: "a FIFO", "a regular file"..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def not_regular(path: Path, mode: int, fix: str | None = None) -> UserError:
    if stat.S_ISDIR(mode):  # as memento has always said it
        return UserError(f"{path}: is a directory, not a file" + (f"; {fix}" if fix else ""))
    fix = fix or (
        "memento reads only regular files: put the file itself there "
        "(`git checkout -- FILE` restores a committed one)"
    )
    return UserError(f"{path}: not a regular file ({kind_of(mode)}); {fix}")


def _too_large(path: Path, limit: int) -> UserError:
    return UserError(
        f"{path}: larger than {limit >> 20} MB; memento reads files up to that size: "
        "make it smaller (archive old entries) or put the right file there"
    )


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
        temporary.chmod(_kept_mode(path))
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _kept_mode(path: Path) -> int:
    """The permission bits a replacement of ``path`` takes: those of the file there when it
    is a regular file of its own, without set-id bits; else (a new file, a link, a second
    name of another file) 0o644."""
    try:
        found = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return 0o644
    if not stat.S_ISREG(found.st_mode) or found.st_nlink > 1:
        return 0o644
    return stat.S_IMODE(found.st_mode) & 0o777


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
