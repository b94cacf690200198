"""Git on a shared remote branch: check out (or create) the ``memento`` branch, and push to it.

The push is the compare-and-swap that lets several runs share one branch (a scheduled run, a
comment's run, parallel workers): a plain, fast-forward-only push either lands or is rejected
because the branch moved. A rejection is resolved by fetching, rebasing the local commits onto
the remote branch, and pushing again after a jittered, bounded backoff. A rebase conflict is
aborted: the local branch is left as it was and the caller records why nothing was pushed; the
next run starts again from the remote state.

The token reaches git only for the fetch, ls-remote and push that need it, in the environment
(``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``): never on a command line,
where ``ps`` shows it to every user of the machine, and never in ``.git/config``, where the
agent (which runs earlier, with an environment scrubbed of tokens) would find it. So the
workflow can check out with ``persist-credentials: false``. The URLs are read once, before any
agent runs (an ``Endpoint``), and every network call names its URL: a push URL, a rewrite or
a proxy the agent writes into git's configuration afterwards is never asked where to send it.
"""

from __future__ import annotations

import base64
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from memento_gh import backoff, gitrun
from memento_gh.engine.pool.handoff import Carried, Posted
from memento_gh.errors import UserError
from memento_gh.gitrun import GitError, NetworkError
from memento_gh.redact import hidden_repr
from memento_gh.workspace import IDENTITY_SETTINGS, Workspace, identity_from

# The identity GitHub shows with its own avatar for commits made by a workflow's token.
BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"

BACKOFF_BASE = 1.0  # seconds before the second push attempt, at most
BACKOFF_CAP = 20.0  # the longest wait between two attempts
WORKER_BACKOFF_BASE = 0.1  # the same for workers sharing a branch, who race all the time
WORKER_BACKOFF_CAP = 2.0
#: How often a worker tries to land one claim or result before it gives up for this tick.
WORKER_ATTEMPTS = 30
URGENT_JITTER = 0.01  # seconds: a result's first retry waits up to this, doubling each time
URGENT_CAP = 2.0  # seconds: the longest a result's retry waits
REBASE_STATES = ("rebase-merge", "rebase-apply")  # the folders of a rebase in progress
#: Where each worker posts a result the branch did not take at once: one ref per worker, so
#: that posting never races (``engine/pool/handoff.py``).
RESULTS = "refs/memento/results/"
#: Beside each result or request still waiting to be recorded, a ref here named after when
#: it was posted and by whom (``<milliseconds>-<worker>``; deleted in the push that records
#: it): so one ``git ls-remote`` tells who waits, in the order they posted, and so whose
#: turn it is to record, without fetching a post to read it.
WAITING = "refs/memento/waiting/"

# The network commands never start a background gc in a runner that is about to go away.
_NETWORK_CONFIG = ("gc.auto=0", "maintenance.auto=false")
# A rebase that replays the local commits and nothing else, whatever the user's config says.
_REBASE_CONFIG = (
    "commit.gpgSign=false",
    "rebase.autoSquash=false",
    "rebase.autoStash=false",
    "rebase.updateRefs=false",
    "rerere.enabled=false",
)
# Rejections that mean "the branch moved under you": fetch, rebase, try again. "cannot lock
# ref" to "incorrect old value" are how a server words losing a race on the ref's lock to a
# concurrent push; the atomic ones, how a push of several refs words it for each of them.
_RACE = re.compile(
    r"fetch first|non-fast-forward|stale info|cannot lock ref|failed to lock"
    r"|failed to update ref|incorrect old value|atomic push failed|atomic transaction failed",
    re.IGNORECASE,
)
_AUTH_FAILURE = re.compile(
    r"authentication failed|could not read (username|password)|terminal prompts disabled"
    r"|returned error: 40[13]|permission to .* denied|permission denied \(publickey"
    r"|invalid username or password|bad credentials",
    re.IGNORECASE,
)
_URL_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
# The user's own settings a network call without a token may need, from their global and
# system files (which memento's git does not read): credential helpers, URL rewrites, proxies
# and certificates, the ssh command.
_USER_NETWORK = r"^(credential|http|url)\.|^core\.(sshcommand|askpass)$"


class Endpoint(NamedTuple):
    """A remote as memento reaches it, read before any agent runs (``read_endpoint``): its
    name (for messages and the remote-tracking branches), the URLs to fetch from and push
    to, and what a network call to them gets: the token or, without one, the user's own
    network settings as they were then."""

    name: str
    fetch_url: str
    push_url: str
    token: str | None = None
    settings: tuple[tuple[str, str], ...] = ()
    #: Who a rebase commits as: the user's identity, else the bot.
    identity: tuple[str, ...] = ()

    def __repr__(self) -> str:
        # The user's network settings may carry a credential too (an http.extraHeader).
        return hidden_repr(self, ("token", "settings"))

    def auth(self, url: str) -> dict[str, str]:
        """The environment of one network call to ``url``."""
        if self.token:
            return remote_auth_env(self.token, url)
        return _numbered(self.settings)


