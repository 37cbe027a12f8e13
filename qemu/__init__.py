"""QEMU build-and-boot harness: the proof stage of sem2mutex.

Entry point: `qemu.harness.build_and_boot(BootRequest(...))`, or
`python3 -m qemu.harness --help` from the repository root.
"""
