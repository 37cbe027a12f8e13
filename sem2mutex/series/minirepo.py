"""The series' own small git repository: the files the series touches,
copied from the tree (which is never written), one commit per patch."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.errors import SeriesError
from sem2mutex.tools.git import git, user_config

BASE_TAG = "sem2mutex-base"


@dataclass
class MiniRepo:
    """A git repository of the files the series touches."""

    path: Path
    identity: str

    def git(self, *args: str, input_text: str | None = None) -> str:
        done = git(self.path, *args, check=False, input_text=input_text,
                   identity=split_identity(self.identity))
        if done.returncode != 0:
            raise SeriesError(f"git {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done.stdout

    @classmethod
    def create(cls, path: Path, tree: Path, files: list[str], identity: str) -> "MiniRepo":
        for rel in files:
            dest = path / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(tree / rel, dest)
        repo = cls(path, identity)
        repo.git("init", "-q")
        repo.git("add", "-A")
        repo.git("commit", "-q", "-m", "base: the files the series touches, as in the tree")
        repo.git("tag", BASE_TAG)
        return repo

    def commit(self, subject: str, body: str, files: list[str] | None = None) -> bool:
        """Commit FILES (default: every change); False if there was nothing."""
        self.git("add", "-A", "--", *(files or ["."]))
        # git commit refuses an empty commit: one git less than asking first
        done = git(self.path, "commit", "-q", "-F", "-", check=False,
                   input_text=f"{subject}\n\n{body}\n", identity=split_identity(self.identity))
        if done.returncode == 0:
            return True
        if "nothing to commit" in done.stdout + done.stderr or \
                "nothing added to commit" in done.stdout + done.stderr:
            return False
        raise SeriesError(f"git commit failed: {done.stderr.strip() or done.stdout.strip()}")


def split_identity(identity: str) -> tuple[str, str]:
    name, _, rest = identity.partition("<")
    email = rest.rstrip(">").strip()
    if not name.strip() or "@" not in email:
        raise SeriesError(f"identity {identity!r} is not of the form 'Name <email>'")
    return name.strip(), email


def default_identity() -> str | None:
    name, email = user_config("user.name"), user_config("user.email")
    return f"{name} <{email}>" if name and email else None
