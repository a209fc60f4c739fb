// Declarations shared by the sampler's C files; not part of the public header.
//
// clock.c     process facts: times, thread ids, the main thread, per-thread CPU clocks
// snapshot.c  the loader snapshot that handlers unwind through instead of the loader's lock
// cfi.c       call-frame information: the rule that finds a frame's caller, and its cache
// walk.c      the handler's own stack walk, with those rules, bounded by the thread's stack
// unwind.c    libunwind calls and the exclusion between unwinds in and out of handlers
// unwind_pipe.c  the stand-in for libunwind's address-check pipe, and syscall(2)
// ring.c      the lock-free sample ring (handlers write, the sampler thread drains)
// store.c     the store the sampler thread drains the ring into, and Swift reads
// registry.c  the threads registered for sampling, and those opted out
// threads.c   the thread table: listing, CPU checks, running or waiting, signalling
// answers.c   a handler's answer: the ticks it stands for, running, runnable or waiting for the disk
// readers.c   how many handlers (and other readers) are using the loader snapshot now
// handler.c   the SIGPROF handler and stack requests from other threads
// sampler.c   start, stop and the sampler thread's loop
// capture.c   the top: stack captures outside samples, and starting over after fork
// tasks.c     Swift tasks: who created each, when its jobs were enqueued and ran
// blocking.c  the C library's blocking calls, caught where they are made (thread rules): the
//             checks' state (blocking.h), files, sockets and name lookups
// waits.c     the same for sleeps, timed waits and contended mutexes

#ifndef LO_INTERNAL_H
#define LO_INTERNAL_H

#include "lo_sampler.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

// Writes a message with write(2) and aborts: usable anywhere, signal handlers included.
// The calling thread's kernel id, kept per thread once asked (zero after a fork, until asked
// again), and the main thread's, for checks that run on every call of a C library function.
extern __thread pid_t lo_t_tid __attribute__((tls_model("initial-exec")));
extern pid_t lo_g_main_tid;

static inline pid_t lo_tid(void) {
    pid_t tid = lo_t_tid;
    return __builtin_expect(tid != 0, 1) ? tid : lo_current_tid();
}

#define LO_FAIL(message)                                                                  \
    do {                                                                                  \
        static const char lo_fail_text[] = "liftoff sampler: " message "\n";             \
        ssize_t lo_fail_ignored = write(2, lo_fail_text, sizeof lo_fail_text - 1);        \
        (void)lo_fail_ignored;                                                            \
        abort();                                                                          \
    } while (0)

// Frames the handler may see above the interrupted one (handler, trampoline, and any
// libunwind frames) before it finds the interrupted program counter.
#define LO_SKIP_SEARCH 8
#define LO_BACKTRACE_CAPACITY (LO_SKIP_SEARCH + LO_MAX_FRAMES + 1)

_Static_assert(sizeof(uintptr_t) == 8, "Liftoff's sampler supports 64-bit targets only");

// ---- clock.c --------------------------------------------------------------------------

uint64_t lo_clock_ns(clockid_t clock);
// In a handler: the current Swift task, through the getter resolved before sampling began.
uintptr_t lo_handler_current_task(void);
// The current Swift task's address (not its identity), or 0.
uintptr_t lo_current_swift_task_pointer(void);
// Outside handlers: reads the calling thread's Swift task once, so that its handlers may (see clock.c).
void lo_task_storage_touch(void);

// ---- tasks.c, async.c ------------------------------------------------------------------

// The Swift runtime's task header (64-bit): Job::Flags (kind in the low byte, 0 for a task) and the
// low half of the task's id, at offsets the runtime keeps for the C library's use since Swift 5.5;
// then, for Swift 6's layout only (async.c checks it), the function and context a suspended task
// resumes in, its status word and its size, after which a child task keeps its parent.
#define LO_TASK_FLAGS 0x20
#define LO_TASK_ID 0x24
#define LO_TASK_RESUME_FUNCTION 0x38
#define LO_TASK_RESUME_CONTEXT 0x40
#define LO_TASK_STATUS 0x60
#define LO_TASK_STATUS_RUNNING 0x800u
#define LO_TASK_SIZE 0xd0
#define LO_TASK_FLAG_CHILD (1u << 24)
#define LO_TASK_FLAG_GROUP_CHILD (1u << 26)
#define LO_TASK_FLAG_ASYNC_LET (1u << 28)

