"""Subject prefixes in the style each subsystem uses ("net: hinic: ...").

Debian's source tree has no git history to learn them from, so they come
from the path, by the conventions documented in each subsystem's
MAINTAINERS entry or maintainer profile.  The first matching rule wins;
{name} is the path component after the rule's directory.
"""
from __future__ import annotations

# (path prefix, subject prefix); longer prefixes first where they overlap.
RULES: tuple[tuple[str, str], ...] = (
    ("drivers/net/ethernet/", "net: {name}"),
    ("drivers/net/wireless/", "wifi: {name}"),
    ("drivers/net/", "net: {name}"),
    ("net/", "net: {name}"),
    ("drivers/infiniband/ulp/", "RDMA/{name}"),
    ("drivers/infiniband/hw/", "RDMA/{name}"),
    ("drivers/infiniband/core/", "RDMA/core"),
    ("drivers/scsi/", "scsi: {name}"),
    ("drivers/target/", "scsi: target"),
    ("drivers/ufs/", "scsi: ufs"),
    ("drivers/usb/gadget/", "usb: gadget"),
    ("drivers/usb/", "usb: {name}"),
    ("drivers/media/", "media: {name}"),
    ("drivers/gpu/drm/", "drm/{name}"),
    ("drivers/video/fbdev/", "fbdev: {name}"),
    ("drivers/hid/", "HID"),
    ("drivers/input/", "Input: {name}"),
    ("drivers/platform/x86/", "platform/x86: {name}"),
    ("drivers/firmware/efi/", "efi"),
    ("drivers/firmware/", "firmware: {name}"),
    ("drivers/xen/", "xen/{name}"),
    ("drivers/md/bcache/", "bcache"),
    ("drivers/md/", "dm"),
    ("drivers/staging/", "staging: {name}"),
    ("drivers/crypto/", "crypto: {name}"),
    ("drivers/char/ipmi/", "ipmi"),
    ("drivers/acpi/", "ACPI"),
    ("drivers/mmc/", "mmc: {name}"),
    ("drivers/nfc/", "nfc: {name}"),
    ("drivers/mux/", "mux"),
    ("drivers/parport/", "parport"),
    ("drivers/comedi/", "comedi: {name}"),
    ("drivers/cpufreq/", "cpufreq: {name}"),
    ("drivers/macintosh/", "macintosh: {name}"),
    ("drivers/", "{name}"),
    ("sound/soc/", "ASoC: {name}"),
    ("sound/", "ALSA: {name}"),
    ("fs/xfs/", "xfs"),
    ("fs/btrfs/", "btrfs"),
    ("fs/", "{name}"),
    ("kernel/printk/", "printk"),
    ("kernel/locking/", "locking/{name}"),
    ("kernel/", "{name}"),
    ("arch/x86/", "x86/{name}"),
    ("arch/", "{name}"),
    ("include/drm/", "drm"),
    ("include/linux/", "{name}"),
)


def component_after(path: str, prefix: str) -> str:
    rest = path[len(prefix):]
    name = rest.split("/", 1)[0]
    if "." in name:  # a file directly in the directory
        name = name.rsplit(".", 1)[0]
    return name.replace("_", "-") if prefix.startswith("drivers/net/") else name


def subject_prefix(path: str) -> str:
    for prefix, template in RULES:
        if path.startswith(prefix):
            if prefix == "drivers/net/ethernet/":
                # drivers/net/ethernet/VENDOR/DRIVER/...: name the driver.
                parts = path[len(prefix):].split("/")
                name = parts[1] if len(parts) > 2 else parts[0].rsplit(".", 1)[0]
                return f"net: {name}"
            return template.format(name=component_after(path, prefix))
    return path.split("/", 1)[0]
