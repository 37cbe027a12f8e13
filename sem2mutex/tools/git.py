"""git, the one place it is started from.

sem2mutex's own repositories (the series' small repository, the verify
scratch copy) must not depend on the user's git configuration (signing,
hooks, templates, format.* options that would change the patches), so
every command runs with the system and global configuration switched off,
in the C locale, under a fixed identity unless one is given.  Only
user_config() reads the user's configuration: the default identity of the
patches is theirs.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from sem2mutex.errors import GitError, MissingTool

DEFAULT_IDENTITY = ("sem2mutex", "sem2mutex@sem2mutex.invalid")


def isolated_env(identity: tuple[str, str] = DEFAULT_IDENTITY) -> dict[str, str]:
    name, email = identity
    return dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C",
                GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email,
                GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email)


def check_git() -> None:
    if shutil.which("git") is None:
        raise MissingTool("git not found on PATH: apt-get install git")


def git(repo: Path, *args: str, check: bool = True, input_text: str | None = None,
        identity: tuple[str, str] = DEFAULT_IDENTITY) -> subprocess.CompletedProcess:
    """Run `git ARGS` in REPO; a failure raises GitError unless CHECK is off."""
    done = subprocess.run(["git", *args], cwd=repo, env=isolated_env(identity),
                          capture_output=True, text=True, errors="replace", input=input_text,
                          stdin=None if input_text is not None else subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise GitError(f"git {' '.join(args[:3])} failed in {repo}: "
                       f"{(done.stderr or done.stdout).strip()[:2000]}")
    return done


def fast_import(repo: Path, stream: bytes, identity: tuple[str, str] = DEFAULT_IDENTITY
                ) -> None:
    """Feed STREAM to `git fast-import` in REPO: many commits, one git.
    Objects are stored uncompressed: REPO is a scratch repository that
    lives for one run (a third faster for the series' 7 MB base)."""
    done = subprocess.run(["git", "-c", "core.compression=0", "fast-import", "--quiet"],
                          cwd=repo,
                          env=isolated_env(identity), input=stream, capture_output=True)
    if done.returncode != 0:
        raise GitError(f"git fast-import failed in {repo}: "
                       f"{done.stderr.decode(errors='replace').strip()[:2000]}")


def hash_objects(repo: Path, paths: list[str]) -> list[str]:
    """git hash-object of PATHS (relative to REPO), in order."""
    done = subprocess.run(["git", "hash-object", "--stdin-paths"], cwd=repo,
                          env=isolated_env(), input="".join(f"{p}\n" for p in paths),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise GitError(f"git hash-object failed in {repo}: {done.stderr.strip()[:500]}")
    return done.stdout.split()


def user_config(key: str) -> str:
    """A value of the user's own git configuration, or ""."""
    if shutil.which("git") is None:
        return ""
    done = subprocess.run(["git", "config", "--get", key], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    return done.stdout.strip()


def nul_split(text: str) -> list[str]:
    return [item for item in text.split("\0") if item]
