// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the counting semaphore API added by the sem2mutex core
 * patch: down_sem(), down_sem_interruptible(), down_sem_killable(),
 * down_sem_trylock(), down_sem_timeout() and up_sem().
 *
 * Every semaphore that the conversion does not turn into a mutex keeps its
 * exact semantics through these names, so they are checked here the way the
 * converted callers rely on them: a count of N lets N tasks through and makes
 * the next one sleep until up_sem(); down_sem_trylock() returns 0 when it got
 * the semaphore and 1 when it did not; down_sem_timeout() gives up with
 * -ETIME; the interruptible and killable variants give up with -EINTR on a
 * pending signal (any signal, or only a fatal one).
 *
 * Waiters run in their own kernel threads ("takers") so that a sleeping or
 * signalled task is never the KUnit runner itself.
 *
 * Only builds on a tree carrying the counting API patch.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/semaphore.h>
#include <linux/signal.h>

/* How long a taker must stay asleep for the test to call it blocked. */
#define BLOCKED_CHECK_MS	100
/* How long a taker may take to finish once it can; generous under TCG. */
#define FINISH_LIMIT_MS		5000
/* Takers let through by a semaphore initialised to COUNT. */
#define COUNT			3
/*
 * A count of 0: the next taker sleeps.  Named because checkpatch suggests a
 * completion for a semaphore initialised to a literal 0, and here that
 * count is the semantics under test, not a signalling idiom.
 */
#define USED_UP			0

enum sem_op {
	OP_DOWN,
	OP_DOWN_INTERRUPTIBLE,
	OP_DOWN_KILLABLE,
	OP_DOWN_TIMEOUT,
};

/* What a taker thread does, and what came of it. */
struct taker {
	struct semaphore *sem;
	enum sem_op op;
	long timeout;		/* jiffies, for OP_DOWN_TIMEOUT */
	int allow;		/* signal the thread accepts, 0 for none */
	int raise;		/* signal pending before the call, 0 for none */
	int result;
	struct completion started;
	struct completion done;
	struct task_struct *task;
};

static int taker_thread(void *data)
{
	struct taker *t = data;

	if (t->allow)
		allow_signal(t->allow);
	/*
	 * force_sig() queues SIGKILL on this very thread, which is what
	 * fatal_signal_pending() looks at; send_sig() would queue it for the
	 * thread group, where down_sem_killable() does not see it.
	 */
	if (t->raise == SIGKILL)
		force_sig(SIGKILL);
	else if (t->raise)
		send_sig(t->raise, current, 1);
	complete(&t->started);

	switch (t->op) {
	case OP_DOWN:
		down_sem(t->sem);
		t->result = 0;
		break;
	case OP_DOWN_INTERRUPTIBLE:
		t->result = down_sem_interruptible(t->sem);
		break;
	case OP_DOWN_KILLABLE:
		t->result = down_sem_killable(t->sem);
		break;
	case OP_DOWN_TIMEOUT:
		t->result = down_sem_timeout(t->sem, t->timeout);
		break;
	}
	/* complete_all(): done stays done for every later wait and check. */
	complete_all(&t->done);
	return 0;
}

static void taker_start(struct kunit *test, struct taker *t)
{
	init_completion(&t->started);
	init_completion(&t->done);
	t->result = -1;
	t->task = kthread_run(taker_thread, t, "sem_api_taker");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t->task));
	/* Pinned so that taker_reap() may stop a thread that already ended. */
	get_task_struct(t->task);
	wait_for_completion(&t->started);
}

/* True if the taker is still asleep after BLOCKED_CHECK_MS. */
static bool taker_blocked(struct taker *t)
{
	return !wait_for_completion_timeout(&t->done,
					    msecs_to_jiffies(BLOCKED_CHECK_MS));
}

/* True if the taker finished within FINISH_LIMIT_MS. */
static bool taker_finished(struct taker *t)
{
	return wait_for_completion_timeout(&t->done,
					   msecs_to_jiffies(FINISH_LIMIT_MS));
}

/*
 * Waits for @t to end and reaps it.  A taker still asleep after
 * FINISH_LIMIT_MS means a test has already failed; up_sem() then lets it
 * through, so that a broken semaphore fails the suite instead of hanging
 * the boot.  Once the thread has ended, kthread_stop() only reaps it.
 */
static void taker_reap(struct taker *t)
{
	while (!taker_finished(t))
		up_sem(t->sem);
	kthread_stop(t->task);
	put_task_struct(t->task);
}

static int takers_done(struct taker *takers, int n)
{
	int i, done = 0;

	for (i = 0; i < n; i++)
		done += completion_done(&takers[i].done);
	return done;
}