// When the job of a Swift task that this thread runs began (the monotonic clock), 0 outside one: an
// answer that stands for ticks the sampler missed gives the task only those after its job began.
extern __thread uint64_t lo_t_job_ns __attribute__((tls_model("initial-exec")));

// Outside handlers: resolves what the async walk needs from the Swift runtime (at a session's start).
void lo_async_prepare(void);
// Whether the runtime's task layout is the one the constants above describe.
int lo_task_layout_known(void);
// In a handler, for the running `task` whose innermost async frame has `context`: the awaiting
// callers' resume addresses, innermost first, into `out`; across into the suspended parents of a
// child task. Returns how many were written (0 when the chain cannot be trusted).
// `verified`: the context was read from the frame's async slot (else it is the frame's r14, read
// through process_vm_readv until the chain proves itself).
int lo_async_callers(uintptr_t task, uintptr_t context, int verified, uintptr_t *out, int capacity);

// A task's identity, from its header: its runtime id. The task must be alive.
uint64_t lo_task_identity(uintptr_t task);
void lo_tasks_start(void); // from the session's start: records task events
void lo_tasks_after_fork(void);    // in a fork child: forgets the parent's threads' chunks
void lo_tasks_halt(void);  // stops recording from a signal handler, waiting for nothing
void lo_tasks_stop(void);  // stops recording, waits for writers in progress

// ---- counters (sampler.c) -------------------------------------------------------------

typedef struct lo_counters {
    _Atomic uint64_t signals_sent, captured, dropped, failed, skipped, truncated, stored;
    _Atomic uint64_t waiting, unanswered, threads_seen, cpu_reads, scans;
    _Atomic uint64_t walked, walk_fallbacks, walk_checked, walk_mismatches, walk_guessed, walk_callers_recovered, walk_captures;
    _Atomic uint64_t retaken;
} lo_counters;

extern lo_counters lo_count;

#define LO_COUNT(field, amount) atomic_fetch_add_explicit(&lo_count.field, (amount), memory_order_relaxed)

// ---- snapshot.c ------------------------------------------------------------------------

// Set while a handler unwinds: dl_iterate_phdr then walks the snapshot.
extern __thread int lo_t_sampling __attribute__((tls_model("initial-exec")));

void lo_snapshot_refresh(void);   // sampler thread, start, or a stack request
// Sampler thread: makes the unwind tables of the snapshot's objects resident and builds their page
// indexes, once per snapshot.
void lo_snapshot_make_resident(void);
void lo_snapshot_drop(void);      // once no handler runs
size_t lo_snapshot_bytes(void);
// Counted as a running handler: whether the snapshot lists only mapped objects (no dlclose under
// way or begun since it was built).
int lo_snapshot_usable(void);

// One executable range of a loaded object, with what a handler needs to find its unwind rules.
typedef struct lo_object {
    uintptr_t start, end;                    // the executable segment
    const uint8_t *hdr;                      // .eh_frame_hdr, or NULL
    const int32_t *table;                    // its sorted pairs (function start, FDE), relative to hdr
    uint32_t fde_count;
    const uint8_t *tables_start, *tables_end; // the segment holding hdr and .eh_frame: reads stay inside
    // Built later by the sampler thread (NULL until then): for each page of the segment, the last
    // table entry starting at or before it, so a search looks at that page's entries only.
    _Atomic(uint32_t *) page_index;
    uint8_t resident; // its tables were made resident (for an earlier snapshot, when taken over)
} lo_object;

#define LO_INDEX_PAGE_SHIFT 12

// In a handler (or with a snapshot held): the object whose code holds `address`, or NULL.
const lo_object *lo_object_for(uintptr_t address);

// ---- cfi.c -----------------------------------------------------------------------------

enum { LO_RULE_NONE = 0, LO_RULE_FRAME = 1, LO_RULE_OUTERMOST = 2, LO_RULE_SIGNAL = 3 };
enum { LO_CFA_RSP = 0, LO_CFA_RBP = 1, LO_CFA_RBX = 2 };

// How to find the caller of a frame whose code is at one address.
typedef struct lo_rule {
    uint8_t kind;      // LO_RULE_*
    uint8_t cfa_reg;   // LO_CFA_*: the CFA is that register plus cfa_offset
    int16_t ra_offset; // the return address is at CFA + ra_offset
    int16_t fp_offset; // the caller's rbp is at CFA + fp_offset; 0: rbp is unchanged
    int16_t bx_offset; // the caller's rbx is at CFA + bx_offset; 0: rbx is unchanged
    int32_t cfa_offset;
    uint8_t async;     // a Swift async function's frame, set up: its async context is at CFA - 24
    int16_t r14_offset; // the caller's r14 is at CFA + r14_offset; 0: unchanged; LO_R14_LOST: unknown
} lo_rule;
#define LO_R14_LOST 1

