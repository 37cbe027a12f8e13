// SPDX-License-Identifier: GPL-2.0
/*
 * Semaphore vs mutex vs simple mutex, measured in one boot
 *
 * The 2005 discussion of the simple mutex left open whether it "may
 * actually be slower than the semaphores it replaces".  This suite times,
 * in the same kernel and interleaved round by round so that drift hits all
 * of them alike:
 *
 * - semaphore:    struct semaphore with down()/up(), count 1;
 * - mutex:        struct mutex (the generic mutex unless MUTEX_SIMPLE=y);
 * - simple_mutex: struct simple_mutex.
 *
 * Each measurement is one console line, for bench.json:
 *
 *   sem2mutex-bench: v=1 kind=env mutex=generic cpus=4 hz=100 ...
 *   sem2mutex-bench: v=1 kind=uncontended impl=semaphore threads=1 round=0 ops=50000 ns=1234567
 *   sem2mutex-bench: v=1 kind=contended impl=mutex threads=4 round=2 ops=91234 ns=200123456
 *
 * "uncontended" is lock+unlock in a loop by one task; "contended" is the
 * number of critical sections N kthreads, one per CPU as far as there are
 * CPUs, complete in a fixed time, each critical section and each gap
 * between two being a short busy loop.  Under emulation (QEMU TCG) absolute
 * times are not hardware times: compare implementations by ratio only.
 */

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/cache.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/semaphore.h>
#include <linux/simple_mutex.h>
#include <linux/slab.h>

#define BENCH_ROUNDS			7
#define BENCH_UNCONTENDED_OPS		50000
#define BENCH_CONTENDED_ROUNDS		5
#define BENCH_CONTENDED_MS		150
#define BENCH_MAX_THREADS		4
#define BENCH_CS_SPINS			32
#define BENCH_OUTSIDE_SPINS		32
#define BENCH_TIMEOUT			(60 * HZ)

enum bench_impl { BENCH_SEMAPHORE, BENCH_MUTEX, BENCH_SIMPLE_MUTEX, BENCH_NR_IMPLS };

static const char * const bench_impl_names[BENCH_NR_IMPLS] = {
	[BENCH_SEMAPHORE]	= "semaphore",
	[BENCH_MUTEX]		= "mutex",
	[BENCH_SIMPLE_MUTEX]	= "simple_mutex",
};

struct bench_locks {
	struct semaphore sem ____cacheline_aligned;
	struct mutex mutex ____cacheline_aligned;
	struct simple_mutex smutex ____cacheline_aligned;
};

/*
 * Called with a constant @impl from always-inlined loops, so each loop is
 * compiled with direct calls to one implementation.
 */
static __always_inline void bench_lock(struct bench_locks *locks,
				       enum bench_impl impl)
{
	switch (impl) {
	case BENCH_SEMAPHORE:
		down(&locks->sem);
		break;
	case BENCH_MUTEX:
		mutex_lock(&locks->mutex);
		break;
	case BENCH_SIMPLE_MUTEX:
		simple_mutex_lock(&locks->smutex);
		break;
	default:
		break;
	}
}

static __always_inline void bench_unlock(struct bench_locks *locks,
					 enum bench_impl impl)
{
	switch (impl) {
	case BENCH_SEMAPHORE:
		up(&locks->sem);
		break;
	case BENCH_MUTEX:
		mutex_unlock(&locks->mutex);
		break;
	case BENCH_SIMPLE_MUTEX:
		simple_mutex_unlock(&locks->smutex);
		break;
	default:
		break;
	}
}

/*
 * A little work that stays on the CPU: not cpu_relax(), whose PAUSE makes
 * QEMU's TCG leave the vCPU loop and would dominate every figure.
 */
static __always_inline void bench_spin(unsigned int spins)
{
	unsigned int i;

	for (i = 0; i < spins; i++)
		barrier();
}

static const char *bench_mutex_kind(void)
{
	if (IS_ENABLED(CONFIG_MUTEX_SIMPLE))
		return "simple";
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		return "rt";
	return "generic";
}

