// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the simple exchange-based mutex
 *
 * The behavioural tests run on struct simple_mutex and, when
 * CONFIG_MUTEX_SIMPLE=y makes it the implementation of struct mutex, on
 * struct mutex as well: mutual exclusion under contention, FIFO hand-over
 * without lock stealing, trylock, interruptible and killable sleeps that
 * give up on a signal without losing a hand-over, and the
 * CONFIG_DEBUG_MUTEX_OWNER report of a release by a non-owner.  The mutex
 * API and ww_mutex tests run on whatever struct mutex is configured.
 *
 * The non-owner release test provokes the "BUG:" report on purpose: it
 * sets debug_locks_silent around it, as lib/locking-selftest.c does, and
 * checks the report counter instead, so that the boot log stays clean.
 */

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/debug_locks.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/signal.h>
#include <linux/simple_mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/ww_mutex.h>

#define SMT_TIMEOUT		(10 * HZ)
#define SMT_CONTENDERS		4
#define SMT_ITERATIONS		200
#define SMT_FIFO_WAITERS	4

/* A lock under test: struct simple_mutex, or struct mutex on top of it. */
struct smt_lock {
	const struct smt_lock_ops *ops;
	union {
		struct simple_mutex smutex;
		struct mutex mutex;
	};
};

struct smt_lock_ops {
	const char *name;
	void (*init)(struct smt_lock *l);
	void (*lock)(struct smt_lock *l);
	int (*lock_interruptible)(struct smt_lock *l);
	int (*lock_killable)(struct smt_lock *l);
	int (*trylock)(struct smt_lock *l);
	void (*unlock)(struct smt_lock *l);
	bool (*is_locked)(struct smt_lock *l);
	struct simple_mutex_base *(*base)(struct smt_lock *l);
};

static void smt_simple_init(struct smt_lock *l)
{
	simple_mutex_init(&l->smutex);
}

static void smt_simple_lock(struct smt_lock *l)
{
	simple_mutex_lock(&l->smutex);
}

static int smt_simple_lock_interruptible(struct smt_lock *l)
{
	return simple_mutex_lock_interruptible(&l->smutex);
}

static int smt_simple_lock_killable(struct smt_lock *l)
{
	return simple_mutex_lock_killable(&l->smutex);
}

static int smt_simple_trylock(struct smt_lock *l)
{
	return simple_mutex_trylock(&l->smutex);
}

static void smt_simple_unlock(struct smt_lock *l)
{
	simple_mutex_unlock(&l->smutex);
}

static bool smt_simple_is_locked(struct smt_lock *l)
{
	return simple_mutex_is_locked(&l->smutex);
}

static struct simple_mutex_base *smt_simple_base(struct smt_lock *l)
{
	return &l->smutex.base;
}

static const struct smt_lock_ops smt_simple_ops = {
	.name			= "simple_mutex",
	.init			= smt_simple_init,
	.lock			= smt_simple_lock,
	.lock_interruptible	= smt_simple_lock_interruptible,
	.lock_killable		= smt_simple_lock_killable,
	.trylock		= smt_simple_trylock,
	.unlock			= smt_simple_unlock,
	.is_locked		= smt_simple_is_locked,
	.base			= smt_simple_base,
};

#ifdef CONFIG_MUTEX_SIMPLE
static void smt_mutex_init(struct smt_lock *l)
{
	mutex_init(&l->mutex);
}

static void smt_mutex_lock(struct smt_lock *l)
{
	mutex_lock(&l->mutex);
}

static int smt_mutex_lock_interruptible(struct smt_lock *l)
{
	return mutex_lock_interruptible(&l->mutex);
}

static int smt_mutex_lock_killable(struct smt_lock *l)
{
	return mutex_lock_killable(&l->mutex);
}

static int smt_mutex_trylock(struct smt_lock *l)
{
	return mutex_trylock(&l->mutex);
}

static void smt_mutex_unlock(struct smt_lock *l)
{
	mutex_unlock(&l->mutex);
}

static bool smt_mutex_is_locked(struct smt_lock *l)
{
	return mutex_is_locked(&l->mutex);
}

static struct simple_mutex_base *smt_mutex_base(struct smt_lock *l)
{
	return &l->mutex.base;
}

