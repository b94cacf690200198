"""The fake GitHub most of these tests run against: one repository, alice its admin, set up
as the README's checklist says (Actions may open pull requests); every other policy is
GitHub's default (``testing/fake_policies.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testing.fake_github import FakeGitHub


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub("octo/project", "ghs_test_token_0123456789") as server:
        server.set_permission("alice", "admin")
        server.set_policy(actions_may_open_pulls=True)
        yield server
