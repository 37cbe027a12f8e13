// SPDX-License-Identifier: GPL-2.0
/*
 * Smoke test for the sem2mutex QEMU harness.
 *
 * Takes and releases a struct mutex and a struct semaphore from process
 * context, the only way a converted lock may be used.  A boot with this suite
 * must pass: no lockdep report, no mutex debugging warning, every test green.
 * Its twin in ../harness_selftest_wrong/ breaks the mutex rules on purpose.
 */
#include <kunit/test.h>
#include <linux/mutex.h>
#include <linux/semaphore.h>

static DEFINE_MUTEX(harness_mutex);
static DEFINE_SEMAPHORE(harness_sem);

static void harness_mutex_lock_unlock(struct kunit *test)
{
	mutex_lock(&harness_mutex);
	KUNIT_EXPECT_TRUE(test, mutex_is_locked(&harness_mutex));
	mutex_unlock(&harness_mutex);
	KUNIT_EXPECT_FALSE(test, mutex_is_locked(&harness_mutex));

	/* mutex_trylock() returns 1 on success, unlike down_trylock(). */
	KUNIT_ASSERT_EQ(test, mutex_trylock(&harness_mutex), 1);
	mutex_unlock(&harness_mutex);
}

static void harness_semaphore_down_up(struct kunit *test)
{
	down(&harness_sem);
	/* The count is used up: down_trylock() must fail and return 1. */
	KUNIT_EXPECT_EQ(test, down_trylock(&harness_sem), 1);
	up(&harness_sem);

	KUNIT_ASSERT_EQ(test, down_trylock(&harness_sem), 0);
	up(&harness_sem);
}

static struct kunit_case harness_selftest_cases[] = {
	KUNIT_CASE(harness_mutex_lock_unlock),
	KUNIT_CASE(harness_semaphore_down_up),
	{}
};

static struct kunit_suite harness_selftest_suite = {
	.name = "sem2mutex_harness_selftest",
	.test_cases = harness_selftest_cases,
};
kunit_test_suite(harness_selftest_suite);

MODULE_DESCRIPTION("sem2mutex QEMU harness smoke test");
MODULE_LICENSE("GPL");
