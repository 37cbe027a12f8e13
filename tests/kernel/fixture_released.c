// SPDX-License-Identifier: GPL-2.0
/*
 * Count-1 semaphores held while an asynchronous operation runs: the task
 * that starts the operation takes the semaphore, and the operation's
 * completion releases it from an hrtimer (hard interrupt context), a
 * tasklet (softirq context) or a work item (a kworker thread).  A task
 * that wants the device idle takes the semaphore and so waits for the
 * operation to end.
 *
 * A mutex may only be released by its owner and never from interrupt
 * context, so none of these may become a mutex: sem2mutex must keep them
 * semaphores, under the down_sem() names.  If it ever made one a mutex,
 * lock debugging reports the release when the converted_fixtures suite
 * runs it.
 */
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/errno.h>
#include <linux/hrtimer.h>
#include <linux/init.h>
#include <linux/interrupt.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/semaphore.h>
#include <linux/workqueue.h>

#include "sem2mutex_fixtures.h"

struct fixture_hrtimer_op {
	struct semaphore armed;
	struct hrtimer timer;
	struct completion released;
	atomic_t releases;
};

struct fixture_tasklet_op {
	struct semaphore scheduled;
	struct tasklet_struct tasklet;
	struct completion released;
	atomic_t releases;
};

struct fixture_work_op {
	struct semaphore queued;
	struct work_struct work;
	unsigned int delay_ms;
	struct completion released;
	atomic_t releases;
};

static struct fixture_hrtimer_op hrtimer_op;
static struct fixture_tasklet_op tasklet_op;
static struct fixture_work_op work_op;

static int fixture_wait(struct completion *released, unsigned int timeout_ms)
{
	if (!wait_for_completion_timeout(released,
					 msecs_to_jiffies(timeout_ms)))
		return -ETIMEDOUT;
	return 0;
}

/*
 * Each completion reports itself before it releases the semaphore: the
 * next operation can only start once the semaphore is released, so it
 * never sees the completion of the previous one.
 */
static enum hrtimer_restart fixture_hrtimer_done(struct hrtimer *timer)
{
	struct fixture_hrtimer_op *op =
		container_of(timer, struct fixture_hrtimer_op, timer);

	atomic_inc(&op->releases);
	complete(&op->released);
	up(&op->armed);
	return HRTIMER_NORESTART;
}

void fixture_hrtimer_start(unsigned int delay_ms)
{
	down(&hrtimer_op.armed);
	reinit_completion(&hrtimer_op.released);
	hrtimer_start(&hrtimer_op.timer, ms_to_ktime(delay_ms),
		      HRTIMER_MODE_REL);
}

int fixture_hrtimer_wait_released(unsigned int timeout_ms)
{
	return fixture_wait(&hrtimer_op.released, timeout_ms);
}

unsigned int fixture_hrtimer_idle(void)
{
	unsigned int releases;

	down(&hrtimer_op.armed);
	releases = atomic_read(&hrtimer_op.releases);
	up(&hrtimer_op.armed);
	return releases;
}

static void fixture_tasklet_done(struct tasklet_struct *tasklet)
{
	struct fixture_tasklet_op *op = from_tasklet(op, tasklet, tasklet);

	atomic_inc(&op->releases);
	complete(&op->released);
	up(&op->scheduled);
}

void fixture_tasklet_start(void)
{
	down(&tasklet_op.scheduled);
	reinit_completion(&tasklet_op.released);
	tasklet_schedule(&tasklet_op.tasklet);
}

int fixture_tasklet_wait_released(unsigned int timeout_ms)
{
	return fixture_wait(&tasklet_op.released, timeout_ms);
}

unsigned int fixture_tasklet_idle(void)
{
	unsigned int releases;

	down(&tasklet_op.scheduled);
	releases = atomic_read(&tasklet_op.releases);
	up(&tasklet_op.scheduled);
	return releases;
}

static void fixture_work_done(struct work_struct *work)
{
	struct fixture_work_op *op =
		container_of(work, struct fixture_work_op, work);

	msleep(op->delay_ms);
	atomic_inc(&op->releases);
	complete(&op->released);
	up(&op->queued);
}

void fixture_work_start(unsigned int delay_ms)
{
	down(&work_op.queued);
	work_op.delay_ms = delay_ms;
	reinit_completion(&work_op.released);
	schedule_work(&work_op.work);
}

int fixture_work_wait_released(unsigned int timeout_ms)
{
	return fixture_wait(&work_op.released, timeout_ms);
}

unsigned int fixture_work_idle(void)
{
	unsigned int releases;

	down(&work_op.queued);
	releases = atomic_read(&work_op.releases);
	up(&work_op.queued);
	return releases;
}

static int __init fixture_released_init(void)
{
	sema_init(&hrtimer_op.armed, 1);
	init_completion(&hrtimer_op.released);
	hrtimer_init(&hrtimer_op.timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	hrtimer_op.timer.function = fixture_hrtimer_done;

	sema_init(&tasklet_op.scheduled, 1);
	init_completion(&tasklet_op.released);
	tasklet_setup(&tasklet_op.tasklet, fixture_tasklet_done);

	sema_init(&work_op.queued, 1);
	init_completion(&work_op.released);
	INIT_WORK(&work_op.work, fixture_work_done);
	return 0;
}
subsys_initcall(fixture_released_init);
