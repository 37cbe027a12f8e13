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

# the context a registering function's callback runs in
REGISTERED = dict(
	[(f, "hardirq") for f in ("request_irq", "request_threaded_irq",
				  "request_any_context_irq", "request_percpu_irq",
				  "devm_request_irq", "devm_request_threaded_irq",
				  "devm_request_any_context_irq")] +
	[(f, "timer") for f in ("timer_setup", "setup_timer",
				"setup_deferrable_timer", "hrtimer_setup")] +
	[(f, "tasklet") for f in ("tasklet_init", "tasklet_setup")] +
	[(f, "softirq") for f in ("netif_napi_add", "netif_napi_add_weight",
				  "netif_napi_add_tx", "call_rcu")] +
	[(f, "work") for f in ("INIT_WORK", "INIT_WORK_ONSTACK", "INIT_DELAYED_WORK",
			       "INIT_DEFERRABLE_WORK", "INIT_RCU_WORK",
			       "kthread_init_work")] +
	[(f, "kthread") for f in ("kthread_run", "kthread_create",
				  "kthread_create_on_node", "kthread_create_on_cpu",
				  "kthread_run_on_cpu", "kernel_thread")])


def emit(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

// ------------------------------------------------------------ functions

// One spatch process reads many files one after another: the calls
// followed are to functions of the file at hand, whatever came before.
@script:python depends on report@
@@
DEFINED.clear()

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

// Registrations, one rule per argument shape (the callback is the 2nd,
// the 3rd or the 1st argument); the script reads the context off the
// registering function's name.
@second_argument depends on report@
identifier reg = {request_irq, request_threaded_irq, request_any_context_irq,
		  request_percpu_irq, timer_setup, setup_timer, setup_deferrable_timer,
		  hrtimer_setup, tasklet_init, tasklet_setup, call_rcu, INIT_WORK,
		  INIT_WORK_ONSTACK, INIT_DELAYED_WORK, INIT_DEFERRABLE_WORK, INIT_RCU_WORK,
		  kthread_init_work};
identifier fn;
expression X;
position p, n;
@@
reg@p(X, fn@n, ...)

@script:python depends on report@
reg << second_argument.reg;
fn << second_argument.fn;
p << second_argument.p;
n << second_argument.n;
@@
emit("callback", p[0], name=fn, context=REGISTERED[reg], name_line=int(n[0].line))

@third_argument depends on report@
identifier reg = {devm_request_irq, devm_request_threaded_irq,
		  devm_request_any_context_irq, netif_napi_add, netif_napi_add_weight,
		  netif_napi_add_tx};
identifier fn;
expression X, Y;
position p, n;
@@
reg@p(X, Y, fn@n, ...)

@script:python depends on report@
reg << third_argument.reg;
fn << third_argument.fn;
p << third_argument.p;
n << third_argument.n;
@@
emit("callback", p[0], name=fn, context=REGISTERED[reg], name_line=int(n[0].line))

@first_argument depends on report@
identifier reg = {kthread_run, kthread_create, kthread_create_on_node,
		  kthread_create_on_cpu, kthread_run_on_cpu, kernel_thread};
identifier fn;
position p, n;
@@
reg@p(fn@n, ...)

@script:python depends on report@
reg << first_argument.reg;
fn << first_argument.fn;
p << first_argument.p;
n << first_argument.n;
@@
emit("callback", p[0], name=fn, context=REGISTERED[reg], name_line=int(n[0].line))

@timer_function depends on report@
identifier fn;
expression T;
position p, n;
@@
(
T.function =@p fn@n
|
T->function =@p fn@n
)

@script:python depends on report@
fn << timer_function.fn;
p << timer_function.p;
n << timer_function.n;
@@
emit("callback", p[0], name=fn, context="timer", name_line=int(n[0].line))

@threaded_irq depends on report@
identifier fn;
expression D, I, H;
position p, n;
@@
(
request_threaded_irq@p(I, H, fn@n, ...)
|
devm_request_threaded_irq@p(D, I, H, fn@n, ...)
)

@script:python depends on report@
fn << threaded_irq.fn;
p << threaded_irq.p;
n << threaded_irq.n;
@@
emit("callback", p[0], name=fn, context="irq_thread", name_line=int(n[0].line))

// The declarers: DEFINE_TIMER(), DECLARE_TASKLET(), DECLARE_WORK() ...
@declared_callback depends on report@
declarer name DEFINE_TIMER, DECLARE_TASKLET, DECLARE_TASKLET_OLD, DECLARE_TASKLET_DISABLED,
	      DECLARE_TASKLET_DISABLED_OLD, DECLARE_WORK, DECLARE_DELAYED_WORK;
identifier x, fn;
position timer, tasklet, work, n;
@@
(
DEFINE_TIMER@timer(x, fn@n, ...);
|
DECLARE_TASKLET@tasklet(x, fn@n, ...);
|
DECLARE_TASKLET_OLD@tasklet(x, fn@n, ...);
|
DECLARE_TASKLET_DISABLED@tasklet(x, fn@n, ...);
|
DECLARE_TASKLET_DISABLED_OLD@tasklet(x, fn@n, ...);
|
DECLARE_WORK@work(x, fn@n, ...);
|
DECLARE_DELAYED_WORK@work(x, fn@n, ...);
)

@script:python depends on report@
fn << declared_callback.fn;
p << declared_callback.timer;
n << declared_callback.n;
@@
emit("callback", p[0], name=fn, context="timer", name_line=int(n[0].line))

@script:python depends on report@
fn << declared_callback.fn;
p << declared_callback.tasklet;
n << declared_callback.n;
@@
emit("callback", p[0], name=fn, context="tasklet", name_line=int(n[0].line))

@script:python depends on report@
fn << declared_callback.fn;
p << declared_callback.work;
n << declared_callback.n;
@@
emit("callback", p[0], name=fn, context="work", name_line=int(n[0].line))

// A function stored in a designated initializer is a callback of that
// structure (file_operations .open/.release, driver .probe, ...).  Every
// identifier stored so is reported: the function may be defined in another
// file, and sem2mutex keeps the names some analysed file defines.  The
// structure's variable says which callbacks one instance holds together
// (a seq_operations' .start and .stop).
@ops depends on report@
identifier s, x, fld;
identifier fn;
position p;
@@
struct s x = { ..., .fld = fn@p, ... };

@script:python depends on report@
s << ops.s;
x << ops.x;
fld << ops.fld;
fn << ops.fn;
p << ops.p;
@@
emit("callback", p[0], name=fn, context="ops", ops="struct " + s, slot=fld, holder=x)

