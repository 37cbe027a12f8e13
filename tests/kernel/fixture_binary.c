// SPDX-License-Identifier: GPL-2.0
/*
 * Binary semaphores: initialised to 1 and released by the task that took
 * them, in the same function, on every path.  sem2mutex must turn each of
 * them into a struct mutex, keeping what every caller sees: the
 * interruptible and killable variants still give up on a signal, and the
 * inverted return value of down_trylock() must come out right.
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/semaphore.h>

#include "sem2mutex_fixtures.h"

#define FIXTURE_LOG_SIZE	64
#define FIXTURE_TABLE_SIZE	16

/* A counter whose update sleeps halfway: only the lock keeps it right. */
static DEFINE_SEMAPHORE(fixture_counter_sem);
static unsigned long fixture_counter;

void fixture_counter_add(unsigned int delay_us)
{
	unsigned long value;

	down(&fixture_counter_sem);
	value = fixture_counter;
	if (delay_us)
		usleep_range(delay_us, 2 * delay_us);
	fixture_counter = value + 1;
	up(&fixture_counter_sem);
}

unsigned long fixture_counter_read(void)
{
	unsigned long value;

	down(&fixture_counter_sem);
	value = fixture_counter;
	up(&fixture_counter_sem);
	return value;
}

/* An append-only log behind a statically initialised semaphore. */
static struct semaphore fixture_log_sem =
	__SEMAPHORE_INITIALIZER(fixture_log_sem, 1);
static int fixture_log[FIXTURE_LOG_SIZE];
static int fixture_log_used;

int fixture_log_append(int value)
{
	int ret = 0;

	if (down_interruptible(&fixture_log_sem))
		return -EINTR;
	if (fixture_log_used < FIXTURE_LOG_SIZE)
		fixture_log[fixture_log_used++] = value;
	else
		ret = -ENOSPC;
	up(&fixture_log_sem);
	return ret;
}

int fixture_log_hold(struct fixture_gate *gate)
{
	if (down_interruptible(&fixture_log_sem))
		return -EINTR;
	complete(&gate->held);
	wait_for_completion(&gate->go);
	up(&fixture_log_sem);
	return 0;
}

int fixture_log_len(void)
{
	int len;

	down(&fixture_log_sem);
	len = fixture_log_used;
	up(&fixture_log_sem);
	return len;
}

/* A table whose lock is a struct field, initialised at boot. */
struct fixture_table {
	struct semaphore lock;
	int values[FIXTURE_TABLE_SIZE];
	int used;
};

static struct fixture_table fixture_table;

int fixture_table_insert(int value)
{
	int ret;

	ret = down_killable(&fixture_table.lock);
	if (ret)
		return ret;
	if (fixture_table.used < FIXTURE_TABLE_SIZE)
		fixture_table.values[fixture_table.used++] = value;
	else
		ret = -ENOSPC;
	up(&fixture_table.lock);
	return ret;
}

int fixture_table_hold(struct fixture_gate *gate)
{
	int ret;

	ret = down_killable(&fixture_table.lock);
	if (ret)
		return ret;
	complete(&gate->held);
	wait_for_completion(&gate->go);
	up(&fixture_table.lock);
	return 0;
}

int fixture_table_used(void)
{
	int used;

	down(&fixture_table.lock);
	used = fixture_table.used;
	up(&fixture_table.lock);
	return used;
}

/*
 * The two down_trylock() forms, a test and a stored value.  They are only
 * reached from the ioctl handler, hence from process context, where
 * mutex_trylock() is allowed.
 */
static long fixture_table_try_clear(void)
{
	if (down_trylock(&fixture_table.lock))
		return -EBUSY;
	fixture_table.used = 0;
	up(&fixture_table.lock);
	return 0;
}

static long fixture_table_try_count(void)
{
	long used;
	int busy;

	busy = down_trylock(&fixture_table.lock);
	if (busy)
		return -EBUSY;
	used = fixture_table.used;
	up(&fixture_table.lock);
	return used;
}

static long fixture_table_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	switch (cmd) {
	case FIXTURE_TABLE_TRY_CLEAR:
		return fixture_table_try_clear();
	case FIXTURE_TABLE_TRY_COUNT:
		return fixture_table_try_count();
	}
	return -ENOTTY;
}

const struct file_operations fixture_table_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = fixture_table_ioctl,
};

static int __init fixture_binary_init(void)
{
	sema_init(&fixture_table.lock, 1);
	return 0;
}
subsys_initcall(fixture_binary_init);
