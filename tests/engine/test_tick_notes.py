"""Notes in a real tick's prompt: many long global notes (never marked read, so in every
prompt) take at most the notes budget, the newest first, and the prompt says where the rest
are (the security issue's class 8: five notes of 20,000 characters made a 104 KB prompt)."""

from __future__ import annotations

from pathlib import Path

from testing.ticks import good, make_project

BUDGET = 8 * 1024  # engine/prompt.py's NOTES_BUDGET


def notes(*bodies: tuple[str, str]) -> str:
    """HUMAN_NOTES.md with global notes of (time, text)."""
    parts = ["# HUMAN NOTES\n\n## Active Notes\n"]
    parts += [f"\n### [NOTE] {time} → global\n{text}\n" for time, text in bodies]
    return "".join(parts) + "\n## Archive\n"


def long_note(label: str) -> str:
    text = (label + " " + "y" * 20_000)[:20_000]
    return "\n".join(text[start : start + 100] for start in range(0, len(text), 100))


def prompt_of_a_tick(tmp_path: Path, human_notes: str) -> str:
    project = make_project(tmp_path, files={"docs/HUMAN_NOTES.md": human_notes})
    saved = tmp_path / "prompt.md"
    project.script({"T-101": [{"save_prompt": str(saved)}, *good("T-101")]})
    assert project.tick().returncode == 0
    return saved.read_text(encoding="utf-8")


def test_five_long_global_notes_take_the_notes_budget_and_the_newest_is_shown(
    tmp_path: Path,
) -> None:
    bodies = [(f"2025-01-1{day}T10:00:00Z", long_note(f"GLOBAL-{day}")) for day in range(1, 6)]
    without = prompt_of_a_tick(tmp_path / "without", notes())

    prompt = prompt_of_a_tick(tmp_path / "with", notes(*bodies))

    assert len(prompt.encode()) <= len(without.encode()) + BUDGET
    assert "> GLOBAL-5 yyy" in prompt
    assert "GLOBAL-1" not in prompt
    assert "4 more notes are not shown here" in prompt
    assert "read them in `docs/HUMAN_NOTES.md`" in prompt
