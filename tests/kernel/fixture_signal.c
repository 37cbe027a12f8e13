// SPDX-License-Identifier: GPL-2.0
/*
 * Signal semaphores: they start at 0, one side waits and another posts.
 * sem2mutex must keep them semaphores (each one is a completion candidate
 * in its audit), under the down_sem() names.
 */
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/init.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/semaphore.h>
#include <linux/timer.h>

#include "sem2mutex_fixtures.h"

/* A one-value mailbox, posted by a producer thread. */
struct fixture_mailbox {
	struct semaphore posted;
	int value;
	unsigned int delay_ms;
};

static struct fixture_mailbox fixture_mailbox = {
	.posted = __SEMAPHORE_INITIALIZER(fixture_mailbox.posted, 0),
};

static int fixture_mailbox_producer(void *data)
{
	struct fixture_mailbox *mailbox = data;

	msleep(mailbox->delay_ms);
	up(&mailbox->posted);
	return 0;
}

int fixture_mailbox_send_async(int value, unsigned int delay_ms)
{
	struct task_struct *producer;

	fixture_mailbox.value = value;
	fixture_mailbox.delay_ms = delay_ms;
	producer = kthread_run(fixture_mailbox_producer, &fixture_mailbox,
			       "fixture_mailbox");
	return PTR_ERR_OR_ZERO(producer);
}

int fixture_mailbox_receive(unsigned int timeout_ms, int *value)
{
	int ret;

	ret = down_timeout(&fixture_mailbox.posted,
			   msecs_to_jiffies(timeout_ms));
	if (ret)
		return ret;
	*value = fixture_mailbox.value;
	return 0;
}

/* A readiness flag, posted by a timer. */
static struct semaphore fixture_ready =
	__SEMAPHORE_INITIALIZER(fixture_ready, 0);
static struct timer_list fixture_ready_timer;

static void fixture_ready_fire(struct timer_list *timer)
{
	up(&fixture_ready);
}

void fixture_ready_arm(unsigned int delay_ms)
{
	mod_timer(&fixture_ready_timer, jiffies + msecs_to_jiffies(delay_ms));
}

int fixture_ready_wait(void)
{
	return down_interruptible(&fixture_ready);
}

void fixture_ready_disarm(void)
{
	del_timer_sync(&fixture_ready_timer);
}

static int __init fixture_signal_init(void)
{
	timer_setup(&fixture_ready_timer, fixture_ready_fire, 0);
	return 0;
}
subsys_initcall(fixture_signal_init);
