"""Progress lines on stderr for long steps; silent with -q.  With -v, a
breakdown at the end: the time of each stage and the slowest files."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, TextIO


@dataclass
class Progress:
    quiet: bool = False
    verbose: bool = False
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    _started: float = field(default_factory=time.monotonic)
    stages: list[tuple[str, float]] = field(default_factory=list)
    # seconds spent on each file, by what it was given to (spatch, the lexer)
    file_seconds: dict[str, dict[str, float]] = field(default_factory=dict)

    def step(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.monotonic() - self._started
            print(f"sem2mutex: [{elapsed:6.1f}s] {message}", file=self.stream, flush=True)

    def count(self, label: str, done: int, total: int) -> None:
        self.step(f"{label}: {done}/{total} files")

    def warn(self, message: str) -> None:
        """Warnings are shown even with -q: they need a human."""
        print(f"sem2mutex: warning: {message}", file=self.stream, flush=True)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as stage NAME (for the -v breakdown)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.stages.append((name, time.monotonic() - started))

    def spent_on(self, what: str, seconds: dict[str, float]) -> None:
        mine = self.file_seconds.setdefault(what, {})
        for f, s in seconds.items():
            mine[f] = mine.get(f, 0.0) + s

    def timings(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for name, seconds in self.stages:
            totals[name] = round(totals.get(name, 0.0) + seconds, 1)
        return totals

    def breakdown(self, slowest: int = 8) -> None:
        """With -v: where the time went."""
        if not self.verbose:
            return
        total = time.monotonic() - self._started
        print(f"sem2mutex: time by stage ({total:.1f}s in all):", file=self.stream)
        for name, seconds in self.timings().items():
            print(f"sem2mutex:   {seconds:7.1f}s  {name}", file=self.stream)
        for what, per_file in sorted(self.file_seconds.items()):
            top = sorted(per_file.items(), key=lambda kv: -kv[1])[:slowest]
            if top:
                print(f"sem2mutex: slowest files ({what}):", file=self.stream)
                for f, s in top:
                    print(f"sem2mutex:   {s:7.1f}s  {f}", file=self.stream)
        self.stream.flush()
