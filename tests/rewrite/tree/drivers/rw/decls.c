// SPDX-License-Identifier: GPL-2.0
/* Declarations of every shape, in a file that includes <linux/mutex.h>. */
#include <linux/mutex.h>
#include <linux/semaphore.h>

#include "bare.h"
#include "rw.h"

DEFINE_SEMAPHORE(rw_global_sem);

static struct rw_dev rw_static_dev = {
	.users = 0,
};

/* Structs defined together with their variable. */
static struct rw_registry {
	int entries;
	struct semaphore reg_lock;
} rw_registry;

static struct {
	struct semaphore anon_lock;
	int count;
} rw_anon;

void rw_dev_init(struct rw_dev *dev)
{
	int i;

	sema_init(&dev->lock, 1);
	for (i = 0; i < 2; i++)
		sema_init(&dev->slots[i], 1);
	sema_init(&dev->cmd.poll_sem, 1);
	sema_init(&dev->u_sem, 1);
	dev->users = 0;
}

int rw_dev_poll(struct rw_dev *dev)
{
	int ret;

	ret = down_killable(&dev->cmd.poll_sem);
	if (ret)
		return ret;
	dev->cmd.polls++;
	up(&dev->cmd.poll_sem);
	return 0;
}

void rw_dev_slot(struct rw_dev *dev, int i)
{
	down(&dev->slots[i]);
	up(&dev->slots[i]);
}

void rw_dev_raw(struct rw_dev *dev, long raw)
{
	down(&dev->u_sem);
	dev->raw = raw;
	up(&dev->u_sem);
}

void rw_bare_init(struct rw_bare *b)
{
	sema_init(&b->bare_lock, 1);
}

void rw_bare_set(struct rw_bare *b, int state)
{
	down(&b->bare_lock);
	b->state = state;
	up(&b->bare_lock);
}

void rw_registry_add(void)
{
	down(&rw_registry.reg_lock);
	rw_registry.entries++;
	up(&rw_registry.reg_lock);
}

void rw_anon_bump(void)
{
	down(&rw_anon.anon_lock);
	rw_anon.count++;
	up(&rw_anon.anon_lock);
}

void rw_static_use(void)
{
	sema_init(&rw_registry.reg_lock, 1);
	sema_init(&rw_anon.anon_lock, 1);
	rw_dev_init(&rw_static_dev);
	down(&rw_global_sem);
	rw_static_dev.users++;
	up(&rw_global_sem);
}