// Outside handlers: finds the search table of `object`'s .eh_frame_hdr (hdr and tables set); 0 when unusable.
int lo_cfi_prepare(lo_object *object);
// Outside handlers: the page index of `object` (malloc'd; *bytes its size), or NULL.
uint32_t *lo_cfi_build_index(const lo_object *object, size_t *bytes);
size_t lo_cfi_index_bytes(const lo_object *object);
// Outside handlers: the span of memory the tables of `object` lie in (.eh_frame_hdr and .eh_frame),
// to make resident; NULL, NULL when it has none.
void lo_cfi_span(const lo_object *object, const uint8_t **start, const uint8_t **end);
// The rule at `address` in `object` from its .eh_frame. Returns 0 when no entry covers the
// address; 1 when one does, with kind NONE when its rule is one this walk cannot follow.
int lo_cfi_find(const lo_object *object, uintptr_t address, lo_rule *rule);
// The cache of rules by address (lock-free; any thread, handlers included).
int lo_cfi_cached(uintptr_t address, lo_rule *rule);
void lo_cfi_remember(uintptr_t address, const lo_rule *rule);
// Writes each page of the cache, so no handler's first write faults it in.
void lo_cfi_touch_cache(void);
// Empties the cache: objects were unloaded, and another one may take their addresses.
void lo_cfi_forget_all(void);

// ---- walk.c ----------------------------------------------------------------------------

// Set on a thread to walk without the rule cache (measuring a first walk through new code).
extern __thread int lo_t_walk_uncached __attribute__((tls_model("initial-exec")));
// Outside handlers, before sampling: learns the main thread's stack range and touches the rule
// cache's pages, so no handler faults them in.
void lo_walk_prepare(void);
// The innermost Swift async frame a walk found: its index among the frames, -1 for none, and its
// async context.
typedef struct lo_async_frame {
    int at;
    uintptr_t context;
    int verified; // the context was read from the frame's async slot; 0: it is the r14 the frame ran with
} lo_async_frame;
// Whether `address` lies in the Swift concurrency runtime's code (resolved by lo_async_prepare).
int lo_async_in_runtime(uintptr_t address);
// In a handler: the interrupted stack, leaf first, into `out` (LO_MAX_FRAMES), by call-frame
// rules. Returns the depth, or -1 when the stack needs libunwind; sets *truncated, *guessed
// when a frame in code without call-frame information was stepped by its frame pointer, and
// *async to the innermost Swift async frame.
int lo_walk_interrupted(void *context, uintptr_t *out, int *truncated, int *guessed, lo_async_frame *async);

// The sampler thread's signal to a thread: SIGPROF queued (SI_QUEUE) with si_errno set to this tag
// and the value holding the clock (CLOCK_MONOTONIC ns) minus the thread's CPU time when it was
// sent, so that its handler knows how long the thread waited for a core since.
#define LO_SAMPLER_SIGNAL_TAG 0x4c4f5350 /* "LOSP" */

// A ring slot's flag (never stored): the handler ran for a stack request's signal. A SIGPROF sent
// while another is pending merges into it, so a request's signal may carry the sampler's too.
#define LO_SLOT_REQUEST 0x100u

// ---- unwind.c --------------------------------------------------------------------------

// Whether libunwind is linked into the process (a program that links Liftoff); else the agent.
int lo_unwind_linked(void);
// libunwind's unw_backtrace from the caller's frame up (at most `limit`, LO_MAX_FRAMES + 1) when
// it is linked, else 0 frames. Callers outside handlers hold the exclusion (lo_unwind_enter_blocking).
int lo_unwind_backtrace(void **frames, int limit);
// Whether a return address lies in libunwind's code (noted before libunwind is first used).
int lo_called_by_unwinder(const void *return_address);

// ---- unwind_pipe.c ---------------------------------------------------------------------

