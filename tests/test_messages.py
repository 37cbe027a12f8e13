"""The commit messages: subject prefixes, bodies a maintainer would take,
and what a reviewer's verdict adds to them."""
from __future__ import annotations

import pytest

from sem2mutex.model import Instance, Location, Reason, SemClass, Verdict
from sem2mutex.series.messages import conversion_message
from sem2mutex.series.prefixes import common_prefix, subject_line, subject_prefix
from sem2mutex.series.rewrite import COUNTING, MUTEX, InstanceRewrite, RewriteResult
from sem2mutex.series.units import ConversionUnit, unit_key
from sem2mutex.tools.maintainers import FALLBACK_SECTION

IDENTITY = "Series Test <series-test@sem2mutex.invalid>"


@pytest.mark.parametrize("path, prefix", [
    ("drivers/net/ethernet/huawei/hinic/hinic_dev.h", "net: hinic"),
    ("drivers/net/ethernet/micrel/ksz884x.c", "net: ksz884x"),
    ("drivers/net/wireless/ath/ath6kl/core.h", "wifi: ath6kl"),
    ("drivers/net/wireless/cisco/airo.c", "wifi: airo"),
    ("sound/soc/codecs/nau8824.c", "ASoC: nau8824"),
    ("drivers/hid/hid-core.c", "HID: core"),
    ("drivers/input/serio/hil_mlc.c", "Input: hil_mlc"),
    ("drivers/comedi/drivers/vmk80xx.c", "comedi: vmk80xx"),
    ("drivers/gpu/drm/omapdrm/dss/dsi.c", "drm/omap"),
    ("drivers/media/usb/em28xx/em28xx-dvb.c", "media: em28xx"),
    ("drivers/mmc/host/cavium-thunderx.c", "mmc: cavium-thunderx"),
    ("drivers/platform/x86/intel/ifs/core.c", "platform/x86/intel/ifs"),
    ("drivers/platform/x86/amd/hsmp.c", "platform/x86: amd: hsmp"),
    ("drivers/firmware/tegra/bpmp.c", "firmware: tegra: bpmp"),
    ("drivers/firmware/ti_sci.c", "firmware: ti_sci"),
    ("drivers/ufs/core/ufs-sysfs.c", "scsi: ufs: core"),
    ("arch/arm/mach-versatile/spc.c", "ARM: versatile"),
    ("arch/mips/cavium-octeon/flash_setup.c", "MIPS: Octeon"),
    ("arch/powerpc/platforms/powernv/opal-async.c", "powerpc/powernv"),
    ("arch/x86/kernel/cpu/intel.c", "x86/cpu"),
    ("arch/x86/platform/uv/bios_uv.c", "x86/platform/uv"),
    ("net/rxrpc/call_object.c", "rxrpc"),
    ("net/9p/trans_rdma.c", "net/9p"),
    ("drivers/xen/pvcalls-back.c", "xen/pvcalls-back"),
    ("kernel/printk/printk.c", "printk"),
])
def test_subject_prefix_follows_the_subsystem(path, prefix):
    assert subject_prefix(path) == prefix


def test_one_prefix_for_a_patch_of_several_files():
    assert common_prefix(["sound/soc/codecs/nau8824.c", "sound/soc/codecs/nau8825.c"]) == \
        "ASoC: codecs"
    assert common_prefix(["drivers/usb/class/usbtmc.c", "drivers/usb/misc/usblcd.c"]) == "usb"
    assert common_prefix(["drivers/net/ethernet/huawei/hinic/hinic_dev.h",
                          "drivers/net/ethernet/huawei/hinic/hinic_main.c"]) == "net: hinic"


def test_input_and_crypto_put_a_dash_before_the_summary():
    assert subject_line("Input: hil_mlc", "Use x") == "Input: hil_mlc - Use x"
    assert subject_line("crypto: ux500", "Use x") == "crypto: ux500 - Use x"
    assert subject_line("net: hinic", "Use x") == "net: hinic: Use x"


class Sections:
    """Maintainers.section_for() for a few paths."""

    def __init__(self, sections: dict[str, str]):
        self.sections = sections

    def section_for(self, path: str) -> str:
        return self.sections.get(path, FALLBACK_SECTION)


