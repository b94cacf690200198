"""Hypothesis strategies that write whole plans and remember what they wrote.

A generated plan holds, next to its lines and line endings, what a correct reader must
find in it: the Meta entries, the phases and the real tasks (never the task-looking lines
that sit inside code fences or HTML comments), with the line and columns of each value,
so that a test can say which bytes an edit must change without asking the scanner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from memento_gh.plan.meta import META_KEYS
from memento_gh.plan.model import TASK_FIELDS

# -- text pieces ----------------------------------------------------------------------------

WORDS = (
    "Setup",
    "schema",
    "JWT",
    "naïve",
    "C#",
    "x86-64",
    "a/b",
    "50%",
    "`code`",
    "**bold**",
    "<br>",
    "&amp;",
    "[link](x)",
    "数据库",
    "迁移脚本",
    "認証",
    "テスト",
    "全角\u3000空白",
    "e\u0301",
    "🚀",
    "✅",
    "🐍",
    "🇫🇷",
    "👩\u200d💻",
    "tab\there",
    "-->",
    "<!--",
)
#: characters that other tools (``str.splitlines``, ``\s``) treat as breaks or blanks
ODD = ("\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029", "\u00a0", "\u3000", "\ufeff")
FIRST_WORDS = ("Build", "Fix", "Über", "数据", "テスト", "Phase", "Meta", "Note")

free_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp"))
    | st.sampled_from(ODD),
    max_size=12,
)
words = st.lists(st.sampled_from(WORDS) | free_text.filter(bool), min_size=1, max_size=6).map(
    " ".join
)
trailing = st.sampled_from(("", "", "", " ", "  ", "\t", " \t "))
separator = st.sampled_from((" ", " ", "  ", "\t"))


def _clean(text: str) -> str:
    """One line's worth of text without surrounding spaces or tabs (may be empty)."""
    return text.replace("\r", " ").replace("\n", " ").strip(" \t")


one_line = words.map(_clean)
value_text = one_line.filter(bool)
comment_text = one_line.filter(lambda text: "-->" not in text)
heading_text = one_line.map(lambda text: text.rstrip(" \t#"))


@st.composite
def prose(draw: st.DrawFn) -> str:
    """A paragraph line: starts with a letter, so it is never structure."""
    first = draw(st.sampled_from(FIRST_WORDS))
    rest = draw(st.one_of(st.just(""), one_line.map(lambda text: " " + text)))
    return first + rest + draw(trailing)


# -- values ---------------------------------------------------------------------------------

FIELD_VALUES = {
    "verify": (
        "`pytest -q`",
        '`cd src && npm test -- --grep "db-schema" && echo PASS`',
        "`make 测试`",
        "`` grep -q `x` file ``",
    ),
    "context_files": ("[src/db/schema.ts, src/db/migrations/]", "[文档/*.md]", "[`a b/*`]"),
    "guard_files": ("[]", "[src/auth/*]", "[tests/**, 設定/*]"),
    "estimate": ("5min", "30s", "2h", "1h30min", "10 min"),
    "retries": ("0", "1", "3", "12"),
    "depends": ("[T-101]", "none", "[T-1, T-2]"),
    "timeout": ("15min", "90s"),
    "claimed": ("2025-01-15T14:35:00Z runner-1", "2031-12-31T23:59:59Z 工人-7"),
}
META_VALUES = {
    "created": ("2025-01-15",),
    "last_architect_edit": ("2025-01-15T14:30:00",),
    "tick_mode": ("auto", "paused", "stopped"),
    "architect": ("off", "auto"),
    "stale_lock_timeout": ("15min",),
    "clean_strategy": ("git-clean", "git-stash"),
    "clean_ignore": (".memento_cleanignore",),
    "status_archive_dir": ("logs/status_archive/", "日志/归档/"),
    "blocked_ratio_limit": ("0.3", "30%"),
    "min_free_disk": ("500MB", "1GiB"),
    "max_file_size": ("5MB", "100kB"),
}


def field_value(key: str) -> st.SearchStrategy[str]:
    return st.sampled_from(FIELD_VALUES.get(key, ("x",))) | value_text


def meta_value(key: str) -> st.SearchStrategy[str]:
    plausible = META_VALUES.get(key, ("0", "3", "200"))
    return st.sampled_from(plausible) | value_text.filter(lambda text: "<!--" not in text)


# -- what a plan holds ----------------------------------------------------------------------