/* How many of @n takers are done once @want are, or FINISH_LIMIT_MS passed. */
static int takers_wait_done(struct taker *takers, int n, int want)
{
	unsigned long end = jiffies + msecs_to_jiffies(FINISH_LIMIT_MS);

	while (takers_done(takers, n) < want && time_before(jiffies, end))
		msleep(20);
	return takers_done(takers, n);
}

/* A count of N lets N different tasks through; the next one sleeps. */
static void semaphore_api_count_lets_n_through(struct kunit *test)
{
	struct taker takers[COUNT + 1] = {};
	struct semaphore sem;
	int i;

	sema_init(&sem, COUNT);
	for (i = 0; i <= COUNT; i++) {
		takers[i].sem = &sem;
		takers[i].op = OP_DOWN;
		taker_start(test, &takers[i]);
	}

	/* Exactly COUNT of them get through, in whatever order they ran. */
	KUNIT_EXPECT_EQ(test, takers_wait_done(takers, COUNT + 1, COUNT), COUNT);
	msleep(BLOCKED_CHECK_MS);
	KUNIT_EXPECT_EQ(test, takers_done(takers, COUNT + 1), COUNT);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);

	/* One up_sem() lets the sleeper through. */
	up_sem(&sem);
	KUNIT_EXPECT_EQ(test, takers_wait_done(takers, COUNT + 1, COUNT + 1),
			COUNT + 1);

	for (i = 0; i <= COUNT; i++)
		taker_reap(&takers[i]);
}

/* The same holds for one task taking the semaphore repeatedly. */
static void semaphore_api_count_is_not_recursive(struct kunit *test)
{
	struct taker extra = { .op = OP_DOWN };
	struct semaphore sem;
	int i;

	sema_init(&sem, COUNT);
	for (i = 0; i < COUNT; i++)
		down_sem(&sem);

	extra.sem = &sem;
	taker_start(test, &extra);
	KUNIT_EXPECT_TRUE(test, taker_blocked(&extra));

	up_sem(&sem);
	KUNIT_EXPECT_TRUE(test, taker_finished(&extra));
	taker_reap(&extra);

	/* Every down_sem() above is balanced: the count is back to COUNT. */
	for (i = 0; i < COUNT; i++)
		up_sem(&sem);
	for (i = 0; i < COUNT; i++)
		KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 0);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);
}

/* 0 means "got it", 1 means "did not": inverted from mutex_trylock(). */
static void semaphore_api_trylock_return_values(struct kunit *test)
{
	struct semaphore sem;

	sema_init(&sem, 2);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 0);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 0);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);
	/* A failed attempt takes nothing. */
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);

	up_sem(&sem);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 0);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);
	up_sem(&sem);
	up_sem(&sem);

	sema_init(&sem, USED_UP);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);
}

/* An unavailable semaphore makes down_sem_timeout() give up with -ETIME. */
static void semaphore_api_timeout_expires(struct kunit *test)
{
	const long timeout = msecs_to_jiffies(20);
	struct semaphore sem;
	unsigned long start;
	int ret;

	sema_init(&sem, USED_UP);
	start = jiffies;
	ret = down_sem_timeout(&sem, timeout);
	KUNIT_EXPECT_EQ(test, ret, -ETIME);
	KUNIT_EXPECT_GE(test, (long)(jiffies - start), timeout);
	/* The expired waiter took nothing. */
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);
}

/* An available semaphore is taken at once, a released one while waiting. */
static void semaphore_api_timeout_acquires(struct kunit *test)
{
	struct taker waiter = {
		.op = OP_DOWN_TIMEOUT,
		.timeout = msecs_to_jiffies(10 * FINISH_LIMIT_MS),
	};
	struct semaphore sem;

	sema_init(&sem, 1);
	KUNIT_EXPECT_EQ(test, down_sem_timeout(&sem, 1), 0);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);

	waiter.sem = &sem;
	taker_start(test, &waiter);
	KUNIT_EXPECT_TRUE(test, taker_blocked(&waiter));
	up_sem(&sem);
	KUNIT_EXPECT_TRUE(test, taker_finished(&waiter));
	taker_reap(&waiter);
	KUNIT_EXPECT_EQ(test, waiter.result, 0);
}

