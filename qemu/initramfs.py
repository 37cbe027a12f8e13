"""Build qemu/init.c and pack it as the only program of a newc initramfs.

The initramfs is passed to QEMU with -initrd, so changing /init never
rebuilds the kernel.  We write the cpio ourselves: it needs a device node
(/dev/console), which `cpio` could only copy from a real one.
"""
from __future__ import annotations

import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from qemu.files import write_atomic
from qemu.errors import InitramfsError

INIT_SOURCE = Path(__file__).resolve().parent / "init.c"
CONSOLE_MAJOR, CONSOLE_MINOR = 5, 1
NEWC_MAGIC = "070701"


@dataclass(frozen=True)
class CpioEntry:
    name: str
    mode: int  # file type bits included
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Initramfs:
    init_binary: Path
    archive: Path


def build_initramfs(work_dir: Path, log_path: Path) -> Initramfs:
    """Compile /init (static) and pack it; both land in work_dir."""
    work_dir.mkdir(parents=True, exist_ok=True)
    binary = work_dir / "init"
    compile_init(INIT_SOURCE, binary, log_path)
    archive = work_dir / "initramfs.cpio"
    write_atomic(archive, pack_newc(initramfs_entries(binary.read_bytes())))
    return Initramfs(binary, archive)


def compile_init(source: Path, binary: Path, log_path: Path) -> None:
    tmp = binary.with_name(binary.name + ".tmp")
    cmd = ["gcc", "-static", "-Os", "-Wall", "-Wextra", "-Werror", "-o", str(tmp), str(source)]
    with open(log_path, "a") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise InitramfsError(f"compiling {source} failed; see {log_path}")
    tmp.replace(binary)


def initramfs_entries(init_program: bytes) -> list[CpioEntry]:
    return [
        CpioEntry("dev", stat.S_IFDIR | 0o755),
        CpioEntry("dev/console", stat.S_IFCHR | 0o600, rdev=(CONSOLE_MAJOR, CONSOLE_MINOR)),
        CpioEntry("proc", stat.S_IFDIR | 0o555),
        CpioEntry("init", stat.S_IFREG | 0o755, init_program),
    ]


def pack_newc(entries: list[CpioEntry]) -> bytes:
    """A "new ASCII" (newc) cpio archive, the format the kernel unpacks."""
    out = bytearray()
    for ino, entry in enumerate(entries, start=1):
        out += _newc_record(ino, entry)
    out += _newc_record(0, CpioEntry("TRAILER!!!", 0))
    return bytes(out)


def _newc_record(ino: int, entry: CpioEntry) -> bytes:
    name = entry.name.encode() + b"\0"
    nlink = 2 if stat.S_ISDIR(entry.mode) else 1
    fields = [ino, entry.mode, 0, 0, nlink, 0, len(entry.data),
              0, 0, entry.rdev[0], entry.rdev[1], len(name), 0]
    header = NEWC_MAGIC + "".join(f"{value:08x}" for value in fields)
    record = header.encode() + name
    record += b"\0" * (-len(record) % 4)
    record += entry.data
    record += b"\0" * (-len(record) % 4)
    return record
