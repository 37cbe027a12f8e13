"""The series' own small git repository: the files the series touches,
copied from the tree (which is never written), one commit per patch."""
from __future__ import annotations

import hashlib
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from sem2mutex.errors import SeriesError
from sem2mutex.tools.git import fast_import, git, user_config

BASE_TAG = "sem2mutex-base"


@dataclass
class PendingCommit:
    message: str
    files: dict[str, bytes | None]  # path -> content, only the changed ones; None: deleted


@dataclass
class MiniRepo:
    """A git repository of the files the series touches.

    Every commit is queued, and the queue goes to git as one `git
    fast-import` stream before git is next asked anything: the base and
    seventy-odd patches cost one git run, and no index is kept (nothing
    here asks git about the working tree: MiniRepo knows what it
    committed, by digest).
    """

    path: Path
    identity: str
    committed: dict[str, str] = field(default_factory=dict)  # path -> digest at HEAD
    pending: list[PendingCommit] = field(default_factory=list)
    born: bool = True  # the branch has a commit

    def git(self, *args: str, input_text: str | None = None) -> str:
        self.flush()
        return self.run_git(*args, input_text=input_text)

    def run_git(self, *args: str, input_text: str | None = None) -> str:
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
        repo = cls(path, identity, born=False)
        repo.run_git("init", "-q")
        repo.commit("base: the files the series touches, as in the tree", "")
        repo.git("tag", BASE_TAG)
        return repo

    def working_tree(self) -> list[str]:
        """The files under the repository, .git aside."""
        found = []
        for top, dirs, names in os.walk(self.path):
            if top == str(self.path):
                dirs[:] = [d for d in dirs if d != ".git"]  # thousands of objects
            found += [os.path.relpath(os.path.join(top, n), self.path) for n in names
                      if os.path.isfile(os.path.join(top, n))]
        return sorted(found)

    def uncommitted(self) -> list[str]:
        """Files whose content differs from HEAD, or that HEAD has and the
        working tree lacks (none once every change is committed)."""
        present = self.working_tree()
        changed = [rel for rel in present
                   if self.committed.get(rel) != digest_of(self.path / rel)]
        return sorted(changed + sorted(set(self.committed) - set(present)))

    def commit(self, subject: str, body: str, files: list[str] | None = None) -> bool:
        """Commit FILES (default: every change); False if there was nothing."""
        message = f"{subject}\n\n{body}\n"
        if files is None:
            files = self.uncommitted()
        return self.queue(message, files)

    def queue(self, message: str, files: list[str]) -> bool:
        changed: dict[str, bytes | None] = {}
        for rel in files:
            if not (self.path / rel).is_file():
                if rel in self.committed:
                    changed[rel] = None
                    del self.committed[rel]
                continue
            data = (self.path / rel).read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            if self.committed.get(rel) != digest:
                changed[rel] = data
                self.committed[rel] = digest
        if not changed:
            return False
        self.pending.append(PendingCommit(cleanup_message(message), changed))
        return True

    def flush(self) -> None:
        """Write the queued commits onto the current branch."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        branch = self.run_git("symbolic-ref", "-q", "HEAD").strip()
        head = self.run_git("rev-parse", "HEAD").strip() if self.born else ""
        name, email = split_identity(self.identity)
        stamp = f"{int(time.time())} {utc_offset()}"
        stream = bytearray()
        for n, commit in enumerate(pending):
            message = commit.message.encode()
            stream += (f"commit {branch}\n"
                       f"author {name} <{email}> {stamp}\n"
                       f"committer {name} <{email}> {stamp}\n"
                       f"data {len(message)}\n").encode() + message + b"\n"
            if n == 0 and head:
                stream += f"from {head}\n".encode()
            for rel, data in sorted(commit.files.items()):
                if data is None:
                    stream += f"D {rel}\n".encode()
                    continue
                mode = "100755" if os.access(self.path / rel, os.X_OK) else "100644"
                stream += f"M {mode} inline {rel}\ndata {len(data)}\n".encode() + data + b"\n"
            stream += b"\n"
        fast_import(self.path, bytes(stream), (name, email))
        self.born = True


def digest_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cleanup_message(message: str) -> str:
    """What `git commit -F` stores of MESSAGE (its "whitespace" cleanup):
    no trailing blanks, no leading, trailing or repeated empty lines."""
    lines = [line.rstrip() for line in message.splitlines()]
    kept: list[str] = []
    for line in lines:
        if line or (kept and kept[-1]):
            kept.append(line)
    while kept and not kept[-1]:
        kept.pop()
    return "\n".join(kept) + "\n" if kept else ""


def utc_offset() -> str:
    """The local offset from UTC as git writes it (+0100)."""
    seconds = time.localtime().tm_gmtoff
    sign = "-" if seconds < 0 else "+"
    minutes = abs(seconds) // 60
    return f"{sign}{minutes // 60:02d}{minutes % 60:02d}"


def split_identity(identity: str) -> tuple[str, str]:
    name, _, rest = identity.partition("<")
    email = rest.rstrip(">").strip()
    if not name.strip() or "@" not in email:
        raise SeriesError(f"identity {identity!r} is not of the form 'Name <email>'")
    return name.strip(), email


def default_identity() -> str | None:
    name, email = user_config("user.name"), user_config("user.email")
    return f"{name} <{email}>" if name and email else None