/* A pending signal, fatal or not, stops down_sem_interruptible(). */
static void semaphore_api_interruptible_pending_signal(struct kunit *test)
{
	struct taker nonfatal = {
		.op = OP_DOWN_INTERRUPTIBLE, .allow = SIGUSR1, .raise = SIGUSR1,
	};
	struct taker fatal = { .op = OP_DOWN_INTERRUPTIBLE, .raise = SIGKILL };
	struct semaphore sem;

	sema_init(&sem, USED_UP);
	nonfatal.sem = &sem;
	fatal.sem = &sem;

	taker_start(test, &nonfatal);
	KUNIT_EXPECT_TRUE(test, taker_finished(&nonfatal));
	taker_reap(&nonfatal);
	KUNIT_EXPECT_EQ(test, nonfatal.result, -EINTR);

	taker_start(test, &fatal);
	KUNIT_EXPECT_TRUE(test, taker_finished(&fatal));
	taker_reap(&fatal);
	KUNIT_EXPECT_EQ(test, fatal.result, -EINTR);

	/* Neither interrupted waiter took the semaphore. */
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);
}

/* A signal sent to a task asleep in down_sem_interruptible() wakes it. */
static void semaphore_api_interruptible_signal_while_waiting(struct kunit *test)
{
	struct taker waiter = { .op = OP_DOWN_INTERRUPTIBLE, .allow = SIGUSR1 };
	struct semaphore sem;

	sema_init(&sem, USED_UP);
	waiter.sem = &sem;
	taker_start(test, &waiter);
	KUNIT_EXPECT_TRUE(test, taker_blocked(&waiter));

	send_sig(SIGUSR1, waiter.task, 1);
	KUNIT_EXPECT_TRUE(test, taker_finished(&waiter));
	taker_reap(&waiter);
	KUNIT_EXPECT_EQ(test, waiter.result, -EINTR);
}

/* The fast path takes an available semaphore even with a signal pending. */
static void semaphore_api_interruptible_available(struct kunit *test)
{
	struct taker taker = {
		.op = OP_DOWN_INTERRUPTIBLE, .allow = SIGUSR1, .raise = SIGUSR1,
	};
	struct semaphore sem;

	sema_init(&sem, 1);
	taker.sem = &sem;
	taker_start(test, &taker);
	KUNIT_EXPECT_TRUE(test, taker_finished(&taker));
	taker_reap(&taker);
	KUNIT_EXPECT_EQ(test, taker.result, 0);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);
}

/* A pending fatal signal stops down_sem_killable(). */
static void semaphore_api_killable_fatal_signal(struct kunit *test)
{
	struct taker taker = { .op = OP_DOWN_KILLABLE, .raise = SIGKILL };
	struct semaphore sem;

	sema_init(&sem, USED_UP);
	taker.sem = &sem;
	taker_start(test, &taker);
	KUNIT_EXPECT_TRUE(test, taker_finished(&taker));
	taker_reap(&taker);
	KUNIT_EXPECT_EQ(test, taker.result, -EINTR);
	KUNIT_EXPECT_EQ(test, down_sem_trylock(&sem), 1);
}

/* A pending signal that is not fatal does not stop down_sem_killable(). */
static void semaphore_api_killable_ignores_other_signals(struct kunit *test)
{
	struct taker taker = {
		.op = OP_DOWN_KILLABLE, .allow = SIGUSR1, .raise = SIGUSR1,
	};
	struct semaphore sem;

	sema_init(&sem, USED_UP);
	taker.sem = &sem;
	taker_start(test, &taker);
	KUNIT_EXPECT_TRUE(test, taker_blocked(&taker));

	up_sem(&sem);
	KUNIT_EXPECT_TRUE(test, taker_finished(&taker));
	taker_reap(&taker);
	KUNIT_EXPECT_EQ(test, taker.result, 0);
}

static struct kunit_case semaphore_api_cases[] = {
	KUNIT_CASE(semaphore_api_count_lets_n_through),
	KUNIT_CASE(semaphore_api_count_is_not_recursive),
	KUNIT_CASE(semaphore_api_trylock_return_values),
	KUNIT_CASE(semaphore_api_timeout_expires),
	KUNIT_CASE(semaphore_api_timeout_acquires),
	KUNIT_CASE(semaphore_api_interruptible_pending_signal),
	KUNIT_CASE(semaphore_api_interruptible_signal_while_waiting),
	KUNIT_CASE(semaphore_api_interruptible_available),
	KUNIT_CASE(semaphore_api_killable_fatal_signal),
	KUNIT_CASE(semaphore_api_killable_ignores_other_signals),
	{}
};

static struct kunit_suite semaphore_api_suite = {
	.name = "sem2mutex_semaphore_api",
	.test_cases = semaphore_api_cases,
};
kunit_test_suite(semaphore_api_suite);

MODULE_DESCRIPTION("KUnit tests for the down_sem() counting semaphore API");
MODULE_LICENSE("GPL");
