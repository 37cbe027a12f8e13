// SPDX-License-Identifier: GPL-2.0
/*
 * A deliberately wrong lock use, for the sem2mutex QEMU harness's own test.
 *
 * A semaphore whose up() runs from a timer must never become a mutex: a mutex
 * may only be released by the task that took it, and never from softirq
 * context.  This suite does exactly that wrong thing (mutex_lock() in the
 * test's task, mutex_unlock() from a timer callback) so that lockdep and
 * CONFIG_DEBUG_MUTEXES report it on the console and the harness's verdict
 * must fail the boot.  The harness only builds it in when asked to.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/jiffies.h>
#include <linux/mutex.h>
#include <linux/timer.h>

struct wrong_unlock {
	struct mutex lock;
	struct timer_list timer;
	struct completion released;
};

static void wrong_unlock_timer_fn(struct timer_list *timer)
{
	struct wrong_unlock *wrong = from_timer(wrong, timer, timer);

	/* Wrong on purpose: not the owner, and in softirq context. */
	mutex_unlock(&wrong->lock);
	complete(&wrong->released);
}

static void harness_mutex_unlock_from_timer(struct kunit *test)
{
	struct wrong_unlock *wrong;

	wrong = kunit_kzalloc(test, sizeof(*wrong), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, wrong);
	mutex_init(&wrong->lock);
	init_completion(&wrong->released);
	timer_setup(&wrong->timer, wrong_unlock_timer_fn, 0);

	mutex_lock(&wrong->lock);
	/*
	 * Fire well after this task has gone to sleep, so the timer never
	 * interrupts the owner itself: the release then comes from another
	 * task's context every time, and lockdep reports it every time.
	 */
	mod_timer(&wrong->timer, jiffies + msecs_to_jiffies(20));
	wait_for_completion(&wrong->released);
	del_timer_sync(&wrong->timer);

	/*
	 * The release itself "works", which is why only lock debugging can
	 * catch this bug: the test passes, the boot must not.
	 */
	KUNIT_EXPECT_FALSE(test, mutex_is_locked(&wrong->lock));
}

static struct kunit_case harness_selftest_wrong_cases[] = {
	KUNIT_CASE(harness_mutex_unlock_from_timer),
	{}
};

static struct kunit_suite harness_selftest_wrong_suite = {
	.name = "sem2mutex_harness_wrong",
	.test_cases = harness_selftest_wrong_cases,
};
kunit_test_suite(harness_selftest_wrong_suite);

MODULE_DESCRIPTION("sem2mutex QEMU harness: mutex released from a timer");
MODULE_LICENSE("GPL");