static void bench_print_env(struct kunit *test)
{
	kunit_info(test,
		   "sem2mutex-bench: v=1 kind=env mutex=%s cpus=%u hz=%d smp=%d preempt=%d prove_locking=%d debug_lock_alloc=%d debug_mutexes=%d debug_rt_mutexes=%d debug_mutex_owner=%d lock_stat=%d cs_spins=%d outside_spins=%d\n",
		   bench_mutex_kind(), num_online_cpus(), HZ,
		   IS_ENABLED(CONFIG_SMP), IS_ENABLED(CONFIG_PREEMPTION),
		   IS_ENABLED(CONFIG_PROVE_LOCKING),
		   IS_ENABLED(CONFIG_DEBUG_LOCK_ALLOC),
		   IS_ENABLED(CONFIG_DEBUG_MUTEXES),
		   IS_ENABLED(CONFIG_DEBUG_RT_MUTEXES),
		   IS_ENABLED(CONFIG_DEBUG_MUTEX_OWNER),
		   IS_ENABLED(CONFIG_LOCK_STAT),
		   BENCH_CS_SPINS, BENCH_OUTSIDE_SPINS);
}

static struct bench_locks *bench_new_locks(struct kunit *test)
{
	struct bench_locks *locks;

	locks = kunit_kzalloc(test, sizeof(*locks), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, locks);
	sema_init(&locks->sem, 1);
	mutex_init(&locks->mutex);
	simple_mutex_init(&locks->smutex);
	return locks;
}

static __always_inline u64 bench_uncontended_loop(struct bench_locks *locks,
						  enum bench_impl impl)
{
	u64 start = ktime_get_ns();
	unsigned int i;

	for (i = 0; i < BENCH_UNCONTENDED_OPS; i++) {
		bench_lock(locks, impl);
		bench_unlock(locks, impl);
	}
	return ktime_get_ns() - start;
}

static noinline u64 bench_uncontended_semaphore(struct bench_locks *locks)
{
	return bench_uncontended_loop(locks, BENCH_SEMAPHORE);
}

static noinline u64 bench_uncontended_mutex(struct bench_locks *locks)
{
	return bench_uncontended_loop(locks, BENCH_MUTEX);
}

static noinline u64 bench_uncontended_simple_mutex(struct bench_locks *locks)
{
	return bench_uncontended_loop(locks, BENCH_SIMPLE_MUTEX);
}

static u64 (* const bench_uncontended_fns[BENCH_NR_IMPLS])(struct bench_locks *) = {
	[BENCH_SEMAPHORE]	= bench_uncontended_semaphore,
	[BENCH_MUTEX]		= bench_uncontended_mutex,
	[BENCH_SIMPLE_MUTEX]	= bench_uncontended_simple_mutex,
};

static void bench_uncontended(struct kunit *test)
{
	struct bench_locks *locks = bench_new_locks(test);
	int round, impl;
	u64 ns;

	bench_print_env(test);
	for (round = 0; round < BENCH_ROUNDS; round++) {
		for (impl = 0; impl < BENCH_NR_IMPLS; impl++) {
			ns = bench_uncontended_fns[impl](locks);
			KUNIT_EXPECT_GT(test, ns, 0ULL);
			kunit_info(test,
				   "sem2mutex-bench: v=1 kind=uncontended impl=%s threads=1 round=%d ops=%d ns=%llu\n",
				   bench_impl_names[impl], round,
				   BENCH_UNCONTENDED_OPS, ns);
		}
	}
	/* Every lock was released as often as it was taken. */
	KUNIT_EXPECT_FALSE(test, mutex_is_locked(&locks->mutex));
	KUNIT_EXPECT_FALSE(test, simple_mutex_is_locked(&locks->smutex));
	KUNIT_EXPECT_EQ(test, 0, down_trylock(&locks->sem));
	up(&locks->sem);
}

struct bench_run {
	struct bench_locks *locks;
	unsigned int nthreads;
	struct completion go;
	struct completion all_done;
	atomic_t ready;
	atomic_t finished;
	unsigned long ops[BENCH_MAX_THREADS];
	bool stop ____cacheline_aligned;
	unsigned long shared ____cacheline_aligned;	/* under the lock */
};

struct bench_worker {
	struct bench_run *run;
	unsigned int index;
};

static __always_inline void bench_worker_loop(struct bench_worker *w,
					      enum bench_impl impl)
{
	struct bench_run *run = w->run;
	struct bench_locks *locks = run->locks;
	unsigned long ops = 0;