@dataclass(frozen=True)
class FieldLine:
    """A ``- key: value`` line of a task or of Meta: ``prefix + value + suffix``."""

    key: str
    value: str
    line: int
    prefix: str
    suffix: str

    def with_value(self, value: str) -> str:
        """The line holding another value. Filling an empty value adds the space that
        ``key: value`` needs after the colon, and before a comment that follows."""
        if not self.value:
            if not self.prefix.endswith((" ", "\t")):
                value = " " + value
            if self.suffix.startswith("<!--"):
                value += " "
        return self.prefix + value + self.suffix


@dataclass(frozen=True)
class MetaLine(FieldLine):
    """A Meta line: a comment after spaces keeps its column when the value changes (the
    spaces take up the difference, one always left)."""

    def with_value(self, value: str) -> str:
        gap = len(self.suffix) - len(self.suffix.lstrip(" "))
        if not self.value or not gap or not self.suffix[gap:].startswith("<!--"):
            return super().with_value(value)
        padding = " " * max(1, len(self.value) + gap - len(value))
        return self.prefix + value + padding + self.suffix[gap:]


@dataclass(frozen=True)
class TaskSpec:
    id: str
    marker: str
    module: str | None
    description: str
    phase: int
    line: int
    box_col: int
    fields: dict[str, FieldLine]
    #: indentation and bullet of the field lines (what a new field line starts with)
    field_bullet: str

    @property
    def last_line(self) -> int:
        return max([self.line, *(found.line for found in self.fields.values())])


@dataclass(frozen=True)
class PhaseSpec:
    number: int
    title: str
    line: int
    parallel: bool | None
    depends: tuple[int, ...] | None
    task_ids: tuple[str, ...]


@dataclass(frozen=True)
class GeneratedPlan:
    lines: tuple[str, ...]
    eols: tuple[str, ...]
    bom: bool
    title: str
    meta_line: int
    meta: dict[str, MetaLine]
    phases: tuple[PhaseSpec, ...]
    tasks: tuple[TaskSpec, ...]

    @property
    def text(self) -> str:
        body = "".join(line + eol for line, eol in zip(self.lines, self.eols, strict=True))
        return ("\ufeff" if self.bom else "") + body


@dataclass
class _Draft:
    lines: list[str] = field(default_factory=list)
    meta: dict[str, MetaLine] = field(default_factory=dict)
    phases: list[PhaseSpec] = field(default_factory=list)
    tasks: list[TaskSpec] = field(default_factory=list)
    ids: int = 0

    def add(self, line: str) -> int:
        self.lines.append(line)
        return len(self.lines) - 1

    def next_id(self, style: str) -> str:
        self.ids += 1
        return style.format(self.ids)


# -- blocks that hide task-looking lines ----------------------------------------------------

DECOYS = (
    "- [ ] `T-901` [MODULE:fake] not a task, it is code",
    "- [x] `T-902` done? no, quoted",
    "* [~] `T-903` [MODULE:fake] running nowhere",
    "  - [!] `T-904` nested decoy",
    "- [?] unknown marker would be an error",
    "1. [ ] `T-905` numbered task would be an error",
    "## Phase 99: Not a phase",
    "# Not the title",
    "## Meta",
    "<!-- parallel: false -->",
    "<!-- depends: Phase 42 -->",
    "- max_retries: 99",
    "  - retries: 77",
    "  - claimed: 2000-01-01T00:00:00Z ghost",
    "<!--",
    "a -> b and a --!> b",
    "-- ->",
    "<details>",
    "> - [ ] `T-906` quoted",
    "",
    "   ",
)


@st.composite
def fence(draw: st.DrawFn, indent: str = "") -> list[str]:
    """A fenced code block full of decoys, closed by a same-or-longer run."""
    char = draw(st.sampled_from("`~"))
    length = draw(st.integers(3, 6))
    opener = char * length
    if char == "`":
        info = draw(st.sampled_from(("", "markdown", " md ", "python title='x'", "~~~")))
    else:
        info = draw(st.sampled_from(("", "markdown", "md `with` ticks", "```")))
    other = "~" if char == "`" else "`"
    decoys = (*DECOYS, char * (length - 1), other * 3, f"{char * length}x", "-->")
    body = draw(st.lists(st.sampled_from(decoys) | free_text, max_size=5))
    body = [line for line in body if not _closes(line, char, length)]
    closer = char * draw(st.integers(length, length + 2)) + draw(trailing)
    # at most one space at the margin: two would put the fence inside a list item above it
    pad = draw(st.sampled_from(("", "", " "))) if not indent else ""
    return [
        f"{indent}{pad}{opener}{info}",
        *(f"{indent}{line}" for line in body),
        f"{indent}{pad}{closer}",
    ]


def _closes(line: str, char: str, length: int) -> bool:
    body = line.strip(" \t")
    return len(body) >= length and not body.strip(char)


