// SPDX-License-Identifier: GPL-2.0-only
/// Report the facts that say in which context a function runs: functions
/// registered as hard or threaded IRQ handlers, timer and hrtimer
/// callbacks, tasklets, NAPI and RCU callbacks, work items, kthreads, and
/// callbacks stored in an ops structure; plus every function definition
/// and the calls between functions of the same file, so that sem2mutex
/// can tell which functions may run in interrupt context.
///
// Confidence: Moderate
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, irq, timer, tasklet, workqueue, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json

DEFINED = set()


def emit(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

// ------------------------------------------------------------ functions

@fndef depends on report@
identifier fn;
position p;
@@
fn@p(...) { ... }

@script:python depends on report@
fn << fndef.fn;
p << fndef.p;
@@
DEFINED.add(fn)
emit("fndef", p[0], name=fn)

@fndef_static depends on report@
identifier fn;
type T;
position p;
@@
static T fn@p(...) { ... }

@script:python depends on report@
p << fndef_static.p;
@@
emit("fnstatic", p[0])

@local_call depends on report@
identifier g : script:python () { str(g) in DEFINED };
position p;
@@
g@p(...)

@script:python depends on report@
g << local_call.g;
p << local_call.p;
@@
emit("calls", p[0], callee=g)

// ------------------------------------------------- registered callbacks

@hardirq depends on report@
identifier fn;
expression D, I;
position p;
@@
(
request_irq@p(I, fn, ...)
|
request_threaded_irq@p(I, fn, ...)
|
request_any_context_irq@p(I, fn, ...)
|
request_percpu_irq@p(I, fn, ...)
|
devm_request_irq@p(D, I, fn, ...)
|
devm_request_threaded_irq@p(D, I, fn, ...)
|
devm_request_any_context_irq@p(D, I, fn, ...)
)

@script:python depends on report@
fn << hardirq.fn;
p << hardirq.p;
@@
emit("callback", p[0], name=fn, context="hardirq")

@threaded_irq depends on report@
identifier fn;
expression D, I, H;
position p;
@@
(
request_threaded_irq@p(I, H, fn, ...)
|
devm_request_threaded_irq@p(D, I, H, fn, ...)
)

@script:python depends on report@
fn << threaded_irq.fn;
p << threaded_irq.p;
@@
emit("callback", p[0], name=fn, context="irq_thread")

@timer depends on report@
identifier fn;
expression T;
position p;
@@
(
timer_setup@p(T, fn, ...)
|
setup_timer@p(T, fn, ...)
|
setup_deferrable_timer@p(T, fn, ...)
|
T.function =@p fn
|
T->function =@p fn
|
hrtimer_setup@p(T, fn, ...)
)

@script:python depends on report@
fn << timer.fn;
p << timer.p;
@@
emit("callback", p[0], name=fn, context="timer")

@timer_decl depends on report@
declarer name DEFINE_TIMER;
identifier x, fn;
position p;
@@
DEFINE_TIMER@p(x, fn, ...);

@script:python depends on report@
fn << timer_decl.fn;
p << timer_decl.p;
@@
emit("callback", p[0], name=fn, context="timer")

@tasklet depends on report@
identifier fn;
expression T;
position p;
@@
(
tasklet_init@p(T, fn, ...)
|
tasklet_setup@p(T, fn)
)

@script:python depends on report@
fn << tasklet.fn;
p << tasklet.p;
@@
emit("callback", p[0], name=fn, context="tasklet")

@tasklet_decl depends on report@
declarer name DECLARE_TASKLET, DECLARE_TASKLET_OLD, DECLARE_TASKLET_DISABLED,
	      DECLARE_TASKLET_DISABLED_OLD;
identifier x, fn;
position p;
@@
(
DECLARE_TASKLET@p(x, fn, ...);
|
DECLARE_TASKLET_OLD@p(x, fn, ...);
|
DECLARE_TASKLET_DISABLED@p(x, fn, ...);
|
DECLARE_TASKLET_DISABLED_OLD@p(x, fn, ...);
)

@script:python depends on report@
fn << tasklet_decl.fn;
p << tasklet_decl.p;
@@
emit("callback", p[0], name=fn, context="tasklet")

@softirq depends on report@
identifier fn;
expression D, N, H;
position p;
@@
(
netif_napi_add@p(D, N, fn, ...)
|
netif_napi_add_weight@p(D, N, fn, ...)
|
netif_napi_add_tx@p(D, N, fn, ...)
|
call_rcu@p(H, fn)
)

@script:python depends on report@
fn << softirq.fn;
p << softirq.p;
@@
emit("callback", p[0], name=fn, context="softirq")

@work depends on report@
identifier fn;
expression W;
position p;
@@
(
INIT_WORK@p(W, fn)
|
INIT_WORK_ONSTACK@p(W, fn)
|
INIT_DELAYED_WORK@p(W, fn)
|
INIT_DEFERRABLE_WORK@p(W, fn)
|
INIT_RCU_WORK@p(W, fn)
|
kthread_init_work@p(W, fn)
)

@script:python depends on report@
fn << work.fn;
p << work.p;
@@
emit("callback", p[0], name=fn, context="work")

@work_decl depends on report@
declarer name DECLARE_WORK, DECLARE_DELAYED_WORK;
identifier x, fn;
position p;
@@
(
DECLARE_WORK@p(x, fn);
|
DECLARE_DELAYED_WORK@p(x, fn);
)

@script:python depends on report@
fn << work_decl.fn;
p << work_decl.p;
@@
emit("callback", p[0], name=fn, context="work")

@kthread depends on report@
identifier fn;
position p;
@@
(
kthread_run@p(fn, ...)
|
kthread_create@p(fn, ...)
|
kthread_create_on_node@p(fn, ...)
|
kthread_create_on_cpu@p(fn, ...)
|
kthread_run_on_cpu@p(fn, ...)
)

@script:python depends on report@
fn << kthread.fn;
p << kthread.p;
@@
emit("callback", p[0], name=fn, context="kthread")

// A function stored in a designated initializer is a callback of that
// structure (file_operations .open/.release, driver .probe, ...).  Every
// identifier stored so is reported: the function may be defined in another
// file, and sem2mutex keeps the names some analysed file defines.
@ops depends on report@
identifier s, x, fld;
identifier fn;
position p;
@@
struct s x = { ..., .fld = fn@p, ... };

@script:python depends on report@
s << ops.s;
fld << ops.fld;
fn << ops.fn;
p << ops.p;
@@
emit("callback", p[0], name=fn, context="ops", ops="struct " + s, slot=fld)

