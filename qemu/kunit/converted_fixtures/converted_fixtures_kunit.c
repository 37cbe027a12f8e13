// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the sem2mutex fixtures (tests/kernel/ in the sem2mutex
 * repository) as sem2mutex converted them.
 *
 * The suite only calls the fixtures' functions, never the lock API, so it
 * reads the same whatever each semaphore became.  It checks what their
 * callers rely on: a binary lock excludes, gives up on a signal and reports
 * a failed trylock as busy; a counting semaphore lets several holders in; a
 * signal semaphore wakes its waiter once posted; and a semaphore released
 * from an hrtimer, a tasklet or a work item is released from there, with
 * the releasing context really running.  A conversion that broke one of
 * these fails a test; one that made a semaphore released from an interrupt
 * or another task a mutex passes the tests but makes lock debugging report
 * the release, which fails the boot.
 *
 * Blocking calls run in kernel threads of their own ("callers"), so that a
 * sleeping or signalled task is never the KUnit runner itself.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/errno.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/signal.h>

#include "sem2mutex_fixtures.h"

/* How long a caller must stay asleep for the test to call it blocked. */
#define BLOCKED_CHECK_MS	100
/* How long anything may take once it can finish; generous under TCG. */
#define FINISH_LIMIT_MS		5000
/* Delay of the asynchronous operations, long enough for callers to sleep. */
#define OPERATION_DELAY_MS	20
#define CONTENDERS		4
#define CONTENDER_ROUNDS	25
#define POOL_USERS		6
#define POOL_ROUNDS		10

struct released_fixture;

/* One fixture call made from a kernel thread, and its result. */
struct caller {
	int (*call)(struct caller *c);
	struct fixture_gate *gate;
	const struct released_fixture *released;
	int signal;		/* pending before the call: 0, SIGUSR1 or SIGKILL */
	int result;
	struct completion done;
	struct task_struct *task;
};

static int caller_thread(void *data)
{
	struct caller *c = data;

	/*
	 * force_sig() queues SIGKILL on this very thread, where the killable
	 * sleeps look; a kthread must allow any other signal first.
	 */
	if (c->signal == SIGKILL) {
		force_sig(SIGKILL);
	} else if (c->signal) {
		allow_signal(c->signal);
		send_sig(c->signal, current, 1);
	}
	c->result = c->call(c);
	complete_all(&c->done);
	return 0;
}

static void caller_start(struct kunit *test, struct caller *c)
{
	init_completion(&c->done);
	c->result = -1;
	c->task = kthread_run(caller_thread, c, "fixture_caller");
	KUNIT_ASSERT_FALSE(test, IS_ERR(c->task));
	/* Pinned so that caller_reap() may stop a thread that already ended. */
	get_task_struct(c->task);
}

static bool caller_blocked(struct caller *c)
{
	return !wait_for_completion_timeout(&c->done,
					    msecs_to_jiffies(BLOCKED_CHECK_MS));
}

static bool caller_finished(struct caller *c)
{
	return wait_for_completion_timeout(&c->done,
					   msecs_to_jiffies(FINISH_LIMIT_MS));
}

/* Waits for the caller to end, then reaps it; returns its result. */
static int caller_reap(struct kunit *test, struct caller *c)
{
	KUNIT_EXPECT_TRUE(test, caller_finished(c));
	wait_for_completion(&c->done);
	kthread_stop(c->task);
	put_task_struct(c->task);
	return c->result;
}

static void gate_init(struct fixture_gate *gate)
{
	init_completion(&gate->held);
	init_completion(&gate->go);
}

/* Starts a caller holding a fixture lock; returns once it holds it. */
static void holder_start(struct kunit *test, struct caller *holder,
			 struct fixture_gate *gate)
{
	gate_init(gate);
	holder->gate = gate;
	caller_start(test, holder);
	KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&gate->held,
				msecs_to_jiffies(FINISH_LIMIT_MS)));
}

static int holder_release(struct kunit *test, struct caller *holder)
{
	complete(&holder->gate->go);
	return caller_reap(test, holder);
}