static const struct smt_lock_ops smt_mutex_ops = {
	.name			= "mutex",
	.init			= smt_mutex_init,
	.lock			= smt_mutex_lock,
	.lock_interruptible	= smt_mutex_lock_interruptible,
	.lock_killable		= smt_mutex_lock_killable,
	.trylock		= smt_mutex_trylock,
	.unlock			= smt_mutex_unlock,
	.is_locked		= smt_mutex_is_locked,
	.base			= smt_mutex_base,
};
#endif

static const struct smt_lock_ops *smt_ops_params[] = {
	&smt_simple_ops,
#ifdef CONFIG_MUTEX_SIMPLE
	&smt_mutex_ops,
#endif
};

static void smt_ops_desc(const struct smt_lock_ops **ops, char *desc)
{
	strscpy(desc, (*ops)->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(smt_ops, smt_ops_params, smt_ops_desc);

static struct smt_lock *smt_new_lock(struct kunit *test)
{
	const struct smt_lock_ops *const *ops = test->param_value;
	struct smt_lock *l;

	l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, l);
	l->ops = *ops;
	l->ops->init(l);
	return l;
}

/* Number of tasks sleeping on the lock, read under its wait_lock. */
static unsigned int smt_waiters(struct smt_lock *l)
{
	struct simple_mutex_base *base = l->ops->base(l);
	struct list_head *pos;
	unsigned int n = 0;
	unsigned long flags;

	raw_spin_lock_irqsave(&base->wait_lock, flags);
	list_for_each(pos, &base->wait_list)
		n++;
	raw_spin_unlock_irqrestore(&base->wait_lock, flags);
	return n;
}

static bool smt_wait_for_waiters(struct smt_lock *l, unsigned int n)
{
	unsigned long deadline = jiffies + SMT_TIMEOUT;

	while (smt_waiters(l) != n) {
		if (time_after(jiffies, deadline))
			return false;
		usleep_range(1000, 2000);
	}
	return true;
}

/*
 * A kthread that takes the lock with one of the lock functions, records
 * the order in which it got it, holds it until told to let go, and reports
 * the lock function's result.
 */
enum smt_lock_kind { SMT_LOCK, SMT_LOCK_INTERRUPTIBLE, SMT_LOCK_KILLABLE };

struct smt_thread {
	struct smt_lock *lock;
	enum smt_lock_kind kind;
	int index;
	int result;
	atomic_t *order_pos;
	int *order;
	struct completion acquired;
	struct completion release;
	struct completion done;
	struct task_struct *task;
};

static int smt_thread_fn(void *data)
{
	struct smt_thread *t = data;
	struct smt_lock *l = t->lock;

	allow_signal(SIGINT);
	allow_signal(SIGKILL);

	switch (t->kind) {
	case SMT_LOCK:
		l->ops->lock(l);
		t->result = 0;
		break;
	case SMT_LOCK_INTERRUPTIBLE:
		t->result = l->ops->lock_interruptible(l);
		break;
	case SMT_LOCK_KILLABLE:
		t->result = l->ops->lock_killable(l);
		break;
	}

	if (t->result == 0 && t->order)
		t->order[atomic_inc_return(t->order_pos) - 1] = t->index;
	complete(&t->acquired);

	if (t->result == 0) {
		wait_for_completion(&t->release);
		l->ops->unlock(l);
	}
	kthread_complete_and_exit(&t->done, 0);
}

static struct smt_thread *smt_start_ordered(struct kunit *test,
					    struct smt_lock *l,
					    enum smt_lock_kind kind, int index,
					    int *order, atomic_t *order_pos)
{
	struct smt_thread *t;
	struct task_struct *task;

	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	t->lock = l;
	t->kind = kind;
	t->index = index;
	t->result = -EINVAL;
	t->order = order;
	t->order_pos = order_pos;
	init_completion(&t->acquired);
	init_completion(&t->release);
	init_completion(&t->done);

	task = kthread_create(smt_thread_fn, t, "smt-%s-%d", l->ops->name, index);
	KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	get_task_struct(task);
	t->task = task;
	wake_up_process(task);
	return t;
}

static struct smt_thread *smt_start(struct kunit *test, struct smt_lock *l,
				    enum smt_lock_kind kind, int index)
{
	return smt_start_ordered(test, l, kind, index, NULL, NULL);
}

/* Let the thread go if it holds the lock, and wait for it to exit. */
static void smt_finish(struct kunit *test, struct smt_thread *t)
{
	complete(&t->release);
	KUNIT_EXPECT_NE(test, 0UL,
			wait_for_completion_timeout(&t->done, SMT_TIMEOUT));
	put_task_struct(t->task);
}

static void smt_trylock(struct kunit *test)
{
	struct smt_lock *l = smt_new_lock(test);
	struct smt_thread *t;

	KUNIT_EXPECT_FALSE(test, l->ops->is_locked(l));
	KUNIT_ASSERT_EQ(test, 1, l->ops->trylock(l));
	KUNIT_EXPECT_TRUE(test, l->ops->is_locked(l));
	/* Held: a second attempt fails, and it does not queue anybody. */
	KUNIT_EXPECT_EQ(test, 0, l->ops->trylock(l));
	KUNIT_EXPECT_EQ(test, 0U, smt_waiters(l));
	l->ops->unlock(l);
	KUNIT_EXPECT_FALSE(test, l->ops->is_locked(l));

	/* Held by another task: fails too; free again once it lets go. */
	t = smt_start(test, l, SMT_LOCK, 0);
	KUNIT_ASSERT_NE(test, 0UL,
			wait_for_completion_timeout(&t->acquired, SMT_TIMEOUT));
	KUNIT_EXPECT_EQ(test, 0, l->ops->trylock(l));
	smt_finish(test, t);
	KUNIT_EXPECT_EQ(test, 1, l->ops->trylock(l));
	l->ops->unlock(l);
}

struct smt_contention {
	struct smt_lock *lock;
	unsigned long counter;		/* protected by lock */
	int inside;			/* tasks inside the critical section */
	atomic_t overlaps;
	atomic_t contended;
	atomic_t finished;
	struct completion all_done;
};

static int smt_contender_fn(void *data)
{
	struct smt_contention *c = data;
	struct smt_lock *l = c->lock;
	int i, inside;

	for (i = 0; i < SMT_ITERATIONS; i++) {
		if (!l->ops->trylock(l)) {
			atomic_inc(&c->contended);
			l->ops->lock(l);
		}
		inside = READ_ONCE(c->inside) + 1;
		WRITE_ONCE(c->inside, inside);
		if (inside != 1)
			atomic_inc(&c->overlaps);
		c->counter++;
		/* Sleep now and then with the lock held, so others queue. */
		if (i % 8 == 0)
			usleep_range(50, 100);
		else
			cpu_relax();
		WRITE_ONCE(c->inside, READ_ONCE(c->inside) - 1);
		l->ops->unlock(l);
		cond_resched();
	}
	if (atomic_inc_return(&c->finished) == SMT_CONTENDERS)
		complete(&c->all_done);
	return 0;
}

static void smt_mutual_exclusion(struct kunit *test)
{
	struct smt_contention *c;
	struct task_struct *task;
	int i;

	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	c->lock = smt_new_lock(test);
	init_completion(&c->all_done);

	for (i = 0; i < SMT_CONTENDERS; i++) {
		task = kthread_run(smt_contender_fn, c, "smt-contend-%d", i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	}
	KUNIT_ASSERT_NE(test, 0UL,
			wait_for_completion_timeout(&c->all_done, 6 * SMT_TIMEOUT));

	KUNIT_EXPECT_EQ(test, c->counter,
			(unsigned long)SMT_CONTENDERS * SMT_ITERATIONS);
	KUNIT_EXPECT_EQ(test, 0, atomic_read(&c->overlaps));
	/* The sleeps inside the critical section force the slow path. */
	KUNIT_EXPECT_GT(test, atomic_read(&c->contended), 0);
	KUNIT_EXPECT_FALSE(test, c->lock->ops->is_locked(c->lock));
	KUNIT_EXPECT_EQ(test, 0U, smt_waiters(c->lock));
}

static void smt_fifo_handoff(struct kunit *test)
{
	struct smt_lock *l = smt_new_lock(test);
	struct smt_thread *t[SMT_FIFO_WAITERS];
	int order[SMT_FIFO_WAITERS];
	atomic_t order_pos = ATOMIC_INIT(0);
	int i;

	l->ops->lock(l);
	/* Queue the waiters one at a time, so their arrival order is known. */
	for (i = 0; i < SMT_FIFO_WAITERS; i++) {
		t[i] = smt_start_ordered(test, l, SMT_LOCK, i, order, &order_pos);
		KUNIT_ASSERT_TRUE(test, smt_wait_for_waiters(l, i + 1));
	}

	l->ops->unlock(l);
	/*
	 * The mutex went straight to the first waiter, which may not even
	 * have run yet: it is still held, and a newcomer cannot steal it.
	 */
	KUNIT_EXPECT_TRUE(test, l->ops->is_locked(l));
	KUNIT_EXPECT_EQ(test, 0, l->ops->trylock(l));

	for (i = 0; i < SMT_FIFO_WAITERS; i++) {
		KUNIT_ASSERT_NE(test, 0UL,
				wait_for_completion_timeout(&t[i]->acquired,
							    SMT_TIMEOUT));
		/* Only the owner was woken; the others still sleep. */
		KUNIT_EXPECT_EQ(test, (unsigned int)(SMT_FIFO_WAITERS - 1 - i),
				smt_waiters(l));
		smt_finish(test, t[i]);
	}

	KUNIT_ASSERT_EQ(test, SMT_FIFO_WAITERS, atomic_read(&order_pos));
	for (i = 0; i < SMT_FIFO_WAITERS; i++)
		KUNIT_EXPECT_EQ(test, i, order[i]);
	KUNIT_EXPECT_FALSE(test, l->ops->is_locked(l));
}

/*
 * A waiter that gives up on a signal leaves the queue, and the next
 * waiter still gets the mutex when it is released.
 */
static void smt_signal_aborts_wait(struct kunit *test, enum smt_lock_kind kind,
				   int sig)
{
	struct smt_lock *l = smt_new_lock(test);
	struct smt_thread *quitter, *next;

	l->ops->lock(l);
	quitter = smt_start(test, l, kind, 0);
	KUNIT_ASSERT_TRUE(test, smt_wait_for_waiters(l, 1));
	next = smt_start(test, l, SMT_LOCK, 1);
	KUNIT_ASSERT_TRUE(test, smt_wait_for_waiters(l, 2));

	send_sig(sig, quitter->task, 1);
	KUNIT_ASSERT_NE(test, 0UL,
			wait_for_completion_timeout(&quitter->acquired,
						    SMT_TIMEOUT));
	KUNIT_EXPECT_EQ(test, -EINTR, quitter->result);
	KUNIT_EXPECT_EQ(test, 1U, smt_waiters(l));
	smt_finish(test, quitter);

	/* No hand-over is lost: the next waiter gets the mutex. */
	l->ops->unlock(l);
	KUNIT_EXPECT_NE(test, 0UL,
			wait_for_completion_timeout(&next->acquired, SMT_TIMEOUT));
	KUNIT_EXPECT_EQ(test, 0, next->result);
	smt_finish(test, next);
	KUNIT_EXPECT_FALSE(test, l->ops->is_locked(l));
}

/*
 * The mutex is handed to a waiter and a signal arrives before it runs: it
 * keeps the mutex and reports success instead of dropping the hand-over.
 */
static void smt_signal_after_handoff(struct kunit *test, enum smt_lock_kind kind,
				     int sig)
{
	struct smt_lock *l = smt_new_lock(test);
	struct smt_thread *t;

	l->ops->lock(l);
	t = smt_start(test, l, kind, 0);
	KUNIT_ASSERT_TRUE(test, smt_wait_for_waiters(l, 1));
	l->ops->unlock(l);
	send_sig(sig, t->task, 1);

	KUNIT_ASSERT_NE(test, 0UL,
			wait_for_completion_timeout(&t->acquired, SMT_TIMEOUT));
	KUNIT_EXPECT_EQ(test, 0, t->result);
	KUNIT_EXPECT_TRUE(test, l->ops->is_locked(l));
	smt_finish(test, t);
	KUNIT_EXPECT_FALSE(test, l->ops->is_locked(l));
}

static void smt_interruptible_signal(struct kunit *test)
{
	smt_signal_aborts_wait(test, SMT_LOCK_INTERRUPTIBLE, SIGINT);
	smt_signal_after_handoff(test, SMT_LOCK_INTERRUPTIBLE, SIGINT);
}

static void smt_killable_signal(struct kunit *test)
{
	struct smt_lock *l = smt_new_lock(test);
	struct smt_thread *t;

	smt_signal_aborts_wait(test, SMT_LOCK_KILLABLE, SIGKILL);
	smt_signal_after_handoff(test, SMT_LOCK_KILLABLE, SIGKILL);

	/* A signal that is not fatal does not stop a killable sleep. */
	l->ops->lock(l);
	t = smt_start(test, l, SMT_LOCK_KILLABLE, 0);
	KUNIT_ASSERT_TRUE(test, smt_wait_for_waiters(l, 1));
	send_sig(SIGINT, t->task, 1);
	msleep(20);
	KUNIT_EXPECT_FALSE(test, completion_done(&t->acquired));
	KUNIT_EXPECT_EQ(test, 1U, smt_waiters(l));
	l->ops->unlock(l);
	KUNIT_ASSERT_NE(test, 0UL,
			wait_for_completion_timeout(&t->acquired, SMT_TIMEOUT));
	KUNIT_EXPECT_EQ(test, 0, t->result);
	smt_finish(test, t);
}

#ifdef CONFIG_DEBUG_MUTEX_OWNER
/*
 * Takes the lock with lockdep off (lockdep would otherwise report the
 * foreign release itself, and turn itself off), then waits to be told to
 * exit without unlocking.
 */
static int smt_owner_fn(void *data)
{
	struct smt_thread *t = data;

	lockdep_off();
	t->lock->ops->lock(t->lock);
	lockdep_on();
	complete(&t->acquired);
	wait_for_completion(&t->release);
	kthread_complete_and_exit(&t->done, 0);
}

static void smt_silent_foreign_unlock(struct smt_lock *l)
{
	int saved = debug_locks_silent;

	debug_locks_silent = 1;
	lockdep_off();
	l->ops->unlock(l);
	lockdep_on();
	debug_locks_silent = saved;
}
#endif

static void smt_owner_check(struct kunit *test)
{
#ifdef CONFIG_DEBUG_MUTEX_OWNER
	struct smt_lock *l = smt_new_lock(test);
	struct smt_thread *t;
	unsigned long before;

	/* The owner's own release is not reported. */
	before = simple_mutex_bad_release_count();
	l->ops->lock(l);
	l->ops->unlock(l);
	KUNIT_EXPECT_EQ(test, before, simple_mutex_bad_release_count());

	/* Released by a task that does not own it: reported. */
	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	t->lock = l;
	init_completion(&t->acquired);
	init_completion(&t->release);
	init_completion(&t->done);
	t->task = kthread_run(smt_owner_fn, t, "smt-owner");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t->task));
	get_task_struct(t->task);
	KUNIT_ASSERT_NE(test, 0UL,
			wait_for_completion_timeout(&t->acquired, SMT_TIMEOUT));
	KUNIT_EXPECT_PTR_EQ(test, t->task, READ_ONCE(l->ops->base(l)->owner));

	smt_silent_foreign_unlock(l);
	KUNIT_EXPECT_EQ(test, before + 1, simple_mutex_bad_release_count());
	KUNIT_EXPECT_FALSE(test, l->ops->is_locked(l));
	smt_finish(test, t);

	/* Released while nobody holds it: reported too. */
	smt_silent_foreign_unlock(l);
	KUNIT_EXPECT_EQ(test, before + 2, simple_mutex_bad_release_count());
#else
	kunit_skip(test, "CONFIG_DEBUG_MUTEX_OWNER is not set");
#endif
}

