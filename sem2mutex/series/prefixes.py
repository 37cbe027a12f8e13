"""Subject prefixes in the style each subsystem uses ("net: hinic: ...").

Debian's source tree has no git history to learn them from, so they come
from the path, by the conventions of each subsystem's log and maintainer
profile: a driver is named by its directory or file ("wifi: ath6kl",
"ASoC: nau8824", "scsi: esas2r"), a few subsystems spell it their own way
("ARM: versatile", "MIPS: Octeon", "powerpc/powernv", "drm/omap"), and
Input and crypto put " - " rather than ": " before the summary.

The first matching rule wins (longer prefixes first where they overlap).
In a template, {1} is the path component after the rule's directory and
{2} the one after that; a component that is the file itself counts
without its extension.  A rule that needs a {2} the path does not have is
skipped.
"""
from __future__ import annotations

import os

RULES: tuple[tuple[str, str], ...] = (
    ("drivers/net/ethernet/", "net: {2}"),
    ("drivers/net/ethernet/", "net"),
    ("drivers/net/wireless/", "wifi: {2}"),
    ("drivers/net/wireless/", "wifi"),
    ("drivers/net/", "net: {1}"),
    ("net/core/", "net"),
    ("net/9p/", "net/9p"),
    ("net/", "{1}"),
    ("drivers/infiniband/ulp/", "IB/{1}"),
    ("drivers/infiniband/hw/", "RDMA/{1}"),
    ("drivers/infiniband/core/", "RDMA/core"),
    ("drivers/infiniband/", "RDMA"),
    ("drivers/scsi/", "scsi: {1}"),
    ("drivers/scsi/", "scsi"),
    ("drivers/target/iscsi/", "scsi: target: iscsi"),
    ("drivers/target/", "scsi: target"),
    ("drivers/ufs/core/", "scsi: ufs: core"),
    ("drivers/ufs/", "scsi: ufs: {1}"),
    ("drivers/ufs/", "scsi: ufs"),
    ("drivers/usb/gadget/", "usb: gadget: {2}"),
    ("drivers/usb/gadget/", "usb: gadget"),
    ("drivers/usb/", "usb: {2}"),
    ("drivers/usb/", "usb: {1}"),
    ("drivers/usb/", "usb"),
    ("drivers/media/dvb-core/", "media: dvb-core"),
    ("drivers/media/", "media: {2}"),
    ("drivers/media/", "media: {1}"),
    ("drivers/media/", "media"),
    ("drivers/gpu/drm/omapdrm/", "drm/omap"),
    ("drivers/gpu/drm/amd/", "drm/{1}"),
    ("drivers/gpu/drm/", "drm/{1}"),
    ("drivers/gpu/drm/", "drm"),
    ("include/drm/", "drm"),
    ("drivers/video/fbdev/", "fbdev: {1}"),
    ("drivers/video/fbdev/", "fbdev"),
    ("drivers/hid/hid-", "HID: {1}"),
    ("drivers/hid/", "HID"),
    ("drivers/input/", "Input: {2}"),
    ("drivers/input/", "Input"),
    ("drivers/platform/x86/intel/", "platform/x86/intel/{1}"),
    ("drivers/platform/x86/", "platform/x86: {1}: {2}"),
    ("drivers/platform/x86/", "platform/x86: {1}"),
    ("drivers/platform/x86/", "platform/x86"),
    ("drivers/firmware/efi/", "efi"),
    ("drivers/firmware/", "firmware: {1}: {2}"),
    ("drivers/firmware/", "firmware: {1}"),
    ("drivers/firmware/", "firmware"),
    ("drivers/xen/xenbus/", "xen/xenbus"),
    ("drivers/xen/", "xen/{1}"),
    ("drivers/xen/", "xen"),
    ("drivers/md/bcache/", "bcache"),
    ("drivers/md/", "dm"),
    ("drivers/staging/", "staging: {1}"),
    ("drivers/staging/", "staging"),
    ("drivers/crypto/", "crypto: {1}"),
    ("drivers/crypto/", "crypto"),
    ("drivers/char/ipmi/", "ipmi"),
    ("drivers/acpi/", "ACPI: {1}"),
    ("drivers/acpi/", "ACPI"),
    ("drivers/mmc/host/", "mmc: {1}"),
    ("drivers/mmc/", "mmc"),
    ("drivers/nfc/", "nfc: {1}"),
    ("drivers/nfc/", "nfc"),
    ("drivers/mux/", "mux"),
    ("drivers/parport/", "parport"),
    ("drivers/comedi/drivers/", "comedi: {1}"),
    ("drivers/comedi/", "comedi"),
    ("drivers/cpufreq/", "cpufreq: {1}"),
    ("drivers/cpufreq/", "cpufreq"),
    ("drivers/macintosh/", "macintosh/{1}"),
    ("drivers/macintosh/", "macintosh"),
    ("drivers/misc/cxl/", "cxl"),
    ("drivers/misc/", "misc: {1}"),
    ("drivers/misc/", "misc"),
    ("drivers/", "{1}"),
    ("sound/soc/codecs/", "ASoC: {1}"),
    ("sound/soc/codecs/", "ASoC: codecs"),
    ("sound/soc/", "ASoC: {1}"),
    ("sound/soc/", "ASoC"),
    ("sound/", "ALSA: {1}"),
    ("sound/", "ALSA"),
    ("fs/xfs/", "xfs"),
    ("fs/btrfs/", "btrfs"),
    ("fs/", "{1}"),
    ("kernel/printk/", "printk"),
    ("kernel/locking/", "locking/{1}"),
    ("kernel/", "{1}"),
    ("arch/x86/kernel/cpu/", "x86/cpu"),
    ("arch/x86/platform/", "x86/platform/{1}"),
    ("arch/x86/", "x86/{1}"),
    ("arch/x86/", "x86"),
    ("arch/arm/mach-", "ARM: {1}"),
    ("arch/arm/", "ARM"),
    ("arch/mips/cavium-octeon/", "MIPS: Octeon"),
    ("arch/mips/", "MIPS"),
    ("arch/powerpc/platforms/", "powerpc/{1}"),
    ("arch/powerpc/", "powerpc"),
    ("arch/", "{1}"),
    ("include/linux/", "{1}"),
)