@st.composite
def html_comment(draw: st.DrawFn, indent: str = "") -> list[str]:
    """A multi-line HTML comment full of decoys."""
    opener = draw(st.sampled_from(("<!--", "<!-- note:", "<!-- - [ ] `T-907` commented out")))
    decoys = (*DECOYS, "```", "~~~~")
    body = draw(st.lists(st.sampled_from(decoys) | free_text, max_size=5))
    body = [line for line in body if "-->" not in line]
    closer = draw(st.sampled_from(("-->", "end -->", "  -->", "--> after")))
    return [f"{indent}{opener}", *(f"{indent}{line}" for line in body), f"{indent}{closer}"]


@st.composite
def noise(draw: st.DrawFn) -> list[str]:
    """What may sit between tasks at the left margin: nothing is a task in here."""
    kind = draw(st.sampled_from(("blank", "blank", "prose", "fence", "comment", "note", "h3")))
    if kind == "prose":
        return ["", *draw(st.lists(prose(), min_size=1, max_size=3)), ""]
    if kind == "fence":
        return ["", *draw(fence()), ""]
    if kind == "comment":
        return ["", *draw(html_comment()), ""]
    if kind == "note":
        return [f"<!-- note: {draw(comment_text)} -->"]
    if kind == "h3":
        return ["", f"### {draw(heading_text)}", ""]
    return [draw(st.sampled_from(("", "", "  ", "\t")))]


def _extend(draft: _Draft, lines: list[str]) -> None:
    for line in lines:
        draft.add(line)


# -- sections -------------------------------------------------------------------------------


@st.composite
def _meta_section(draw: st.DrawFn, draft: _Draft) -> int:
    heading = draft.add(draw(st.sampled_from(("## Meta", "## Meta ", "## meta"))))
    keys = draw(st.lists(st.sampled_from(sorted(META_KEYS)), unique=True, max_size=8))
    for key in keys:
        if draw(st.integers(0, 5)) == 0:
            _extend(draft, draw(st.one_of(fence(), html_comment(), st.just([""]))))
        bullet = draw(st.sampled_from(("- ", "- ", "-  ")))
        value = "" if draw(st.integers(0, 9)) == 0 else draw(meta_value(key))
        prefix = f"{bullet}{key}:{draw(separator)}"
        suffix = draw(trailing)
        if draw(st.booleans()):
            pad = draw(st.sampled_from((" ", "    ", "\t")))
            comment = f"<!-- {draw(comment_text)} -->{draw(trailing)}"
            # the spaces before the comment belong to an empty value's prefix
            prefix, suffix = (prefix, pad + comment) if value else (prefix + pad, comment)
        elif not value:
            prefix, suffix = f"{bullet}{key}:{suffix}", ""
        line = draft.add(prefix + value + suffix)
        draft.meta[key] = MetaLine(key, value, line, prefix, suffix)
    return heading


PHASE_HEADINGS = (
    ("## Phase {n}: {title}", True),
    ("## Phase {n} - {title}", True),
    ("## phase {n}. {title}", True),
    ("## Phase {n}：{title}", True),
    ("## Phase {n} — {title}", True),
    ("## Phase {n}: {title} ##", True),
    ("##\tPhase {n}:\t{title}", True),
    ("## Phase {n}", False),
)


@st.composite
def _phase(draw: st.DrawFn, draft: _Draft, number: int, index: int) -> None:
    template, titled = draw(st.sampled_from(PHASE_HEADINGS))
    title = draw(heading_text) if titled else ""
    line = draft.add(template.format(n=number, title=title))
    title = title.strip()
    parallel = depends = None
    settings = draw(st.permutations(("parallel", "depends")))
    for setting in settings[: draw(st.integers(0, 2))]:
        if draw(st.booleans()):
            draft.add("")
        if setting == "parallel":
            word = draw(st.sampled_from(("true", "false", "True", "yes", "no")))
            parallel = word.lower() in ("true", "yes")
            draft.add(
                draw(st.sampled_from(("<!-- parallel: {} -->", "<!--parallel:{}-->"))).format(word)
            )
        else:
            depends = tuple(
                draw(st.lists(st.integers(1, max(1, number - 1)), unique=True, max_size=2))
            )
            names = ", ".join(f"Phase {needed}" for needed in depends) or draw(
                st.sampled_from(("none", "None"))
            )
            draft.add(f"<!-- depends: {names} -->")
    task_ids = []
    for _ in range(draw(st.integers(0, 4))):
        _extend(draft, draw(noise()))
        task_ids.append(draw(_task(draft, index)))
    _extend(draft, draw(noise()))
    draft.phases.append(PhaseSpec(number, title, line, parallel, depends, tuple(task_ids)))