def test_the_rest_is_split_by_the_code_that_uses_a_shared_header():
    def field(name, header, user):
        from sem2mutex.model import Site
        return Instance(id=f"field:struct x.{name}", kind="field", name=name, struct="struct x",
                        file=header, decls=[Location(header, 3)],
                        sites=[Site(Location(user, 10), "f", "down")])
    ufs = field("host_sem", "include/ufs/ufshcd.h", "drivers/ufs/core/ufs-sysfs.c")
    hil = field("isem", "include/linux/hil_mlc.h", "drivers/input/serio/hil_mlc.c")
    bpmp = field("lock", "include/soc/tegra/bpmp.h", "drivers/firmware/tegra/bpmp.c")
    m = Sections({"drivers/ufs/core/ufs-sysfs.c": "UFS", "drivers/input/serio/hil_mlc.c": "INPUT"})
    assert unit_key(ufs, m) == ("UFS", "")
    assert unit_key(hil, m) == ("INPUT", "")
    assert unit_key(bpmp, m) == (FALLBACK_SECTION, "firmware: tegra: bpmp")


def instance(name: str, cls: SemClass, *codes: str, pinned: Verdict | None = None,
             classified_as: SemClass | None = None) -> Instance:
    file = "drivers/xen/xenbus/xenbus_probe_backend.c"
    return Instance(id=f"field:struct xenbus_device.{name}", kind="field", name=name,
                    struct="struct xenbus_device", file="include/xen/xenbus.h",
                    sem_class=cls, pinned=pinned, classified_as=classified_as,
                    reasons=[Reason(c, c, (Location(file, 267),)) for c in codes])


def message(instances: list[Instance], targets: dict[str, str]) -> tuple[str, str]:
    unit = ConversionUnit("XEN HYPERVISOR INTERFACE", "xen/xenbus", instances)
    result = RewriteResult(
        files_changed=["drivers/xen/xenbus/xenbus_probe.c",
                       "drivers/xen/xenbus/xenbus_probe_backend.c"],
        instances=[InstanceRewrite(i.id, targets[i.id], [], []) for i in instances],
        includes=[])
    return conversion_message(unit, result, ["xen-devel@lists.xenproject.org"], IDENTITY)


def body_lines(body: str) -> list[str]:
    return [line for line in body.splitlines()
            if not line.startswith(("Cc: ", "Signed-off-by: "))]


def test_a_pinned_mutex_names_the_reviewer_and_quotes_the_reason():
    verdict = Verdict("field:struct xenbus_device.reclaim_sem", SemClass.MUTEX,
                      "Ada Reviewer <ada@example.org>", "only the probe and PM paths take it")
    pinned = instance("reclaim_sem", SemClass.MUTEX, "trylock-context-unknown", pinned=verdict,
                      classified_as=SemClass.AMBIGUOUS)
    proven = instance("lock", SemClass.MUTEX, "count-one", "paired-release", "process-context")
    subject, body = message([proven, pinned], {pinned.id: MUTEX, proven.id: MUTEX})
    assert subject == "xen/xenbus: Convert binary semaphores to struct mutex"
    assert all(len(line) <= 72 for line in body_lines(body)), body
    flat = " ".join(body.split())
    assert "This semaphore is a mutex in all but name" in flat
    assert "- struct xenbus_device.lock: count-one, paired-release, process-context" in flat
    assert ("A reviewer checked this semaphore by hand and decided that it is a mutex "
            "where the audit could not prove it") in flat
    assert ("- struct xenbus_device.reclaim_sem: pinned mutex by Ada Reviewer "
            "<ada@example.org>, who wrote: \"only the probe and PM paths take it\" (the "
            "audit alone said ambiguous: trylock-context-unknown at "
            "xenbus_probe_backend.c:267)") in flat


def test_an_override_says_what_the_reviewer_set_aside():
    verdict = Verdict("field:struct xenbus_device.irq_sem", SemClass.MUTEX,
                      "Ada Reviewer <ada@example.org>", "the handler only wakes a thread",
                      override=True)
    inst = instance("irq_sem", SemClass.MUTEX, "irq-context", pinned=verdict,
                    classified_as=SemClass.AMBIGUOUS)
    _, body = message([inst], {inst.id: MUTEX})
    flat = " ".join(body.split())
    assert ("the reviewer overrode the audit's evidence against a mutex: irq-context "
            "(drivers/xen/xenbus/xenbus_probe_backend.c:267)") in flat
    assert "\"the handler only wakes a thread\"" in flat
    assert all(len(line) <= 72 for line in body_lines(body)), body


def test_semaphores_that_stay_give_their_first_obstacle_and_where():
    stays = instance("reclaim_sem", SemClass.AMBIGUOUS, "trylock-context-unknown",
                     "unpaired-up", "cross-callback", "macro-use")
    subject, body = message([stays], {stays.id: COUNTING})
    assert subject == "xen/xenbus: Use the down_sem() counting semaphore API"
    flat = " ".join(body.split())
    assert ("- struct xenbus_device.reclaim_sem: ambiguous: trylock-context-unknown at "
            "xenbus_probe_backend.c:267, unpaired-up, cross-callback, +1 more") in flat