def read_endpoint(root: Path, remote: str = "origin", token: str | None = None) -> Endpoint:
    """``remote`` of the repository at ``root`` as its configuration says now; call it
    before an agent runs, and pass it on to every call that reaches the remote."""
    top = _work_tree(root)
    found = gitrun.user_settings(top, f"{_USER_NETWORK}|{IDENTITY_SETTINGS}")
    network = re.compile(_USER_NETWORK)
    settings: tuple[tuple[str, str], ...] = ()
    if not token:
        outside = [s for s in found if s.scope in ("global", "system") and network.match(s.key)]
        settings = tuple((s.key, s.value) for s in outside)
    identity = identity_from(found, fallback=(("user.name", BOT_NAME), ("user.email", BOT_EMAIL)))
    fetch_url, push_url = _remote_url(top, remote), _remote_url(top, remote, push=True)
    return Endpoint(remote, fetch_url, push_url, token, settings, identity)


class PushRefused(UserError):
    """The remote refused a push for a reason of its own (not a race): ``said`` is its own
    words, the ``remote:`` lines and the refused ref's status (GitHub's "refusing to allow
    a GitHub App to create or update workflow …", "GH006: Protected branch update failed …"),
    for a caller that words the fix."""

    def __init__(self, message: str, said: str) -> None:
        super().__init__(message)
        self.said = said


class PushResult(NamedTuple):
    """What a push did. ``attempts`` counts ``git push`` runs (0: there was nothing to push)."""

    pushed: bool  # the remote branch holds the local commits
    attempts: int
    rebased: bool  # the pushed commits were rebased onto commits that landed meanwhile
    head: str | None  # the local HEAD afterwards (what was pushed, when pushed)
    reason: str  # "" when pushed; otherwise why not, as a sentence to record


def jittered_backoff(attempt: int) -> float:
    """The wait after failed push ``attempt`` (1, 2, ...) of a lone branch: up to 20 s."""
    return backoff.jittered(attempt, base=BACKOFF_BASE, cap=BACKOFF_CAP)


def worker_backoff(attempt: int) -> float:
    """The wait between two tries of a worker sharing a branch: a rejection there only means
    that another worker pushed a moment before, so the first retries come quickly."""
    return backoff.jittered(attempt, base=WORKER_BACKOFF_BASE, cap=WORKER_BACKOFF_CAP)


def remote_auth_env(token: str | None, remote_url: str) -> dict[str, str]:
    """Environment variables that make git send ``token`` to ``remote_url`` for one call.

    For an http(s) URL: an ``http.<url>.extraheader`` with the token as GitHub expects it
    (basic auth as ``x-access-token``), set through git's ``GIT_CONFIG_*`` variables, after an
    empty value that drops any header configured before (a ``persist-credentials: true``
    checkout leaves one in .git/config; two Authorization headers would be refused). Credential
    helpers and prompts are switched off for the call: a helper would be asked, and may store or
    offer, other credentials when the token is refused. No token, or a local path, file:// or
    ssh URL: nothing (an empty dict)."""
    key = _header_url(remote_url)
    if not token or key is None:
        return {}
    settings = [
        (f"http.{key}.extraheader", ""),
        (f"http.{key}.extraheader", f"AUTHORIZATION: basic {_basic_credentials(token)}"),
        ("credential.helper", ""),
    ]
    return {**_numbered(settings), "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": ""}