	atomic_inc(&run->ready);
	wait_for_completion(&run->go);
	while (!READ_ONCE(run->stop)) {
		bench_lock(locks, impl);
		run->shared++;
		bench_spin(BENCH_CS_SPINS);
		bench_unlock(locks, impl);
		ops++;
		bench_spin(BENCH_OUTSIDE_SPINS);
		cond_resched();
	}
	run->ops[w->index] = ops;
	if (atomic_inc_return(&run->finished) == run->nthreads)
		complete(&run->all_done);
}

static int bench_worker_semaphore(void *data)
{
	bench_worker_loop(data, BENCH_SEMAPHORE);
	return 0;
}

static int bench_worker_mutex(void *data)
{
	bench_worker_loop(data, BENCH_MUTEX);
	return 0;
}

static int bench_worker_simple_mutex(void *data)
{
	bench_worker_loop(data, BENCH_SIMPLE_MUTEX);
	return 0;
}

static int (* const bench_worker_fns[BENCH_NR_IMPLS])(void *) = {
	[BENCH_SEMAPHORE]	= bench_worker_semaphore,
	[BENCH_MUTEX]		= bench_worker_mutex,
	[BENCH_SIMPLE_MUTEX]	= bench_worker_simple_mutex,
};

static void bench_contended_run(struct kunit *test, struct bench_locks *locks,
				enum bench_impl impl, unsigned int nthreads,
				int round)
{
	struct bench_worker workers[BENCH_MAX_THREADS];
	struct task_struct *task;
	struct bench_run *run;
	unsigned long total = 0;
	unsigned int i, cpu;
	u64 start, ns;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, run);
	run->locks = locks;
	run->nthreads = nthreads;
	init_completion(&run->go);
	init_completion(&run->all_done);

	for (i = 0; i < nthreads; i++) {
		workers[i].run = run;
		workers[i].index = i;
		task = kthread_create(bench_worker_fns[impl], &workers[i],
				      "bench-%s-%u", bench_impl_names[impl], i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(task));
		cpu = cpumask_nth(i % num_online_cpus(), cpu_online_mask);
		kthread_bind(task, cpu);
		wake_up_process(task);
	}
	while (atomic_read(&run->ready) < nthreads)
		usleep_range(1000, 2000);

	start = ktime_get_ns();
	complete_all(&run->go);
	msleep(BENCH_CONTENDED_MS);
	WRITE_ONCE(run->stop, true);
	ns = ktime_get_ns() - start;

	KUNIT_ASSERT_NE(test, 0UL,
			wait_for_completion_timeout(&run->all_done,
						    BENCH_TIMEOUT));
	for (i = 0; i < nthreads; i++)
		total += run->ops[i];
	/* Mutual exclusion held: no increment of the counter was lost. */
	KUNIT_EXPECT_EQ(test, total, run->shared);
	KUNIT_EXPECT_GT(test, total, 0UL);
	kunit_info(test,
		   "sem2mutex-bench: v=1 kind=contended impl=%s threads=%u round=%d ops=%lu ns=%llu\n",
		   bench_impl_names[impl], nthreads, round, total, ns);
	kfree(run);
}

static void bench_contended(struct kunit *test)
{
	static const unsigned int thread_counts[] = { 1, 2, 4 };
	struct bench_locks *locks = bench_new_locks(test);
	int round, impl, t;

	bench_print_env(test);
	for (t = 0; t < ARRAY_SIZE(thread_counts); t++)
		for (round = 0; round < BENCH_CONTENDED_ROUNDS; round++)
			for (impl = 0; impl < BENCH_NR_IMPLS; impl++)
				bench_contended_run(test, locks, impl,
						    thread_counts[t], round);
}

static struct kunit_case mutex_bench_cases[] = {
	KUNIT_CASE(bench_uncontended),
	KUNIT_CASE(bench_contended),
	{}
};

static struct kunit_suite mutex_bench_suite = {
	.name = "mutex_bench",
	.test_cases = mutex_bench_cases,
};

kunit_test_suite(mutex_bench_suite);

MODULE_DESCRIPTION("Semaphore vs mutex vs simple mutex benchmark");
MODULE_LICENSE("GPL");