/* The struct mutex API as used across the tree, whichever mutex it is. */
static DEFINE_MUTEX(smt_static_mutex);

struct smt_nest_parent {
	struct mutex outer;
};

static void smt_mutex_api(struct kunit *test)
{
	struct smt_nest_parent *p;
	struct mutex *inner;
	atomic_t refs = ATOMIC_INIT(2);
	int i;

	KUNIT_EXPECT_FALSE(test, mutex_is_locked(&smt_static_mutex));
	mutex_lock(&smt_static_mutex);
	KUNIT_EXPECT_TRUE(test, mutex_is_locked(&smt_static_mutex));
	lockdep_assert_held(&smt_static_mutex);
	mutex_unlock(&smt_static_mutex);

	KUNIT_EXPECT_EQ(test, 0, mutex_lock_interruptible(&smt_static_mutex));
	mutex_unlock(&smt_static_mutex);
	KUNIT_EXPECT_EQ(test, 0, mutex_lock_killable(&smt_static_mutex));
	mutex_unlock(&smt_static_mutex);
	mutex_lock_io(&smt_static_mutex);
	mutex_unlock(&smt_static_mutex);

	p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	inner = kunit_kzalloc(test, 2 * sizeof(*inner), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_ASSERT_NOT_NULL(test, inner);
	mutex_init(&p->outer);
	/* One call site: both inner mutexes are of one lockdep class. */
	for (i = 0; i < 2; i++)
		mutex_init(&inner[i]);

	/* Two mutexes of one class, ordered by an outer mutex. */
	mutex_lock(&p->outer);
	mutex_lock_nest_lock(&inner[0], &p->outer);
	mutex_lock_nest_lock(&inner[1], &p->outer);
	mutex_unlock(&inner[1]);
	mutex_unlock(&inner[0]);
	mutex_unlock(&p->outer);

	/* ... or by subclass. */
	mutex_lock(&inner[0]);
	mutex_lock_nested(&inner[1], SINGLE_DEPTH_NESTING);
	mutex_unlock(&inner[1]);
	KUNIT_EXPECT_EQ(test, 0,
			mutex_lock_interruptible_nested(&inner[1],
							SINGLE_DEPTH_NESTING));
	mutex_unlock(&inner[1]);
	KUNIT_EXPECT_EQ(test, 0,
			mutex_lock_killable_nested(&inner[1],
						   SINGLE_DEPTH_NESTING));
	mutex_unlock(&inner[1]);
	mutex_lock_io_nested(&inner[1], SINGLE_DEPTH_NESTING);
	mutex_unlock(&inner[1]);
	mutex_unlock(&inner[0]);

	/* Returns holding the mutex only when the count drops to zero. */
	KUNIT_EXPECT_EQ(test, 0, atomic_dec_and_mutex_lock(&refs, &p->outer));
	KUNIT_EXPECT_FALSE(test, mutex_is_locked(&p->outer));
	KUNIT_EXPECT_EQ(test, 1, atomic_dec_and_mutex_lock(&refs, &p->outer));
	KUNIT_EXPECT_TRUE(test, mutex_is_locked(&p->outer));
	mutex_unlock(&p->outer);

	KUNIT_EXPECT_EQ(test, 1, mutex_trylock(&inner[0]));
	KUNIT_EXPECT_EQ(test, 0, mutex_trylock(&inner[0]));
	mutex_unlock(&inner[0]);

	mutex_destroy(&inner[0]);
	mutex_destroy(&inner[1]);
	mutex_destroy(&p->outer);
}

/*
 * ww_mutex, whose base is rt_mutex under CONFIG_MUTEX_SIMPLE: two tasks
 * take the same two locks in opposite orders and must back off rather
 * than deadlock.
 */
static DEFINE_WD_CLASS(smt_ww_class);

#define SMT_WW_ROUNDS	50

struct smt_ww {
	struct ww_mutex locks[2];
	unsigned long counter;		/* protected by both locks */
	atomic_t backoffs;
	atomic_t errors;
	atomic_t finished;
	struct completion all_done;
};

struct smt_ww_task {
	struct smt_ww *ww;
	int first;
};

static void smt_ww_lock_pair(struct smt_ww *ww, int first)
{
	struct ww_mutex *a = &ww->locks[first], *b = &ww->locks[!first];
	struct ww_acquire_ctx ctx;
	int ret;

	ww_acquire_init(&ctx, &smt_ww_class);
	/* Holding nothing, the first lock never has to back off. */
	if (ww_mutex_lock(a, &ctx)) {
		atomic_inc(&ww->errors);
		ww_acquire_fini(&ctx);
		return;
	}
	while ((ret = ww_mutex_lock(b, &ctx)) == -EDEADLK) {
		/* Back off: drop what we hold, wait for the contended lock. */
		atomic_inc(&ww->backoffs);
		ww_mutex_unlock(a);
		ww_mutex_lock_slow(b, &ctx);
		swap(a, b);
	}
	if (ret) {
		atomic_inc(&ww->errors);
		ww_mutex_unlock(a);
		ww_acquire_fini(&ctx);
		return;
	}
	ww_acquire_done(&ctx);

	ww->counter++;
	if (ww->counter % 4 == 0)
		usleep_range(20, 50);

	ww_mutex_unlock(a);
	ww_mutex_unlock(b);
	ww_acquire_fini(&ctx);
}

static int smt_ww_fn(void *data)
{
	struct smt_ww_task *t = data;
	int i;

	for (i = 0; i < SMT_WW_ROUNDS; i++)
		smt_ww_lock_pair(t->ww, t->first);
	if (atomic_inc_return(&t->ww->finished) == 2)
		complete(&t->ww->all_done);
	return 0;
}

static void smt_ww_mutex(struct kunit *test)
{
	struct smt_ww_task *tasks;
	struct smt_ww *ww;
	struct ww_acquire_ctx ctx;
	struct task_struct *task;
	int i;

	ww = kunit_kzalloc(test, sizeof(*ww), GFP_KERNEL);
	tasks = kunit_kzalloc(test, 2 * sizeof(*tasks), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ww);
	KUNIT_ASSERT_NOT_NULL(test, tasks);
	ww_mutex_init(&ww->locks[0], &smt_ww_class);
	ww_mutex_init(&ww->locks[1], &smt_ww_class);
	init_completion(&ww->all_done);

	/* Single-lock use and the context rules. */
	ww_acquire_init(&ctx, &smt_ww_class);
	KUNIT_EXPECT_EQ(test, 0, ww_mutex_lock(&ww->locks[0], &ctx));
	KUNIT_EXPECT_EQ(test, -EALREADY, ww_mutex_lock(&ww->locks[0], &ctx));
	KUNIT_EXPECT_TRUE(test, ww_mutex_is_locked(&ww->locks[0]));
	ww_mutex_unlock(&ww->locks[0]);
	ww_acquire_fini(&ctx);
	KUNIT_EXPECT_EQ(test, 1, ww_mutex_trylock(&ww->locks[1], NULL));
	ww_mutex_unlock(&ww->locks[1]);

	for (i = 0; i < 2; i++) {
		tasks[i].ww = ww;
		tasks[i].first = i;
		task = kthread_run(smt_ww_fn, &tasks[i], "smt-ww-%d", i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	}
	KUNIT_ASSERT_NE(test, 0UL,
			wait_for_completion_timeout(&ww->all_done, 6 * SMT_TIMEOUT));
	KUNIT_EXPECT_EQ(test, 0, atomic_read(&ww->errors));
	KUNIT_EXPECT_EQ(test, 2UL * SMT_WW_ROUNDS, ww->counter);
	kunit_info(test, "ww_mutex back-offs: %d\n", atomic_read(&ww->backoffs));
	ww_mutex_destroy(&ww->locks[0]);
	ww_mutex_destroy(&ww->locks[1]);
}

static struct kunit_case simple_mutex_test_cases[] = {
	KUNIT_CASE_PARAM(smt_trylock, smt_ops_gen_params),
	KUNIT_CASE_PARAM(smt_mutual_exclusion, smt_ops_gen_params),
	KUNIT_CASE_PARAM(smt_fifo_handoff, smt_ops_gen_params),
	KUNIT_CASE_PARAM(smt_interruptible_signal, smt_ops_gen_params),
	KUNIT_CASE_PARAM(smt_killable_signal, smt_ops_gen_params),
	KUNIT_CASE_PARAM(smt_owner_check, smt_ops_gen_params),
	KUNIT_CASE(smt_mutex_api),
	KUNIT_CASE(smt_ww_mutex),
	{}
};

static struct kunit_suite simple_mutex_test_suite = {
	.name = "simple_mutex",
	.test_cases = simple_mutex_test_cases,
};

kunit_test_suite(simple_mutex_test_suite);

MODULE_DESCRIPTION("KUnit tests for the simple exchange-based mutex");
MODULE_LICENSE("GPL");