// libunwind's address-check pipe, stood in for by two numbers no descriptor has (x86_64).
#if defined(__x86_64__)
#define LO_UNWIND_PIPE_READ (-1048577)
#define LO_UNWIND_PIPE_WRITE (-1048578)
#else
#define LO_UNWIND_PIPE_READ (-1) // never told apart: lo_is_unwind_pipe is false
#define LO_UNWIND_PIPE_WRITE (-1)
#endif
static inline int lo_is_unwind_pipe(int fd) {
#if defined(__x86_64__)
    return __builtin_expect(fd == LO_UNWIND_PIPE_READ || fd == LO_UNWIND_PIPE_WRITE, 0);
#else
    (void)fd;
    return 0;
#endif
}
// A pipe asked for by libunwind (`caller`): the stand-in's numbers put in `fds`, and 1; else 0.
int lo_unwind_pipe_made(int fds[2], const void *caller);
// What writing a byte from `address` to a pipe answers: 1, or -1 with EFAULT.
long lo_unwind_pipe_write(const void *address);
// Sampler thread: loads libunwind once a handler needed it and it is not linked.
void lo_unwind_load_if_wanted(int own_files); // own_files: the calling thread has a descriptor table of its own
// Unwinds in handlers wait at most 1 ms for an unwind outside a handler; 0 when they gave up.
int lo_unwind_enter_bounded(void);
void lo_unwind_exit(void);
// Outside handlers: blocks SIGPROF and waits until no handler is inside libunwind.
void lo_unwind_enter_blocking(sigset_t *saved);
void lo_unwind_exit_blocking(const sigset_t *saved);

// In a handler: the interrupted stack, leaf first, into `out` (LO_MAX_FRAMES). Returns the
// depth, 0 when no frame was found, or -1 when the unwind was skipped; sets *truncated.
int lo_unwind_interrupted(void *context, uintptr_t *out, int *truncated);
// In a handler: the interrupted program counter.
uintptr_t lo_context_pc(void *context);
// In a handler: whether the interrupted thread was blocked in a system call.
int lo_interrupted_in_syscall(void *context);
// In a handler: whether the signal cut the interrupted system call short (it returns EINTR).
int lo_interrupted_call_cut_short(void *context);
// In a handler: sets what the interrupted system call returns.
void lo_set_call_result(void *context, long result);
// The interrupted call's first argument (a futex wait's word), where the context still holds it; 0 if not.
uintptr_t lo_interrupted_call_word(void *context);
// Outside handlers, while a session runs: the walk from `context` (getcontext), counted as a
// handler; -1 without a session or a usable snapshot.
int lo_walk_context(void *context, uintptr_t *frames);
// Outside handlers, for measurements: libunwind's unwind of the calling thread (its caches
// flushed first when `cold`) into `out` (LO_MAX_FRAMES); the depth.
int lo_unwind_current_for_measurement(int cold, uintptr_t *out);
// Outside handlers: runs one unwind on the calling thread so libunwind's caches are set up.
void lo_unwind_warm(void);
// In the warm-up signal's handler: one unwind through the signal frame.
void lo_unwind_warm_in_handler(void);

// ---- ring.c ----------------------------------------------------------------------------

typedef struct lo_slot {
    _Atomic uint64_t seq;
    uint64_t time_ns;
    uint64_t task;
    uint64_t handler_ns; // how long the handler ran: its cost is not the thread's own work
    uint64_t switches;   // the thread's context switches out so far, for a sample in a system call; else 0
    uint64_t job_ns;     // when the Swift task's job the thread runs began on it (lo_t_job_ns); 0 outside one
    int32_t tid;
    uint16_t depth;   // 0: the handler ran but captured nothing (failed or skipped)
    uint16_t flags;
    uint32_t async;   // where the async callers were placed among the frames (lo_sampler.h, word 5)
    uintptr_t frames[LO_MAX_FRAMES];
} lo_slot;

int lo_ring_create(uint32_t capacity);  // 0 on success
void lo_ring_destroy(void);
size_t lo_ring_bytes(void);
int lo_ring_ready(void);
// Handlers: writes one slot, or counts a drop when the ring is full.
void lo_ring_publish(int32_t tid, uint64_t time_ns, uint64_t task, uint64_t handler_ns, uint64_t switches,
                     uint64_t job_ns, const uintptr_t *frames, int depth, uint16_t flags, uint32_t async);
// The consumer (sampler thread, or stop after joining it): visits every published slot.
void lo_ring_drain(void (*visit)(const lo_slot *slot));
// Maps the ring's next pages for writing, ahead of the handlers (the sampler thread, each tick):
// at least `least` slots past the head, or twice what was taken since the last call.
void lo_ring_populate_ahead(uint32_t least);

// ---- store.c ---------------------------------------------------------------------------

void lo_store_reset(void);
void lo_store_append(int32_t tid, uint64_t time_ns, uint64_t task, uint64_t cpu_ns, uint64_t ticks, uint16_t flags,
                     const uintptr_t *frames, int depth, uint32_t async);
