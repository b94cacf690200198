"""Bodies cut to fit GitHub's limit (counted in bytes), and GitHub's own words when it
refuses a body anyway."""

from __future__ import annotations

import pytest

from memento_gh.github import bodies
from memento_gh.github.failures import SyncError
from memento_gh.github.sync import GitHub
from testing.fake_github import FakeGitHub

URL = "https://github.com/o/n/actions/runs/7"


def test_a_body_that_fits_is_left_as_it_is() -> None:
    text = "é" * (bodies.LIMIT // 2)
    assert bodies.fit(text, URL) == text


@pytest.mark.parametrize("char", ["a", "é", "🙂"])
def test_a_long_body_is_cut_in_bytes_to_whole_lines_with_a_pointer(char: str) -> None:
    text = "".join(f"{n} {char * 200}\n" for n in range(2000))
    cut = bodies.fit(text, URL)
    assert len(cut.encode("utf-8")) <= bodies.LIMIT
    assert cut.startswith("0 ")
    assert cut.rstrip().endswith(f"[the run's logs]({URL}).")
    kept = cut.split("\n\n… cut to fit")[0]
    assert all(line.endswith(char) for line in kept.splitlines())  # no half line


def test_a_cut_closes_the_fence_and_the_details_it_was_in() -> None:
    text = "<details><summary>verify</summary>\n\n````text\n" + "x" * 100 + "\n" * 70_000
    cut = bodies.fit(text + "````\n\n</details>\n", None)
    assert "\n````\n\n</details>\n\n… cut to fit GitHub's limit of 65,536 characters.\n" in cut
    assert len(cut.encode("utf-8")) <= bodies.LIMIT


def test_a_body_github_refuses_is_reported_in_githubs_own_words() -> None:
    with FakeGitHub("o/n", "t0ken") as fake:
        fake.set_policy(body_limit=1000)  # stricter than what memento cuts to
        fake.add_issue("T-201 BLOCKED", "<!-- memento:task=T-201 -->")
        github = GitHub(fake.url, "t0ken", "o/n", pace=False, backoff=0.001)
        with pytest.raises(SyncError) as raised:
            github.comment(1, "x" * 2000)
    said = str(raised.value)
    assert "Body is too long (maximum is 1000 characters)" in said
    assert "bug in memento-gh" not in said
