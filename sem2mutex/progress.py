"""Progress lines on stderr for long steps; silent with -q.  With -v, a
breakdown at the end: the time of each stage, wall and processor, and the
slowest files."""
from __future__ import annotations

import resource
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
    # processor seconds by stage: what the wall time would be on one core
    processor: dict[str, float] = field(default_factory=dict)
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
        started, used = time.monotonic(), processor_seconds()
        try:
            yield
        finally:
            self.stages.append((name, time.monotonic() - started))
            self.processor[name] = self.processor.get(name, 0.0) + processor_seconds() - used

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
        total, used = time.monotonic() - self._started, processor_seconds()
        print(f"sem2mutex: time by stage ({total:.1f}s in all, {used:.1f}s of processor "
              "time):", file=self.stream)
        print(f"sem2mutex: {'wall':>10}  {'processor':>9}  stage", file=self.stream)
        for name, seconds in self.timings().items():
            print(f"sem2mutex:   {seconds:7.1f}s  {self.processor[name]:8.1f}s  {name}",
                  file=self.stream)
        for what, per_file in sorted(self.file_seconds.items()):
            top = sorted(per_file.items(), key=lambda kv: -kv[1])[:slowest]
            if top:
                print(f"sem2mutex: slowest files ({what}):", file=self.stream)
                for f, s in top:
                    print(f"sem2mutex:   {s:7.1f}s  {f}", file=self.stream)
        self.stream.flush()


def processor_seconds() -> float:
    """User and system time of this process and of the children it has
    waited for: a spatch counts in the stage it ends in (the lexing a
    stage starts ahead of the next counts in the next)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