/* --- binary semaphores, converted to mutexes ---------------------------- */

static int count_rounds(struct caller *c)
{
	int i;

	for (i = 0; i < CONTENDER_ROUNDS; i++)
		fixture_counter_add(50);
	return 0;
}

/* The counter sleeps between its read and its write: only a lock helps. */
static void fixtures_binary_lock_excludes(struct kunit *test)
{
	struct caller contenders[CONTENDERS] = {};
	unsigned long before = fixture_counter_read();
	int i;

	for (i = 0; i < CONTENDERS; i++) {
		contenders[i].call = count_rounds;
		caller_start(test, &contenders[i]);
	}
	for (i = 0; i < CONTENDERS; i++)
		KUNIT_EXPECT_EQ(test, caller_reap(test, &contenders[i]), 0);
	KUNIT_EXPECT_EQ(test, fixture_counter_read() - before,
			(unsigned long)CONTENDERS * CONTENDER_ROUNDS);
}

static int hold_log(struct caller *c)
{
	return fixture_log_hold(c->gate);
}

static int append_to_log(struct caller *c)
{
	return fixture_log_append(1);
}

/* The interruptible lock gives up on any signal while it waits. */
static void fixtures_binary_interruptible_gives_up(struct kunit *test)
{
	struct caller holder = { .call = hold_log };
	struct caller signalled = { .call = append_to_log, .signal = SIGUSR1 };
	struct caller plain = { .call = append_to_log };
	struct fixture_gate gate;
	int before = fixture_log_len();

	holder_start(test, &holder, &gate);
	caller_start(test, &signalled);
	KUNIT_EXPECT_EQ(test, caller_reap(test, &signalled), -EINTR);

	/* Without a signal, a caller waits for the holder. */
	caller_start(test, &plain);
	KUNIT_EXPECT_TRUE(test, caller_blocked(&plain));
	KUNIT_EXPECT_EQ(test, holder_release(test, &holder), 0);
	KUNIT_EXPECT_EQ(test, caller_reap(test, &plain), 0);

	/* Only the caller that was not interrupted appended. */
	KUNIT_EXPECT_EQ(test, fixture_log_len(), before + 1);
}

static int hold_table(struct caller *c)
{
	return fixture_table_hold(c->gate);
}

static int insert_into_table(struct caller *c)
{
	return fixture_table_insert(1);
}

/* The killable lock gives up on a fatal signal while it waits. */
static void fixtures_binary_killable_gives_up(struct kunit *test)
{
	struct caller holder = { .call = hold_table };
	struct caller killed = { .call = insert_into_table, .signal = SIGKILL };
	struct fixture_gate gate;
	int before = fixture_table_used();

	holder_start(test, &holder, &gate);
	caller_start(test, &killed);
	KUNIT_EXPECT_EQ(test, caller_reap(test, &killed), -EINTR);
	KUNIT_EXPECT_EQ(test, holder_release(test, &holder), 0);

	KUNIT_EXPECT_EQ(test, fixture_table_insert(2), 0);
	KUNIT_EXPECT_EQ(test, fixture_table_used(), before + 1);
}

static long table_ioctl(unsigned int cmd)
{
	return fixture_table_fops.unlocked_ioctl(NULL, cmd, 0);
}

/* down_trylock() returns 0 on success, mutex_trylock() 1: both forms. */
static void fixtures_binary_trylock_reports_busy(struct kunit *test)
{
	struct caller holder = { .call = hold_table };
	struct fixture_gate gate;

	KUNIT_ASSERT_EQ(test, fixture_table_insert(3), 0);
	KUNIT_EXPECT_EQ(test, table_ioctl(FIXTURE_TABLE_TRY_COUNT),
			(long)fixture_table_used());

	holder_start(test, &holder, &gate);
	KUNIT_EXPECT_EQ(test, table_ioctl(FIXTURE_TABLE_TRY_COUNT), -EBUSY);
	KUNIT_EXPECT_EQ(test, table_ioctl(FIXTURE_TABLE_TRY_CLEAR), -EBUSY);
	KUNIT_EXPECT_EQ(test, holder_release(test, &holder), 0);

	KUNIT_EXPECT_GT(test, fixture_table_used(), 0);
	KUNIT_EXPECT_EQ(test, table_ioctl(FIXTURE_TABLE_TRY_CLEAR), 0);
	KUNIT_EXPECT_EQ(test, table_ioctl(FIXTURE_TABLE_TRY_COUNT), 0);
	KUNIT_EXPECT_EQ(test, fixture_table_used(), 0);
}

