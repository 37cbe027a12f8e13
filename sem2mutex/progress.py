"""Progress lines on stderr for long steps; silent with -q."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO


@dataclass
class Progress:
    quiet: bool = False
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    _started: float = field(default_factory=time.monotonic)

    def step(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.monotonic() - self._started
            print(f"sem2mutex: [{elapsed:6.1f}s] {message}", file=self.stream, flush=True)

    def count(self, label: str, done: int, total: int) -> None:
        self.step(f"{label}: {done}/{total} files")

    def warn(self, message: str) -> None:
        """Warnings are shown even with -q: they need a human."""
        print(f"sem2mutex: warning: {message}", file=self.stream, flush=True)
