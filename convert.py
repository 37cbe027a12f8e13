#!/usr/bin/env python3
"""sem2mutex: audit and convert the struct semaphore users of a Linux tree.

Run ./convert.py --help for the options; the stages live in sem2mutex/.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sem2mutex.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