/* --- counting semaphores -------------------------------------------------- */

/* Exactly FIXTURE_POOL_SLOTS holders, then busy, then a timeout. */
static void fixtures_counting_pool_admits_its_count(struct kunit *test)
{
	int i;

	for (i = 0; i < FIXTURE_POOL_SLOTS; i++)
		KUNIT_EXPECT_EQ(test, fixture_pool_try_get(), 0);
	KUNIT_EXPECT_EQ(test, fixture_pool_try_get(), -EBUSY);
	KUNIT_EXPECT_EQ(test, fixture_pool_get_timeout(OPERATION_DELAY_MS),
			-ETIME);

	fixture_pool_put();
	KUNIT_EXPECT_EQ(test, fixture_pool_get_timeout(FINISH_LIMIT_MS), 0);
	KUNIT_EXPECT_EQ(test, fixture_pool_max_in_use(), FIXTURE_POOL_SLOTS);
	for (i = 0; i < FIXTURE_POOL_SLOTS; i++)
		fixture_pool_put();
}

static int use_pool(struct caller *c)
{
	int i, ret;

	for (i = 0; i < POOL_ROUNDS; i++) {
		ret = fixture_pool_get();
		if (ret)
			return ret;
		usleep_range(200, 400);
		fixture_pool_put();
	}
	return 0;
}

/* Under contention, several holders at once, never more than the count. */
static void fixtures_counting_pool_shared(struct kunit *test)
{
	struct caller users[POOL_USERS] = {};
	int i;

	fixture_pool_reset_max();
	for (i = 0; i < POOL_USERS; i++) {
		users[i].call = use_pool;
		caller_start(test, &users[i]);
	}
	for (i = 0; i < POOL_USERS; i++)
		KUNIT_EXPECT_EQ(test, caller_reap(test, &users[i]), 0);
	KUNIT_EXPECT_LE(test, fixture_pool_max_in_use(), FIXTURE_POOL_SLOTS);
	KUNIT_EXPECT_GE(test, fixture_pool_max_in_use(), 2);
}

static int pass_a_lane(struct caller *c)
{
	int ret = fixture_lane_enter();

	if (!ret)
		fixture_lane_leave();
	return ret;
}

/* One task may take both lanes; a third taker waits for a leave. */
static void fixtures_counting_lanes(struct kunit *test)
{
	struct caller third = { .call = pass_a_lane };
	int i;

	for (i = 0; i < FIXTURE_LANES; i++)
		KUNIT_ASSERT_EQ(test, fixture_lane_enter(), 0);
	caller_start(test, &third);
	KUNIT_EXPECT_TRUE(test, caller_blocked(&third));
	fixture_lane_leave();
	KUNIT_EXPECT_EQ(test, caller_reap(test, &third), 0);
	for (i = 1; i < FIXTURE_LANES; i++)
		fixture_lane_leave();
}

/* --- signal semaphores ------------------------------------------------------ */

/* A producer thread posts the mailbox; nothing is posted twice. */
static void fixtures_signal_mailbox(struct kunit *test)
{
	int value = 0;

	KUNIT_ASSERT_EQ(test, fixture_mailbox_send_async(42, OPERATION_DELAY_MS),
			0);
	KUNIT_EXPECT_EQ(test, fixture_mailbox_receive(FINISH_LIMIT_MS, &value),
			0);
	KUNIT_EXPECT_EQ(test, value, 42);
	KUNIT_EXPECT_EQ(test, fixture_mailbox_receive(OPERATION_DELAY_MS, &value),
			-ETIME);
}