MODULES = (None, "core", "database", "auth", "認証", "ui-kit", "a.b")
ID_STYLES = ("T-{}", "T-{}", "API.{}", "fix_{}", "X{}")


@st.composite
def _task(draw: st.DrawFn, draft: _Draft, phase: int) -> str:
    task_id = draft.next_id(draw(st.sampled_from(ID_STYLES)))
    box = draw(st.sampled_from(" x!~-X"))
    module = draw(st.sampled_from(MODULES))
    bullet = draw(st.sampled_from("--*+"))
    gap = draw(st.sampled_from((" ", " ", "\t", "  ")))
    description = draw(st.just("") | words)
    if description.lstrip().startswith("[MODULE"):
        description = "x " + description
    head = f"{bullet} [{box}] `{task_id}`"
    if module is not None:
        head += f"{gap}[MODULE:{module}]"
    text = f"{head}{gap}{description}" if description else head
    line = draft.add(text + draw(trailing))
    field_bullet = draw(st.sampled_from(("  ", "    ", "\t", "   "))) + "- "
    keys = draw(st.permutations(TASK_FIELDS))[: draw(st.integers(0, len(TASK_FIELDS)))]
    hidden_at = draw(st.integers(-1, len(keys)))
    fields: dict[str, FieldLine] = {}
    for position, key in enumerate([*keys, None]):
        if position == hidden_at:
            indent = field_bullet[:-2]
            _extend(draft, draw(st.one_of(fence(indent), html_comment(indent))))
        if key is None:
            break
        colon = draw(st.sampled_from((":", ":", ":", " :", "\t:")))
        if draw(st.integers(0, 9)) == 0:
            after = draw(st.sampled_from(("", " ")))
            value, prefix, suffix = "", f"{field_bullet}{key}{colon}{after}", ""
        else:
            value = draw(field_value(key))
            prefix, suffix = f"{field_bullet}{key}{colon}{draw(separator)}", draw(trailing)
        fields[key] = FieldLine(key, value, draft.add(prefix + value + suffix), prefix, suffix)
    draft.tasks.append(
        TaskSpec(
            id=task_id,
            marker="x" if box == "X" else box,
            module=module,
            description=description.strip(),
            phase=phase,
            line=line,
            box_col=3,
            fields=fields,
            field_bullet=field_bullet,
        )
    )
    return task_id


EOL_MODES = ("lf", "crlf", "cr", "mixed")


@st.composite
def plans(draw: st.DrawFn, max_phases: int = 4) -> GeneratedPlan:
    """A whole plan: maybe a preamble, the title, Meta, phases with tasks and noise between
    them, maybe a Notes section; then line endings, a BOM or not, a final newline or not."""
    draft = _Draft()
    if draw(st.booleans()):
        _extend(draft, draw(st.one_of(fence(), html_comment(), prose().map(lambda line: [line]))))
    title = f"MASTER_PLAN: {draw(heading_text)}".strip(" \t")
    draft.add(f"# {title}")
    draft.add("")
    meta_line = draw(_meta_section(draft))
    draft.add("")
    if draw(st.booleans()):
        _extend(draft, ["---", ""])
    for index in range(draw(st.integers(1, max_phases))):
        draw(_phase(draft, index + 1, index))
    if draw(st.booleans()):
        _extend(draft, ["## Notes", "", "- [ ] remember to celebrate 🎉"])
        for block in draw(st.lists(noise(), max_size=3)):
            _extend(draft, block)
    lines = draft.lines
    final_newline = draw(st.integers(0, 3)) > 0
    if not final_newline:
        while lines and lines[-1] == "":
            lines.pop()
    eols = _line_endings(draw, lines, draw(st.sampled_from(EOL_MODES)))
    if not final_newline:
        eols[-1] = ""
    return GeneratedPlan(
        lines=tuple(lines),
        eols=tuple(eols),
        bom=draw(st.booleans()),
        title=title,
        meta_line=meta_line,
        meta=draft.meta,
        phases=tuple(draft.phases),
        tasks=tuple(draft.tasks),
    )


def _line_endings(draw: st.DrawFn, lines: list[str], mode: str) -> list[str]:
    if mode != "mixed":
        return [{"lf": "\n", "crlf": "\r\n", "cr": "\r"}[mode]] * len(lines)
    eols = draw(
        st.lists(st.sampled_from(("\n", "\r\n", "\r")), min_size=len(lines), max_size=len(lines))
    )
    # A lone CR, then an empty line ending in LF, reads back as one CRLF. Empty lines never
    # end in a bare LF here, so no edit can bring such a pair together either.
    return [
        "\r\n" if eol == "\n" and not line else eol for line, eol in zip(lines, eols, strict=True)
    ]