const uint64_t *lo_store_words(size_t *word_count);
size_t lo_store_bytes(void);

// ---- threads.c -------------------------------------------------------------------------

// Session start, on the sampler thread: which threads, the tick period, and its own tid.
void lo_threads_begin(int all_threads, uint32_t rate_hz, pid_t sampler_tid);
// One tick: lists threads when due, reads CPU clocks, records waits and signals runners.
void lo_threads_tick(pid_t pid, uint64_t now_ns, uint64_t tick);
// Leaves thread `tid` out of the ticks (0: none), while it waits for the first one.
void lo_threads_set_unsampled(pid_t tid);
// Drain visitor: a handler's answer.
void lo_threads_answer(const lo_slot *slot);
// Session end: keeps the names of every thread seen, frees the table.
void lo_threads_end(void);
// The sampler thread, as it starts: whether it has a descriptor table of its own.
void lo_threads_set_private_files(int private_files);
int lo_threads_have_private_files(void);
// Session start: whether threads' states are read to tell disk waits (LO_SKIP_DISK_CHECK).
void lo_threads_set_disk_check(int checks);
// Asks the next tick to list threads again (a thread was created or registered).
void lo_threads_changed(void);

// ---- handler.c -------------------------------------------------------------------------

void lo_clock_after_fork(void);    // in a fork child: the calling thread's id is its own again
void lo_handler_reap_retake_timers(pid_t pid); // deletes the retake timers of threads that ended
void lo_handler_after_fork(void);  // in a fork child: no handler runs, no request waits
void lo_threads_after_fork(void);  // in a fork child: forgets the parent's threads and names
void lo_snapshot_after_fork(void); // in a fork child: no dlclose is under way
// capture.c's side of a stack request: the stack of the wait `tid` is in while a handler resumes
// it (-1 when none), and asking `tid`'s handler for its stack (-1 when it does not answer in time).
// The stack (and Swift task, async callers) of thread `tid` in a wait a handler resumed: its depth, or -1.
// `buffer` NULL: only whether it is in one (and the depth).
int lo_handler_resumed_stack(pid_t tid, uintptr_t *buffer, int capacity, uint64_t *task, uint32_t *async);
// For a process about to crash: resumed waits are no longer resumed, and futex ones are woken
// (the number of threads still in one).
void lo_handler_stop_resuming(void);
int lo_handler_wake_resumed(void);
int lo_handler_ask(pid_t tid, uintptr_t *buffer, int capacity, int timeout_ms);
void lo_handler_install_once(void);
int lo_handler_installed(void);
void lo_handler_set_active(int active);
void lo_handler_set_verify(int verify);
void lo_handler_resolve_task_getter(void);
// Warms libunwind on the calling thread, through a signal frame too.
void lo_warm_current_thread(void);

// ---- readers.c -------------------------------------------------------------------------

// Handlers count themselves in while they run; code outside handlers too while it reads the
// snapshot's objects.
void lo_readers_enter(void);
void lo_readers_exit(void);
int lo_readers_count(void);
void lo_readers_wait_idle(void);  // until none reads
void lo_readers_after_fork(void);

// ---- sampler.c -------------------------------------------------------------------------

// A stack request without a running session builds a loader snapshot for its handler;
// returns whether it did, to pass to lo_sampler_end_request.
int lo_sampler_begin_request(void);
void lo_sampler_end_request(int own_snapshot);
// In a fork child: forgets the parent's session (capture.c's lo_sampler_after_fork calls it).
void lo_sampler_reset_after_fork(void);

// ---- registry.c ------------------------------------------------------------------------

// When a thread registered, and its CPU clock then (at_ns 0: unknown).
typedef struct lo_registration {
    uint64_t at_ns, cpu_ns;
} lo_registration;

lo_status lo_registry_register(pid_t tid, lo_registration stamp); // also undoes an opt-out
int lo_registry_unregister(pid_t tid);       // whether it was registered
lo_status lo_registry_exclude(pid_t tid);
int lo_registry_include(pid_t tid);          // whether it had opted out
int lo_registry_registered_count(void);
// Both lists, threads that ended dropped first; each buffer holds LO_MAX_THREADS.
void lo_registry_copy(pid_t *registered, lo_registration *stamps, int *registered_count, pid_t *excluded, int *excluded_count);
void lo_registry_after_fork(void);          // in a fork child: empty, its lock free

#endif
