// SPDX-License-Identifier: GPL-2.0
/*
 * Counting semaphores: more than one task may hold them at once.  sem2mutex
 * must keep them semaphores, under the down_sem() names.
 */
#include <linux/atomic.h>
#include <linux/errno.h>
#include <linux/init.h>
#include <linux/jiffies.h>
#include <linux/semaphore.h>

#include "sem2mutex_fixtures.h"

/* A pool of FIXTURE_POOL_SLOTS slots; it records how many were ever used. */
struct fixture_pool {
	struct semaphore slots_left;
	atomic_t in_use;
	atomic_t max_in_use;
};

static struct fixture_pool fixture_pool;

/* Two lanes; the count is a literal, the other way a driver writes it. */
static struct semaphore fixture_lanes;

static void fixture_pool_account(void)
{
	int now = atomic_inc_return(&fixture_pool.in_use);
	int max = atomic_read(&fixture_pool.max_in_use);

	while (now > max && !atomic_try_cmpxchg(&fixture_pool.max_in_use,
						&max, now))
		;
}

int fixture_pool_get(void)
{
	if (down_interruptible(&fixture_pool.slots_left))
		return -EINTR;
	fixture_pool_account();
	return 0;
}

int fixture_pool_try_get(void)
{
	if (down_trylock(&fixture_pool.slots_left))
		return -EBUSY;
	fixture_pool_account();
	return 0;
}

int fixture_pool_get_timeout(unsigned int timeout_ms)
{
	int ret;

	ret = down_timeout(&fixture_pool.slots_left,
			   msecs_to_jiffies(timeout_ms));
	if (ret)
		return ret;
	fixture_pool_account();
	return 0;
}

void fixture_pool_put(void)
{
	atomic_dec(&fixture_pool.in_use);
	up(&fixture_pool.slots_left);
}

int fixture_pool_max_in_use(void)
{
	return atomic_read(&fixture_pool.max_in_use);
}

void fixture_pool_reset_max(void)
{
	atomic_set(&fixture_pool.max_in_use, atomic_read(&fixture_pool.in_use));
}

int fixture_lane_enter(void)
{
	return down_killable(&fixture_lanes);
}

void fixture_lane_leave(void)
{
	up(&fixture_lanes);
}

static int __init fixture_counting_init(void)
{
	sema_init(&fixture_pool.slots_left, FIXTURE_POOL_SLOTS);
	sema_init(&fixture_lanes, 2);
	return 0;
}
subsys_initcall(fixture_counting_init);