# Subsystems whose summary follows " - " rather than ": " after a driver
# name ("Input: hp_sdc_rtc - ...", "crypto: ux500 - ...").
DASH_SUBSYSTEMS = ("Input: ", "crypto: ")


def components_after(path: str, prefix: str) -> list[str]:
    """The components of PATH after PREFIX, the file's without extension.
    A PREFIX that ends inside a component ("arch/arm/mach-", "drivers/hid/
    hid-") leaves the rest of that component as the first."""
    rest = path[len(prefix):].split("/") if path.startswith(prefix) else []
    if rest and "." in rest[-1]:
        rest[-1] = rest[-1].rsplit(".", 1)[0]
    return [c for c in rest if c]


def subject_prefix(path: str) -> str:
    """The prefix of a patch about PATH (a file or a directory)."""
    for prefix, template in RULES:
        if not (path.startswith(prefix) or path + "/" == prefix):
            continue
        parts = components_after(path, prefix)
        if ("{2}" in template and len(parts) < 2) or ("{1}" in template and not parts):
            continue
        return template.format("", *parts[:2]) if parts else template
    return path.split("/", 1)[0]


def common_prefix(paths: list[str]) -> str:
    """One prefix for a patch about several files: theirs if they agree,
    else that of the directory they share."""
    prefixes = {subject_prefix(p) for p in paths}
    if len(prefixes) == 1:
        return prefixes.pop()
    shared = os.path.commonpath([os.path.dirname(p) or "." for p in paths])
    return subject_prefix(shared) if shared not in ("", ".") else sorted(prefixes)[0]


def subject_line(prefix: str, summary: str) -> str:
    """'net: hinic: Convert ...', 'Input: hp_sdc_rtc - Use ...'."""
    if prefix.startswith(DASH_SUBSYSTEMS):
        return f"{prefix} - {summary}"
    return f"{prefix}: {summary}"