/* A timer posts the flag; the waiter cannot get it earlier. */
static void fixtures_signal_ready_from_timer(struct kunit *test)
{
	unsigned long start = jiffies;

	fixture_ready_arm(OPERATION_DELAY_MS);
	KUNIT_EXPECT_EQ(test, fixture_ready_wait(), 0);
	KUNIT_EXPECT_GE(test, (long)(jiffies - start),
			(long)msecs_to_jiffies(OPERATION_DELAY_MS));
	fixture_ready_disarm();
}

/* --- released from an hrtimer, a tasklet, a work item ---------------------- */

struct released_fixture {
	void (*start)(void);
	int (*wait_released)(unsigned int timeout_ms);
	unsigned int (*idle)(void);
};

static int wait_idle(struct caller *c)
{
	return c->released->idle();
}

/*
 * The test's task starts the operation, which takes the semaphore; a
 * second task wanting the device idle sleeps until the operation's own
 * context released it, while this task sleeps too: the release runs in
 * the hrtimer, tasklet or work item and nowhere else.
 */
static void check_released(struct kunit *test,
			   const struct released_fixture *fixture)
{
	struct caller idler = { .call = wait_idle, .released = fixture };
	unsigned int before = fixture->idle();

	fixture->start();
	caller_start(test, &idler);
	KUNIT_EXPECT_EQ(test, fixture->wait_released(FINISH_LIMIT_MS), 0);
	/* The idler got the semaphore only after the release. */
	KUNIT_EXPECT_EQ(test, caller_reap(test, &idler), (int)before + 1);
	KUNIT_EXPECT_EQ(test, fixture->idle(), before + 1);
}

static void start_hrtimer(void)
{
	fixture_hrtimer_start(OPERATION_DELAY_MS);
}

static void start_tasklet(void)
{
	fixture_tasklet_start();
}

static void start_work(void)
{
	fixture_work_start(OPERATION_DELAY_MS);
}

static const struct released_fixture hrtimer_fixture = {
	start_hrtimer, fixture_hrtimer_wait_released, fixture_hrtimer_idle,
};

static const struct released_fixture tasklet_fixture = {
	start_tasklet, fixture_tasklet_wait_released, fixture_tasklet_idle,
};

static const struct released_fixture work_fixture = {
	start_work, fixture_work_wait_released, fixture_work_idle,
};

static void fixtures_released_from_hrtimer(struct kunit *test)
{
	check_released(test, &hrtimer_fixture);
}

static void fixtures_released_from_tasklet(struct kunit *test)
{
	check_released(test, &tasklet_fixture);
}

static void fixtures_released_from_work_item(struct kunit *test)
{
	check_released(test, &work_fixture);
}

static struct kunit_case converted_fixtures_cases[] = {
	KUNIT_CASE(fixtures_binary_lock_excludes),
	KUNIT_CASE(fixtures_binary_interruptible_gives_up),
	KUNIT_CASE(fixtures_binary_killable_gives_up),
	KUNIT_CASE(fixtures_binary_trylock_reports_busy),
	KUNIT_CASE(fixtures_counting_pool_admits_its_count),
	KUNIT_CASE(fixtures_counting_pool_shared),
	KUNIT_CASE(fixtures_counting_lanes),
	KUNIT_CASE(fixtures_signal_mailbox),
	KUNIT_CASE(fixtures_signal_ready_from_timer),
	KUNIT_CASE(fixtures_released_from_hrtimer),
	KUNIT_CASE(fixtures_released_from_tasklet),
	KUNIT_CASE(fixtures_released_from_work_item),
	{}
};

static struct kunit_suite converted_fixtures_suite = {
	.name = "sem2mutex_converted_fixtures",
	.test_cases = converted_fixtures_cases,
};
kunit_test_suite(converted_fixtures_suite);

MODULE_DESCRIPTION("KUnit tests of the fixtures sem2mutex converted");
MODULE_LICENSE("GPL");
