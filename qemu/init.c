// SPDX-License-Identifier: GPL-2.0
/*
 * /init for the sem2mutex QEMU boot.
 *
 * Built-in KUnit suites have already run when the kernel starts /init, so
 * this program only reports what the harness needs to judge the boot and then
 * ends the machine.  Every line it prints starts with INIT_MARKER so the
 * harness can tell them from kernel messages:
 *
 *   sem2mutex-init: reached /init
 *   sem2mutex-init: release=<uname -r>
 *   sem2mutex-init: tainted=<kernel taint mask>
 *   sem2mutex-init: debug_locks=<1 while lock debugging is still armed>
 *   sem2mutex-init: rebooting
 *
 * Lockdep and the mutex debugging code switch lock debugging off after the
 * first report, and any WARN() sets the taint mask, so these two values cross
 * check the harness's console scan.
 *
 * A tinyconfig kernel has no ACPI power-off, so the machine ends by a reboot,
 * which QEMU turns into an exit when started with -no-reboot.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define INIT_MARKER "sem2mutex-init:"

static void mount_proc(void)
{
	mkdir("/proc", 0555);
	if (mount("proc", "/proc", "proc", 0, NULL))
		perror(INIT_MARKER " mount /proc");
}

static void print_release(void)
{
	struct utsname uts;

	if (uname(&uts) == 0)
		printf(INIT_MARKER " release=%s\n", uts.release);
}

/* Print the first number of a one-line file, e.g. /proc/sys/kernel/tainted. */
static void print_number_file(const char *key, const char *path)
{
	unsigned long value;
	FILE *file;

	file = fopen(path, "r");
	if (!file)
		return;
	if (fscanf(file, "%lu", &value) == 1)
		printf(INIT_MARKER " %s=%lu\n", key, value);
	fclose(file);
}

/* /proc/lockdep_stats has one " debug_locks: <n>" line among many. */
static void print_debug_locks(void)
{
	char line[256];
	unsigned long value;
	FILE *file;

	file = fopen("/proc/lockdep_stats", "r");
	if (!file)
		return;
	while (fgets(line, sizeof(line), file)) {
		if (sscanf(line, " debug_locks: %lu", &value) == 1) {
			printf(INIT_MARKER " debug_locks=%lu\n", value);
			break;
		}
	}
	fclose(file);
}

int main(void)
{
	printf(INIT_MARKER " reached /init\n");
	mount_proc();
	print_release();
	print_number_file("tainted", "/proc/sys/kernel/tainted");
	print_debug_locks();
	printf(INIT_MARKER " rebooting\n");
	fflush(stdout);
	sync();
	reboot(RB_AUTOBOOT);
	/* Only reached if the reboot was refused: let the harness see it. */
	perror(INIT_MARKER " reboot");
	return 1;
}