def _numbered(settings: Sequence[tuple[str, str]]) -> dict[str, str]:
    """``settings`` as git's numbered ``GIT_CONFIG_*`` variables (none: an empty dict)."""
    if not settings:
        return {}
    env = {"GIT_CONFIG_COUNT": str(len(settings))}
    for index, (name, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{index}"] = name
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def use_bot_identity(root: Path) -> None:
    """Set user.name and user.email to the GitHub Actions bot in the repository's own config,
    each only when the repository has none of its own.

    The action's commits are the bot's: a fresh runner has no identity at all, and the
    global identity of a self-hosted runner is its owner's, who did not write them. An
    identity the workflow set for this checkout (`git config user.name ...` in a step before)
    is kept. Call it before the tick: it writes .git/config, which the tick fingerprints."""
    top = _work_tree(root)
    for key, value in (("user.name", BOT_NAME), ("user.email", BOT_EMAIL)):
        if not gitrun.output(top, "config", "--local", "--get", key):
            gitrun.check(top, "config", "--local", key, value)


def prepare_branch(
    root: Path,
    *,
    branch: str = "memento",
    base: str | None = None,
    remote: str = "origin",
    token: str | None = None,
    endpoint: Endpoint | None = None,
) -> str:
    """Put ``root`` on ``branch`` as the remote has it, and say what was done in one line.

    When ``<remote>/<branch>`` exists, the local branch is reset to it (the runner is fresh;
    anything local on that branch is dropped). Otherwise the branch is created from
    ``<remote>/<base>``; ``base`` None means the remote's default branch. Only the branch
    needed is fetched, so a shallow checkout (``fetch-depth: 1``) stays shallow. ``endpoint``
    is the remote as read before (default: as the configuration says now)."""
    top = _work_tree(root)
    _refuse_rebase_in_progress(top)
    _check_branch_name(top, branch)
    if base is not None:
        _check_branch_name(top, base)
    end = endpoint or read_endpoint(top, remote, token)
    guess = base or _local_default_branch(top, remote)
    patterns = ["HEAD", f"refs/heads/{branch}", *([f"refs/heads/{guess}"] if guess else [])]
    default, heads = _list_remote(top, end, patterns)
    where = _where(end.name, end.fetch_url, end.token)
    if branch in heads:
        _fetch(top, end, branch)
        gitrun.check(top, "checkout", "-q", "--no-track", "-B", branch, _tracking(remote, branch))
        return f"checked out {branch} at {_short(top, 'HEAD')}"
    chosen = base or default or guess
    if chosen is None:
        raise UserError(
            f"{where} has no default branch (is it empty?); push a first "
            f"commit to it, or name the branch to start {branch} from as the base branch"
        )
    if chosen not in heads:
        raise UserError(
            f"the base branch {chosen!r} does not exist on {where}; "
            f"name an existing branch as the base branch, or push {chosen!r} first"
        )
    _fetch(top, end, chosen)
    gitrun.check(top, "checkout", "-q", "--no-track", "-B", branch, _tracking(remote, chosen))
    return f"created {branch} from {remote}/{chosen}"


def push(
    root: Path,
    *,
    branch: str = "memento",
    remote: str = "origin",
    token: str | None = None,
    attempts: int = 5,
    backoff: Callable[[int], float] = jittered_backoff,
    sleep: Callable[[float], None] = time.sleep,
    endpoint: Endpoint | None = None,
) -> PushResult:
    """Push HEAD to ``<remote>/<branch>``, fast-forward only.

    Rejected because the branch moved: wait ``backoff(n)`` seconds, fetch, rebase the local
    commits onto the remote branch (authors, dates and messages kept; the committer is the
    local identity), and try again, ``attempts`` pushes in all. A rebase conflict is aborted
    and the local branch put back where it was when ``push`` was called: pushed=False, and the
    reason names the conflicting files. When ``<remote>/<branch>`` as last fetched already
    holds HEAD there is nothing to push: pushed=True, attempts=0, no network. A shallow clone
    whose history stops short of the fork point is deepened (``--unshallow``) for the rebase.
    Refused credentials, an unreachable remote or a remote that refuses the branch raise a
    ``UserError`` (``GitError`` for git failures; the token never appears in either).
    ``endpoint`` is the remote as read before any agent ran (default: as configured now)."""
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, not {attempts}")
    top = _work_tree(root)
    _refuse_rebase_in_progress(top)
    start = _head(top)
    if start is None:
        raise UserError(f"{top}: nothing to push, the branch has no commit yet; commit first")
    end = endpoint or read_endpoint(top, remote, token)
    upstream = _tracking(end.name, branch)
    if _contains(top, upstream, start):
        return PushResult(True, 0, False, start, "")
    head, last = start, ""
    for attempt in range(1, attempts + 1):
        last = _try_push(top, end, branch, head)
        if not last:
            return PushResult(True, attempt, head != start, head, "")
        if attempt == attempts:
            break
        sleep(backoff(attempt))
        _fetch(top, end, branch)
        _ensure_merge_base(top, end, upstream)
        conflict = _rebase(top, upstream, end.identity)
        if conflict:
            _restore(top, start)
            return PushResult(False, attempt, False, start, conflict)
        head = _head(top) or start
        if _contains(top, upstream, head):  # every local change was already there
            return PushResult(True, attempt, head != start, head, "")
    return PushResult(
        False,
        attempts,
        head != start,
        head,
        f"the push to {remote}/{branch} was rejected {attempts} times ({last}): the branch "
        "kept moving; nothing was pushed, the next run tries again",
    )


def fetch_branch(root: Path, endpoint: Endpoint, branch: str) -> str:
    """Fetch ``branch`` into its remote-tracking branch, deepening a shallow clone until
    it shares history with HEAD; returns that remote-tracking ref."""
    top = _work_tree(root)
    _fetch(top, endpoint, branch)
    tracking = _tracking(endpoint.name, branch)
    _ensure_merge_base(top, endpoint, tracking)
    return tracking


def remote_branches(root: Path, endpoint: Endpoint, branches: Sequence[str]) -> set[str]:
    """Which of ``branches`` the remote has, in one round trip."""
    _, heads = _list_remote(_work_tree(root), endpoint, [f"refs/heads/{b}" for b in branches])
    return heads & set(branches)


def default_branch(root: Path, endpoint: Endpoint) -> str:
    """The remote's default branch (what ``base-branch`` empty means)."""
    top = _work_tree(root)
    default, _ = _list_remote(top, endpoint, ["HEAD"])
    found = default or _local_default_branch(top, endpoint.name)
    if found is None:
        where = _where(endpoint.name, endpoint.fetch_url, endpoint.token)
        raise UserError(f"{where} names no default branch; set the base-branch input")
    return found


def replace_branch(root: Path, endpoint: Endpoint, branch: str, expected: str) -> str:
    """Push HEAD to ``branch`` in place of its history, only while the remote still holds
    ``expected`` there (``--force-with-lease``): "" when done, else why not."""
    top = _work_tree(root)
    head = _head(top) or ""
    done = _push(
        top,
        endpoint,
        [f"--force-with-lease=refs/heads/{branch}:{expected}"],
        [f"{head}:refs/heads/{branch}"],
    )
    if done.returncode == 0:
        gitrun.check(top, "update-ref", _tracking(endpoint.name, branch), head)
        return ""
    return _scrub(remote_said(done) or gitrun.reason(done), endpoint.token)


class SharedBranch:
    """A branch several workers commit to, each in its own clone, with the remote's branch
    as the one lock they share: a push lands only on the tip it was made on, so of two
    workers that claim a task at once exactly one lands, and the other, rejected, fetches
    and decides again (``engine/tick/steps.py`` does the deciding; this does the git).

    ``sync`` starts a tick from the remote's tip, after pushing any local commit (a human's)
    the remote lacks. ``publish`` pushes the tick's commits once; ``refresh`` drops them for
    the remote's tip after a rejection, for the tick to make them again on top of it."""

    def __init__(
        self,
        root: Path,
        *,
        branch: str,
        remote: str = "origin",
        token: str | None = None,
        attempts: int = WORKER_ATTEMPTS,
        backoff: Callable[[int], float] = worker_backoff,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.workspace = Workspace(root)
        self.top = self.workspace.root
        _check_branch_name(self.top, branch)
        self.branch = branch
        self.remote = remote
        self.token = token
        self.attempts = attempts
        self.backoff = backoff
        self.sleep = sleep
        #: Read now, before any agent runs: every fetch and push goes where this says.
        self.endpoint = read_endpoint(self.top, remote, token)
        #: The remote's tip as last fetched or pushed: HEAD there means nothing to push.
        self.tip: str | None = None
        #: Where git keeps an interrupted rebase, asked once: every tick looks there.
        self.rebase_paths = [_git_path(self.top, name) for name in REBASE_STATES]
        #: Where the fetched result refs are kept in this clone.
        self.fetched = f"refs/memento/fetched/{remote}/"
        #: And the waiting refs: a push deletes one only where it was fetched (a post of
        #: an older memento has none).
        self.fetched_waiting = f"refs/memento/fetched-waiting/{remote}/"
        #: Result refs to move with the next push, as (name, new sha, old sha): each result
        #: recorded on the commits in hand, noted as recorded.
        self.marks: list[tuple[str, str, str]] = []
        #: The result refs as last fetched, read once per fetch: a waiting worker asks for
        #: them several times a round.
        self._posted: list[Posted] | None = None
        #: Whether a result this worker posts asks for its next task in the same post:
        #: set by a caller that ticks again (``memento run``), for the next tick to find
        #: its task claimed (``carried``) instead of asking for one.
        self.carry = False
        #: The task claimed with the last result, for the next tick of this process.
        self.carried: Carried | None = None

    @classmethod
    def for_current_branch(cls, root: Path, *, remote: str = "origin") -> SharedBranch:
        """The branch checked out in ``root``, shared through ``remote``."""
        branch = Workspace(root).current_branch()
        if branch is None:
            raise UserError(
                f"{root}: HEAD is detached; check out the branch the workers share "
                "(`git switch <branch>`) before ticking with --push"
            )
        return cls(root, branch=branch, remote=remote)

    @property
    def upstream(self) -> str:
        return _tracking(self.remote, self.branch)

    def sync(self) -> str:
        """Bring the local branch to the remote's tip: local commits the remote lacks are
        pushed first (rebased onto it, as ``push`` does; a conflict is a ``UserError``), so
        none is lost. Returns one line saying what was done."""
        self._refuse_rebase_in_progress()
        if not self._fetch():
            return f"{self.remote}/{self.branch} does not exist yet; the first push creates it"
        head = self.workspace.quick_head()
        self.tip = gitrun.output(self.top, "rev-parse", "-q", "--verify", self.upstream) or None
        if head is not None and head != self.tip and not _contains(self.top, self.upstream, head):
            pushed = push(
                self.top,
                branch=self.branch,
                remote=self.remote,
                token=self.token,
                backoff=self.backoff,
                sleep=self.sleep,
                endpoint=self.endpoint,
            )
            if not pushed.pushed:
                raise UserError(
                    f"the local commits on {self.branch} could not be pushed: {pushed.reason}. "
                    f"Rebase them onto {self.remote}/{self.branch} by hand, then tick again"
                )
            self.tip = pushed.head
            return f"pushed the local commits to {self.remote}/{self.branch}"
        if self.tip is not None and head != self.tip:
            gitrun.check(self.top, "reset", "-q", "--hard", self.tip)
        return f"at {self.remote}/{self.branch} ({(self.tip or '')[:7]})"

    def refresh(self) -> None:
        """Fetch, and reset the branch and the work tree to the remote's tip, dropping the
        local commits not published (the engine's own: ``sync`` pushed everybody else's).
        The work tree must be clean; untracked files git does not track stay."""
        if self._fetch():
            self.tip = gitrun.output(self.top, "rev-parse", "-q", "--verify", self.upstream) or None
            if self.tip is not None:
                gitrun.check(self.top, "reset", "-q", "--hard", self.tip)

    def publish(self) -> bool:
        """Push HEAD once, fast-forward only, with the result refs it records noted as
        recorded, all or nothing: True when the remote branch now holds it, False when the
        branch, or one of those refs, had moved (another worker pushed first)."""
        head = self.workspace.quick_head()
        if head is None or (head == self.tip and not self.marks):
            return True
        waiting = self._fetched_waiting()
        moves = [(RESULTS + name, new, old) for name, new, old in self.marks]
        beside = [(_beside(waiting, name, old), old) for name, _, old in self.marks]
        deleted = [(listed, old) for listed, old in beside if listed is not None]
        moves += [(WAITING + listed, "", old) for listed, old in deleted]
        landed = not _try_push(self.top, self.endpoint, self.branch, head, moves)
        if landed:
            self.tip = head
            for name, new, _ in self.marks:
                gitrun.check(self.top, "update-ref", self.fetched + name, new)
            for listed, _ in deleted:
                gitrun.check(self.top, "update-ref", "-d", self.fetched_waiting + listed)
            self.marks = []
            self._posted = None
        return landed

    def post_result(self, name: str, tree_of: str, parent: str, message: str) -> str:
        """Post a result on this worker's own ref ``name``: a commit of ``tree_of``'s tree
        on ``parent`` with ``message``. Nobody else writes that ref, so the push does not
        race; it replaces the ref's last note. Returns the posted commit."""
        sha = self._commit(f"{tree_of}^{{tree}}", parent, message)
        listed = f"{time.time_ns() // 1_000_000:013d}-{name}"
        refspecs = [f"+{sha}:{RESULTS + name}", f"+{sha}:{WAITING + listed}"]
        done = _push(self.top, self.endpoint, ["--atomic"], refspecs)
        if done.returncode != 0:
            raise _network_failure("push a result to", self.endpoint, self.endpoint.push_url, done)
        # What the remote's refs now hold is known without a fetch: a waiting worker fetches
        # once they move from it, not to read back its own post.
        gitrun.check(self.top, "update-ref", self.fetched + name, sha)
        gitrun.check(self.top, "update-ref", self.fetched_waiting + listed, sha)
        self._posted = None
        return sha

    def withdraw(self, posted: str, name: str, message: str) -> bool:
        """Replace what this worker posted as ``posted`` on its ref ``name`` by a note with
        ``message``, only while the ref holds it: False when another worker noted it first
        (the note is on the remote branch by then, for the two land together)."""
        sha = self._commit(f"{posted}^{{tree}}", posted, message)
        ref, waiting = RESULTS + name, self._fetched_waiting()
        options = ["--atomic", f"--force-with-lease={ref}:{posted}"]
        refspecs = [f"{sha}:{ref}"]
        listed = _beside(waiting, name, posted)
        if listed is not None:
            options.append(f"--force-with-lease={WAITING + listed}:{posted}")
            refspecs.append(f":{WAITING + listed}")
        done = _push(self.top, self.endpoint, options, refspecs)
        if done.returncode == 0:
            if listed is not None:
                gitrun.check(self.top, "update-ref", "-d", self.fetched_waiting + listed)
            return True
        if _RACE.search(os.fsdecode(done.stdout)):
            return False
        raise _network_failure(
            "withdraw a request from", self.endpoint, self.endpoint.push_url, done
        )

    def waiting(self) -> tuple[str | None, dict[str, str]] | None:
        """The remote branch's tip and the posts waiting to be recorded there (worker ref
        name: posted commit, in the order they were posted), from one ``git ls-remote``;
        None when it cannot be read (the fetch that follows says why)."""
        url = self.endpoint.fetch_url
        head = f"refs/heads/{self.branch}"
        done = gitrun.run(
            self.top, "ls-remote", url, head, WAITING + "*", env=self.endpoint.auth(url), timeout=30
        )
        if done.returncode != 0:
            return None
        tip, waiting = None, []
        for line in os.fsdecode(done.stdout).splitlines():
            sha, _, listed = line.partition("\t")
            if listed == head:
                tip = sha
            elif listed.startswith(WAITING):
                stamp, name = _waiting_parts(listed.removeprefix(WAITING))
                waiting.append((stamp, name, sha))
        return tip, {name: sha for _, name, sha in sorted(waiting)}

    def _fetched_waiting(self) -> dict[str, tuple[str, str]]:
        """The waiting refs as last fetched (or as this worker posted them), by worker ref
        name: the waiting ref's own name, and the post."""
        out = gitrun.output(
            self.top, "for-each-ref", "--format=%(refname) %(objectname)", self.fetched_waiting
        )
        found = {}
        for line in out.splitlines():
            ref, _, sha = line.rpartition(" ")
            listed = ref.removeprefix(self.fetched_waiting)
            found[_waiting_parts(listed)[1]] = (listed, sha)
        return found

    def posted(self) -> list[Posted]:
        """The result refs as last fetched: each worker's last posted result or note."""
        if self._posted is None:
            fields = (
                "%(refname)%00%(objectname)%00%(parent)%00%(committerdate:unix)%00%(contents)%01"
            )
            out = gitrun.output(self.top, "for-each-ref", f"--format={fields}", self.fetched)
            found = []
            for entry in out.split("\x01"):
                parts = entry.lstrip("\n").split("\0", 4)
                if len(parts) == 5:
                    ref, sha, parent, at, message = parts
                    name = ref.removeprefix(self.fetched)
                    found.append(Posted(name, sha, parent, message, int(at or 0)))
            self._posted = found
        return list(self._posted)

    def note(self, posted: Posted, message: str) -> None:
        """Move ``posted``'s ref with the next push to a note on top of it: it is recorded.
        The note's parent is the result, so the move lands only while the ref holds it."""
        sha = self._commit(f"{posted.sha}^{{tree}}", posted.sha, message)
        self.marks.append((posted.name, sha, posted.sha))

    def _commit(self, tree: str, parent: str, message: str) -> str:
        config = ("commit.gpgSign=false", *self.endpoint.identity)
        out = gitrun.check(
            self.top,
            "commit-tree",
            tree,
            "-p",
            parent,
            "-F",
            "-",
            config=config,
            stdin=message.encode(),
        )
        return os.fsdecode(out).strip()

    def wait(self, attempt: int, *, urgent: bool = False, cap: float = URGENT_CAP) -> None:
        """Pause after failed attempt ``attempt`` (1, 2, ...), before trying again.

        ``urgent`` is for a result, the work of a whole agent run: a rejection there means
        another worker landed a moment ago, and the way to land next is to be quick, so the
        first waits are a few milliseconds (enough that two rejected together part). They
        double, jittered, up to ``URGENT_CAP``: with many results arriving at once, the
        rejected spread out and land one after another instead of all racing again. A claim
        waits the full backoff, which also leaves the branch to the results for a while.
        ``cap`` lowers the ceiling of an urgent wait: a worker polling for its result."""
        if urgent:
            self.sleep(backoff.jittered(attempt, base=URGENT_JITTER, cap=cap, floor=0.0))
        else:
            self.sleep(self.backoff(attempt))

    def remote_tip(self) -> str | None:
        """The remote branch's commit as it is now, from one ``git ls-remote`` of its ref:
        cheap enough for an idle worker to ask every second. None when it cannot be read
        (the next tick says why)."""
        url = self.endpoint.fetch_url
        ref = f"refs/heads/{self.branch}"
        done = gitrun.run(self.top, "ls-remote", url, ref, env=self.endpoint.auth(url), timeout=30)
        words = os.fsdecode(done.stdout).split() if done.returncode == 0 else []
        return words[0] if words else None

    def _fetch(self) -> bool:
        """Fetch the branch and every result ref (those gone from the remote go here too:
        only what the remote holds is ever recorded); False when the remote has no such
        branch. The results waiting to be noted were for the commits fetched over."""
        self.marks = []
        self._posted = None
        done = _run_fetch(
            self.top,
            self.endpoint,
            self.branch,
            f"+{RESULTS}*:{self.fetched}*",
            f"+{WAITING}*:{self.fetched_waiting}*",
            "--prune",
        )
        if done.returncode == 0:
            return True
        if "couldn't find remote ref" in os.fsdecode(done.stderr).lower():
            return False
        raise _network_failure("fetch from", self.endpoint, self.endpoint.fetch_url, done)

    def _refuse_rebase_in_progress(self) -> None:
        if any(path.is_dir() for path in self.rebase_paths):
            raise UserError(
                f"{self.top}: a rebase is in progress (an interrupted run?); finish it or run "
                "`git rebase --abort`, then try again"
            )


# -- the steps ------------------------------------------------------------------------------


def _waiting_parts(listed: str) -> tuple[str, str]:
    """A waiting ref's name (``<milliseconds>-<worker>``) as its stamp and its worker."""
    stamp, _, name = listed.partition("-")
    return stamp, name


def _beside(waiting: dict[str, tuple[str, str]], name: str, posted: str) -> str | None:
    """The name of ``name``'s waiting ref (in ``waiting``, as fetched) standing beside the
    post ``posted``; None when there is none."""
    listed, sha = waiting.get(name, ("", ""))
    return listed if listed and sha == posted else None


def _push(top: Path, end: Endpoint, options: Sequence[str], refspecs: Sequence[str]) -> gitrun.Ran:
    """One push to the push URL read before: no hooks, tags, submodules or signing of the
    user's, its outcome per ref on stdout (``--porcelain``)."""
    url = end.push_url
    return gitrun.run(
        top,
        "push",
        "--porcelain",
        "--no-verify",
        "--no-follow-tags",
        "--recurse-submodules=no",
        *options,
        url,
        *refspecs,
        config=(*_NETWORK_CONFIG, "push.gpgSign=false"),
        env=end.auth(url),
    )


def _try_push(
    top: Path,
    end: Endpoint,
    branch: str,
    head: str,
    moves: Sequence[tuple[str, str, str]] = (),
) -> str:
    """Push ``head`` once, to the push URL read before: "" when the remote has it (the
    remote-tracking branch is moved to it, as a push to the remote's name would), the
    rejection's reason when the branch moved. ``moves`` are other refs (ref, new, old) to
    move in the same push, all or nothing, each only from ``old``."""
    url, token = end.push_url, end.token
    leases = [f"--force-with-lease={ref}:{old}" for ref, _, old in moves]
    done = _push(
        top,
        end,
        ["--atomic", *leases] if moves else [],
        [f"{head}:refs/heads/{branch}", *(f"{new}:{ref}" for ref, new, _ in moves)],
    )
    lines = [line.split("\t") for line in os.fsdecode(done.stdout).splitlines()]
    statuses = [
        line for line in lines if len(line) == 3 and line[1].endswith(f":refs/heads/{branch}")
    ]
    if done.returncode == 0 and statuses and statuses[0][0] != "!":
        gitrun.check(top, "update-ref", _tracking(end.name, branch), head)
        return ""
    if not statuses:
        raise _network_failure("push to", end, url, done)
    refused = [line for line in lines if len(line) == 3 and line[0] == "!"]
    summary = _scrub(statuses[0][2], token)  # "[rejected] (fetch first)"
    if refused and all(_RACE.search(line[2]) for line in refused):
        return summary.rpartition("(")[2].rstrip(")") if summary.endswith(")") else summary
    summary = _scrub("; ".join(line[2] for line in refused) or summary, token)
    said = _scrub(remote_said(done), token)
    fix = (
        "A change of .github/workflows/ needs a token with the `workflows` permission"
        if "`workflows` permission" in said
        else f"Allow this token to push to {branch} (branch protection rules, `permissions: "
        "contents: write`) or choose another branch"
    )
    quoted = f" (“{said}”)" if said else ""
    raise PushRefused(
        f"{_where(end.name, url, token)} refused the push to {branch}: {summary}{quoted}. {fix}",
        said or summary,
    )


def _run_fetch(top: Path, end: Endpoint, branch: str, *more: str) -> gitrun.Ran:
    """Fetch ``branch`` from the fetch URL read before, into its remote-tracking branch;
    ``more`` are further refspecs and options."""
    options = [arg for arg in more if arg.startswith("--")]
    return gitrun.run(
        top,
        "fetch",
        "-q",
        "--no-tags",
        "--recurse-submodules=no",
        *options,
        end.fetch_url,
        f"+refs/heads/{branch}:{_tracking(end.name, branch)}",
        *(arg for arg in more if not arg.startswith("--")),
        config=_NETWORK_CONFIG,
        env=end.auth(end.fetch_url),
    )


def _fetch(top: Path, end: Endpoint, branch: str) -> None:
    done = _run_fetch(top, end, branch)
    if done.returncode != 0:
        raise _network_failure("fetch from", end, end.fetch_url, done)


def _list_remote(top: Path, end: Endpoint, patterns: list[str]) -> tuple[str | None, set[str]]:
    """The remote's default branch (None if it names none) and which of ``patterns``'
    branches exist, in one round trip."""
    url = end.fetch_url
    done = gitrun.run(top, "ls-remote", "--symref", url, *patterns, env=end.auth(url))
    if done.returncode != 0:
        raise _network_failure("list the branches of", end, url, done)
    default: str | None = None
    heads: set[str] = set()
    for line in os.fsdecode(done.stdout).splitlines():
        value, _, name = line.partition("\t")
        if value.startswith("ref: refs/heads/") and name == "HEAD":
            default = value.removeprefix("ref: refs/heads/")
        elif name.startswith("refs/heads/"):
            heads.add(name.removeprefix("refs/heads/"))
    if default is not None:
        heads.add(default)  # the symref's own line only shows when a pattern names it
    return default, heads


def _ensure_merge_base(top: Path, end: Endpoint, upstream: str) -> None:
    """A rebase needs the fork point; a shallow clone may lack it, so deepen it once."""
    if gitrun.run(top, "merge-base", "HEAD", upstream).returncode == 0:
        return
    if gitrun.output(top, "rev-parse", "--is-shallow-repository") == "true":
        done = gitrun.run(
            top,
            "fetch",
            "-q",
            "--no-tags",
            "--unshallow",
            end.fetch_url,
            config=_NETWORK_CONFIG,
            env=end.auth(end.fetch_url),
        )
        if done.returncode != 0:
            raise _network_failure("fetch the full history from", end, end.fetch_url, done)
        if gitrun.run(top, "merge-base", "HEAD", upstream).returncode == 0:
            return
    raise GitError(
        f"the local branch and {upstream.removeprefix('refs/remotes/')} share no history, so "
        f"the local commits cannot be rebased onto it; start again from the remote branch"
    )


def _rebase(top: Path, upstream: str, identity: tuple[str, ...]) -> str:
    """Rebase HEAD onto ``upstream``: "" when done, or, for a conflict (aborted, no rebase
    left in progress), a sentence naming the files and the commit that conflicted."""
    done = gitrun.run(
        top,
        "rebase",
        "-q",
        "--no-autosquash",
        "--rebase-merges",  # a merge of the base branch stays a merge (github/delivery.py)
        upstream,
        config=(*_REBASE_CONFIG, *identity),
    )
    if done.returncode == 0:
        return ""
    if not _rebase_in_progress(top):
        raise GitError(
            f"git rebase onto {upstream.removeprefix('refs/remotes/')} failed in {top}: "
            f"{gitrun.reason(done)}. Is the working tree clean (`git status`)?"
        )
    files = gitrun.output(top, "diff", "--name-only", "--diff-filter=U", "-z")
    conflicted = [name for name in files.split("\0") if name]
    subject = gitrun.output(top, "log", "-1", "--format=%s", "REBASE_HEAD")
    onto = _short(top, upstream)
    gitrun.check(top, "rebase", "--abort")
    where = ", ".join(conflicted) if conflicted else gitrun.reason(done)
    return (
        f"the local commit {subject!r} conflicts with {upstream.removeprefix('refs/remotes/')} "
        f"({onto}) in {where}; nothing was pushed, the next run starts from the remote branch"
    )


def _restore(top: Path, sha: str) -> None:
    """Put the branch back at ``sha`` (an earlier attempt's rebase may have moved it)."""
    if _head(top) != sha:
        gitrun.check(top, "reset", "-q", "--keep", sha)


# -- reading the repository -----------------------------------------------------------------


def _work_tree(root: Path) -> Path:
    return Workspace(root).root


def _head(top: Path) -> str | None:
    return gitrun.output(top, "rev-parse", "-q", "--verify", "HEAD^{commit}") or None


def _short(top: Path, ref: str) -> str:
    return gitrun.output(top, "rev-parse", "--short=7", ref)


def _contains(top: Path, ref: str, sha: str) -> bool:
    """True when ``ref`` exists and ``sha`` is in its history."""
    return gitrun.run(top, "merge-base", "--is-ancestor", sha, ref).returncode == 0


def _tracking(remote: str, branch: str) -> str:
    return f"refs/remotes/{remote}/{branch}"


def _remote_url(top: Path, remote: str, *, push: bool = False) -> str:
    done = gitrun.run(top, "remote", "get-url", *(["--push"] if push else []), remote)
    if done.returncode != 0:
        raise UserError(
            f"{top}: no remote named {remote!r}; add it with `git remote add {remote} <url>` "
            "or name the remote to use"
        )
    return os.fsdecode(done.stdout).splitlines()[0].strip()


def _local_default_branch(top: Path, remote: str) -> str | None:
    target = gitrun.output(top, "symbolic-ref", "-q", f"refs/remotes/{remote}/HEAD")
    prefix = f"refs/remotes/{remote}/"
    return target.removeprefix(prefix) if target.startswith(prefix) else None


def _check_branch_name(top: Path, name: str) -> None:
    if not name or gitrun.run(top, "check-ref-format", f"refs/heads/{name}").returncode != 0:
        raise UserError(f"{name!r} is not a valid branch name; choose another")


def _refuse_rebase_in_progress(top: Path) -> None:
    if _rebase_in_progress(top):
        raise UserError(
            f"{top}: a rebase is in progress (an interrupted run?); finish it or run "
            "`git rebase --abort`, then try again"
        )


def _rebase_in_progress(top: Path) -> bool:
    return any(_git_path(top, name).is_dir() for name in REBASE_STATES)


def _git_path(top: Path, name: str) -> Path:
    path = Path(gitrun.output(top, "rev-parse", "--git-path", name))
    return path if path.is_absolute() else top / path


# -- auth and messages ----------------------------------------------------------------------


def _basic_credentials(token: str) -> str:
    return base64.b64encode(f"x-access-token:{token}".encode()).decode("ascii")


def _header_url(remote_url: str) -> str | None:
    """The http.<url> key for ``remote_url``: the URL without user info, query or fragment
    (the most specific key git can match, so that it wins over any configured for the host);
    None for a URL that is not http(s)."""
    if "://" not in remote_url:
        return None
    parts = urlsplit(remote_url)
    if parts.scheme.lower() not in ("http", "https"):
        return None
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme.lower()}://{host}{parts.path or '/'}"


def _where(remote: str, url: str, token: str | None) -> str:
    """The remote as messages name it: its name and URL, without credentials or the token."""
    return f"{remote} ({_scrub(_URL_USERINFO.sub('', url), token)})"


def remote_said(done: gitrun.Ran) -> str:
    """What the remote itself said about a refused push (its ``remote:`` lines, as one
    line), when it said anything: GitHub names the rule a push broke there."""
    lines = [line.strip() for line in os.fsdecode(done.stderr).splitlines()]
    said = [line.removeprefix("remote:").strip() for line in lines if line.startswith("remote:")]
    said = [line.removeprefix("error:").strip() for line in said]
    return " ".join(line for line in said if line and not line.startswith("Resolving deltas"))


def _scrub(text: str, token: str | None) -> str:
    """``text`` without the token, its header form, or credentials written in a URL."""
    if token:
        text = text.replace(_basic_credentials(token), "***").replace(token, "***")
    return _URL_USERINFO.sub("***@", text)


def _network_failure(action: str, end: Endpoint, url: str, done: gitrun.Ran) -> UserError:
    token = end.token
    reason = _scrub(gitrun.reason(done), token)
    where = _where(end.name, url, token)
    if _AUTH_FAILURE.search(_scrub(os.fsdecode(done.stderr), token)):
        return UserError(
            f"could not {action} {where}: the remote refused the credentials ({reason}). "
            "Pass a token that may read and push to the repository (in a workflow: "
            "`permissions: contents: write` and the github-token input)"
        )
    return NetworkError(
        f"could not {action} {where}: {reason}. Check the remote's URL (`git remote -v`) "
        "and the network"
    )
