// SPDX-License-Identifier: GPL-2.0-only
/// Let the rtmutex core treat ww_mutex waiters as it does under PREEMPT_RT
/// whenever ww_mutex is built on rt_mutex, which CONFIG_MUTEX_SIMPLE also
/// does: the chain walk then leaves wound/die to pick the task that backs
/// off instead of reporting a ww_mutex cycle as an rtmutex deadlock.
/// CONFIG_WW_MUTEX_RT is "PREEMPT_RT || MUTEX_SIMPLE", so PREEMPT_RT
/// kernels are unchanged.
///
/// Part of the sem2mutex simple-mutex core patch; run on
/// kernel/locking/rtmutex.c.
///
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: ww_mutex, rt_mutex, PREEMPT_RT, MUTEX_SIMPLE

virtual patch
virtual log_changes

@ww_waiter depends on patch@
expression W;
position p;
@@

- IS_ENABLED@p(CONFIG_PREEMPT_RT)
+ IS_ENABLED(CONFIG_WW_MUTEX_RT)
  && W->ww_ctx

@ww_orig_waiter depends on patch@
expression W;
position p;
@@

- IS_ENABLED@p(CONFIG_PREEMPT_RT)
+ IS_ENABLED(CONFIG_WW_MUTEX_RT)
  && W && W->ww_ctx

@script:python depends on log_changes@
p << ww_waiter.p;
@@
print("sem2mutex-cocci: ww_waiter %s:%s" % (p[0].file, p[0].line))

@script:python depends on log_changes@
p << ww_orig_waiter.p;
@@
print("sem2mutex-cocci: ww_orig_waiter %s:%s" % (p[0].file, p[0].line))
