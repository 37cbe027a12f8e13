/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fixture code for the sem2mutex QEMU boot.
 *
 * The fixtures use struct semaphore the way drivers do.  sem2mutex itself
 * analyses and rewrites them (binary ones become struct mutex, the others
 * move to the down_sem() counting API), they are built into the test
 * kernel, and the converted_fixtures KUnit suite exercises them.  This
 * header is the interface of the fixtures to that suite; it names no
 * semaphore, so it means the same before and after the conversion.
 */
#ifndef _SEM2MUTEX_FIXTURES_H
#define _SEM2MUTEX_FIXTURES_H

#include <linux/completion.h>
#include <linux/fs.h>
#include <linux/types.h>

/*
 * Lets a test hold a fixture's lock from a thread of its own: the holder
 * completes @held once it has the lock and releases it when @go completes.
 */
struct fixture_gate {
	struct completion held;
	struct completion go;
};

/* Binary semaphores, taken and released in one function. */
void fixture_counter_add(unsigned int delay_us);
unsigned long fixture_counter_read(void);
int fixture_log_append(int value);
int fixture_log_hold(struct fixture_gate *gate);
int fixture_log_len(void);
int fixture_table_insert(int value);
int fixture_table_hold(struct fixture_gate *gate);
int fixture_table_used(void);

#define FIXTURE_TABLE_TRY_CLEAR	1
#define FIXTURE_TABLE_TRY_COUNT	2
extern const struct file_operations fixture_table_fops;

/* Counting semaphores: a pool of three slots and two lanes. */
#define FIXTURE_POOL_SLOTS	3
#define FIXTURE_LANES		2
int fixture_pool_get(void);
int fixture_pool_try_get(void);
int fixture_pool_get_timeout(unsigned int timeout_ms);
void fixture_pool_put(void);
int fixture_pool_max_in_use(void);
void fixture_pool_reset_max(void);
int fixture_lane_enter(void);
void fixture_lane_leave(void);

/* Signal semaphores: they start at 0 and another side posts them. */
int fixture_mailbox_send_async(int value, unsigned int delay_ms);
int fixture_mailbox_receive(unsigned int timeout_ms, int *value);
void fixture_ready_arm(unsigned int delay_ms);
int fixture_ready_wait(void);
void fixture_ready_disarm(void);

/*
 * Count-1 semaphores held by a task while an asynchronous operation runs
 * and released by its completion, which runs in an hrtimer, a tasklet or a
 * work item: never the task that took it, so they are not mutexes.
 *
 * _start() takes the semaphore and starts the operation, _wait_released()
 * waits until the operation released it, _idle() takes and releases it
 * once (so it waits for a running operation) and returns how many
 * operations had completed by then.
 */
void fixture_hrtimer_start(unsigned int delay_ms);
int fixture_hrtimer_wait_released(unsigned int timeout_ms);
unsigned int fixture_hrtimer_idle(void);
void fixture_tasklet_start(void);
int fixture_tasklet_wait_released(unsigned int timeout_ms);
unsigned int fixture_tasklet_idle(void);
void fixture_work_start(unsigned int delay_ms);
int fixture_work_wait_released(unsigned int timeout_ms);
unsigned int fixture_work_idle(void);

#endif /* _SEM2MUTEX_FIXTURES_H */
