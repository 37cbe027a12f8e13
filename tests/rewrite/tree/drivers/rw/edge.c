// SPDX-License-Identifier: GPL-2.0
/* Cases the rewrite must notice: shared lines, long lines, macros. */
#include <linux/errno.h>
#include <linux/semaphore.h>

#include <asm/rw.h>

struct edge_device_with_a_long_name {
	struct semaphore semaphore_with_a_long_name;
	int value;
};

/* Two semaphores declared in one statement: spatch cannot split them. */
static struct semaphore md_a, md_b;
static struct semaphore clash_mutex;
static struct semaphore clash_count;
static struct semaphore edge_lock;

#define EDGE_WAIT(sem) do {	\
	down(sem);		\
} while (0)

#define edge_release()	up(&clash_count)

void edge_pairs(void)
{
	down(&md_a);
	up(&md_a);
	down(&md_b);
	up(&md_b);
}

/* Same operation, two instances, one line: lines cannot tell them apart. */
void edge_clash(void)
{
	down(&clash_mutex); down(&clash_count);
	up(&clash_mutex);
	edge_release();
}

/* The renamed call no longer fits in 80 columns: spatch breaks the line. */
int edge_long(struct edge_device_with_a_long_name *device_with_long_name)
{
	int err = down_timeout(&device_with_long_name->semaphore_with_a_long_name, 100);

	if (!err)
		up(&device_with_long_name->semaphore_with_a_long_name);
	return err;
}

void edge_locked(void)
{
	down(&edge_lock);
	up(&edge_lock);
}

void edge_macro(void)
{
	EDGE_WAIT(&clash_count);
	up(&clash_count);
}

void edge_init(struct edge_device_with_a_long_name *dev, int n)
{
	sema_init(&md_a, 1);
	sema_init(&md_b, 1);
	sema_init(&clash_mutex, 1);
	sema_init(&clash_count, n);
	sema_init(&edge_lock, 1);
	sema_init(&dev->semaphore_with_a_long_name, 1);
}
