// Liftoff's stack sampler. Each tick, a sampler thread reads the CPU clock of every
// thread of the process (or of the registered threads only). A thread that ran since its
// last sample, however briefly, gets SIGPROF with tgkill; the handler walks the interrupted
// stack by the call-frame rules of each frame's code (libunwind where those cannot go) into a
// preallocated lock-free ring.
// A thread that did not run since a sample found it waiting keeps that stack: the sampler
// thread records a waiting sample for it without a signal. A timed wait the signal cut
// short is resumed by the handler, so sampling does not shorten a program's sleeps. The
// sampler thread drains the ring into a growable store that Swift reads after
// `lo_sampler_stop`.
//
// Every public symbol is prefixed `lo_`. Nothing here allocates, locks or calls a
// function that is not async-signal-safe on the signal path.

#ifndef LO_SAMPLER_H
#define LO_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Most frames kept per sample; deeper stacks are cut at the root end and flagged.
#define LO_MAX_FRAMES 128
/// Most threads that can be registered (or opted out) at once. Sampling every thread has no limit.
#define LO_MAX_THREADS 256
/// Lowest and highest sampling rate accepted by `lo_sampler_start`.
#define LO_MIN_RATE_HZ 1
#define LO_MAX_RATE_HZ 10000

/// Flag bit of a stored sample: the stack had more than LO_MAX_FRAMES frames.
#define LO_SAMPLE_TRUNCATED 1u
/// Flag bit of a stored sample: the thread did not run since its previous sample. Such a
/// record has depth 0: its stack is the thread's previous stack, and it stands for `count`
/// consecutive ticks ending at its time.
#define LO_SAMPLE_WAITING 2u

/// Flag bit of a stored sample: the signal found the thread blocked in a system call (the
/// interrupted instruction is one, about to be restarted, or it just returned EINTR): the
/// thread ran since its previous sample, but at this sample it was waiting.
#define LO_SAMPLE_IN_SYSCALL 4u

/// Flag bit of a stored sample: the signal reached the thread late, because it was runnable but
/// not running (preempted, waiting for a core) where its stack shows. Such a record starts at the
/// time the signal was sent and stands for `count` ticks.
#define LO_SAMPLE_RUNNABLE 8u

/// Flag bit of a stored sample: the signal reached the thread late because it was waiting for the
/// disk (state D while its signal was pending, its CPU clock still: a page fault that reads, or a
/// read in the kernel that cannot be interrupted) where its stack shows. As a runnable record, it
/// starts at the time the signal was sent and stands for `count` ticks.
#define LO_SAMPLE_DISK 16u

/// `lo_config.flags`: sample every thread of the process, not only registered ones.
#define LO_SAMPLE_ALL_THREADS 1u
/// `lo_config.flags`: walk every stack both ways, by call-frame rules and by libunwind, and count
/// the stacks on which they disagree (`lo_counts.walk_mismatches`). For tests: it costs a full
/// libunwind unwind per sample.
#define LO_VERIFY_WALK 2u
/// `lo_config.flags`: the first tick one period after the start, not at once; the sampler thread
/// does nothing until then (no thread list, no unwind tables indexed or mapped), so a process
/// that ends within a period pays for no more than the thread's creation. The injected agent's:
/// a shell's children and the programs they exec live a fraction of a millisecond.
#define LO_DEFER_FIRST_TICK 4u
/// `lo_config.flags`: never read a thread's state from /proc to tell a disk wait (late answers are
/// then split by the run-queue wait alone, and a disk wait counts as running). A thread that
/// answers in time is never read either way.
#define LO_SKIP_DISK_CHECK 8u

/// Result codes of the sampler API.
typedef enum lo_status {
    LO_OK = 0,
    LO_ERR_RATE = 1,            ///< rate outside LO_MIN_RATE_HZ ... LO_MAX_RATE_HZ
    LO_ERR_CAPACITY = 2,        ///< ring capacity not a power of two in 16 ... 1<<20
    LO_ERR_NO_MEMORY = 3,       ///< the ring could not be allocated
    LO_ERR_SIGNAL = 4,          ///< sigaction failed
    LO_ERR_THREAD = 5,          ///< the sampler thread could not be started
    LO_ERR_TOO_MANY_THREADS = 6,///< LO_MAX_THREADS already registered
    LO_ERR_NOT_REGISTERED = 7,  ///< unregistering a thread that is not registered
} lo_status;

/// Configuration for `lo_sampler_start`.
typedef struct lo_config {
    /// Samples per second sent to each registered thread (wall-clock sampling).
    uint32_t rate_hz;
    /// Ring slots, a power of two; 0 picks the default (4096).
    uint32_t ring_capacity;
    /// LO_SAMPLE_ALL_THREADS, or 0 for registered threads only.
    uint32_t flags;
} lo_config;

/// Counters of one sampling session (reset by `lo_sampler_start`).
typedef struct lo_counts {
    uint64_t signals_sent;   ///< SIGPROF signals sent by the sampler thread
    uint64_t captured;       ///< samples written to the ring
    uint64_t dropped;        ///< samples lost because the ring was full, or the store at its limit
    uint64_t failed;         ///< handler runs where unw_backtrace found no frame
    uint64_t skipped;        ///< handler runs that gave up waiting for another thread's unwind
    uint64_t truncated;      ///< captured samples cut at LO_MAX_FRAMES
    uint64_t stored;         ///< running samples moved from the ring to the store
    uint64_t waiting;        ///< waiting samples recorded without a signal (ticks)
    uint64_t unanswered;     ///< signals a thread did not answer within 100 ms
    uint64_t threads_seen;   ///< distinct threads the session found
    uint64_t cpu_reads;      ///< thread CPU clocks read
    uint64_t scans;          ///< listings of the process's threads
    uint64_t walked;         ///< stacks taken by the handler's own walk
    uint64_t walk_fallbacks; ///< stacks the walk left to libunwind (code outside known objects, a stack of unknown extent)
    uint64_t walk_checked;   ///< with LO_VERIFY_WALK: stacks walked both ways
    uint64_t walk_mismatches;///< with LO_VERIFY_WALK: stacks on which the two walks disagreed (but see below)
    uint64_t walk_guessed;   ///< stacks with a frame in code without call-frame information, stepped by its frame pointer
    uint64_t walk_callers_recovered; ///< with LO_VERIFY_WALK: stacks with a first frame in such code whose
                                     ///< callers the walk found and libunwind skipped (it follows rbp there
                                     ///< even in a prologue or epilogue)
    uint64_t walk_captures;  ///< stacks captured without a signal (lo_capture_current_stack) by the walk
    uint64_t retaken;        ///< signals that found their thread back from a system call, sampled again by its own timer
} lo_counts;

/// Layout of one sample in the store: a header of five words followed by `depth`
/// addresses, leaf first. Word 0 packs tid (low 32 bits), depth (bits 32..47) and
/// flags (bits 48..63); word 1 is the CLOCK_MONOTONIC time in nanoseconds (the last tick of
/// a waiting record, the first of a runnable one); word 2 the
/// Swift task running when the signal landed (0 for none, and for waiting samples);
/// word 3 the CPU time the thread used since its previous sample, in nanoseconds;
/// word 4 the number of ticks the record stands for (1 for a running sample); word 5 where the
/// awaiting callers of a Swift async function were put among the addresses: 0 when the stack has
/// no async frame, else (the index of the first caller + 1) | (the number of callers << 16). The
/// frame before the callers is the innermost async function's; the callers are resume addresses
/// (function entries, not return addresses), innermost first, into the parents of a child task;
/// the frames after them are the executor's that ran the task.
#define LO_SAMPLE_HEADER_WORDS 6

_Static_assert(sizeof(uint64_t) == sizeof(void *), "the store keeps addresses in 64-bit words");

/// Starts sampling; a no-op returning LO_OK when already running.
lo_status lo_sampler_start(const lo_config *config);
/// Waits until the session's first tick has listed and checked every thread, up to `timeout_ns`:
/// the sampler thread may wait for a core a long time on a busy machine, and what runs before its
/// first tick is not sampled. Returns 1 once it has, 0 on timeout or when no session runs.
int lo_sampler_await_first_tick(uint64_t timeout_ns);
/// Waits until the session's sampler thread runs, up to `timeout_ns`: it got a core, and ticks
/// from now on. Returns 1 once it does, 0 on timeout or when no session runs.
int lo_sampler_await_running(uint64_t timeout_ns);
/// Leaves the calling thread out of the ticks (1) or no longer (0): the agent's start of the
/// sampler and its wait for the first tick, before `main`, are in no sample of the program.
void lo_sampler_leave_out_calling_thread(int left_out);
/// Stops sampling, waits for running handlers, drains the ring; a no-op when stopped.
void lo_sampler_stop(void);
/// Marks the launch as ready: a no-op that a counting tool stops at (callgrind's
/// `--dump-after=lo_launch_ready`).
void lo_launch_ready(void);
/// `lo_sampler_stop` for a process about to exit or exec: the same, but the sampler thread is
/// not woken and waited for; it ends at its next tick, or with the process. A later start waits
/// for it.
void lo_sampler_quiesce(void);
/// Whether a session is running.
int lo_sampler_is_running(void);
/// Stops sampling from a signal handler (async-signal-safe): no new signals are sent and handlers
/// stop capturing; waits up to 50 ms for the sampler thread to leave its loop, without joining it.
/// What the store holds then can be read, but the session is not stopped: call nothing else but
/// `lo_sampler_store` and `lo_sampler_counts` afterwards.
void lo_sampler_halt(void);
/// After `lo_sampler_halt`, for a process about to crash (async-signal-safe): ends the waits that
/// the sampler's handler resumed, where SIGPROF is blocked, so that a crash handler that suspends
/// threads with a signal reaches every thread. Waits up to `bound_ns` for them to leave.
void lo_sampler_release_waits(uint64_t bound_ns);

/// In the child of fork() (a pthread_atfork child handler): forgets the parent's session, whose
/// sampler thread does not exist here, so that `lo_sampler_start` starts the child's own.
void lo_sampler_after_fork(void);

/// Hands SIGPROF signals the sampler did not send (the program's own profiler's timer, say) to
/// `action`, the handler the program asked for: the sampler's handler stays installed. `previous`,
/// when not NULL, gets the handler handed on before. A NULL `action` only reads it.
void lo_sampler_chain_signal(const struct sigaction *action, struct sigaction *previous);
/// How many SIGPROF signals the sampler did not send were handed to the program's handler.
uint64_t lo_sampler_chained_signals(void);
/// Whether `action` installs the sampler's own SIGPROF handler.
int lo_sampler_owns_action(const struct sigaction *action);

/// Registers the calling thread for sampling and warms libunwind on it. When every thread
/// is sampled, registering only names the thread and warms it; it also undoes an opt-out.
lo_status lo_sampler_register_current_thread(void);
/// Opts the thread `tid` out of sampling (when every thread is sampled) until it registers
/// or `lo_sampler_include_thread` undoes it.
lo_status lo_sampler_exclude_thread(pid_t tid);
/// Undoes `lo_sampler_exclude_thread`; LO_ERR_NOT_REGISTERED when `tid` had not opted out.
lo_status lo_sampler_include_thread(pid_t tid);
/// Unregisters the calling thread; no signal is sent to it once this returns.
lo_status lo_sampler_unregister_current_thread(void);
/// Unregisters the thread `tid` (which need not be the calling thread).
lo_status lo_sampler_unregister_thread(pid_t tid);
/// Number of registered threads.
int lo_sampler_registered_count(void);

/// Counters of the current or last session.
lo_counts lo_sampler_counts(void);
/// The store: `*word_count` words of samples in the layout above. Valid until
/// the next `lo_sampler_start` or `lo_sampler_clear_store`.
const uint64_t *lo_sampler_store(size_t *word_count);
/// The store's limit: 32 Mi words (256 MiB, about a million samples of 30 frames). Samples past
/// it are counted as dropped.
#define LO_STORE_DEFAULT_LIMIT_WORDS ((size_t)32 << 20)
/// Sets the store's limit in words (0: the default), for the next samples stored.
void lo_sampler_set_store_limit(size_t words);
/// With LO_VERIFY_WALK: the first stack on which the walks disagreed, the walk's and libunwind's
/// (LO_MAX_FRAMES each); returns 0 when there was none.
int lo_sampler_walk_mismatch(uintptr_t *walked, int *walked_depth, uintptr_t *reference, int *reference_depth);
/// `lo_walk_current_stack` methods.
#define LO_WALK_RULES 0
#define LO_WALK_LIBUNWIND 1
/// For measurements: walks the calling thread's stack from here, as a handler would, by call-frame
/// rules (LO_WALK_RULES; finding every rule afresh, as through new code, when `cold`) or by
/// libunwind (LO_WALK_LIBUNWIND; with its global cache flushed first when `cold`; its per-thread
/// cache stays, so a thread's very first unwind is colder still). The rules walk needs a running
/// session (its loader snapshot). Returns the number of frames written, 0 when there were none.
int lo_walk_current_stack(int method, int cold, uintptr_t *buffer, int capacity);
/// Frees the store.
void lo_sampler_clear_store(void);
/// Bytes the sampler holds now (ring and store), for leak checks.
size_t lo_sampler_resident_bytes(void);

/// Kernel thread id of the calling thread, cached per thread.
pid_t lo_current_tid(void);
/// Kernel thread id of the main thread, saved before `main` ran.
pid_t lo_main_tid(void);
/// Whether the calling thread is the process's main thread (cached tid compare).
int lo_is_main_thread(void);
/// CLOCK_MONOTONIC nanoseconds taken by a constructor before `main` ran.
uint64_t lo_premain_ns(void);
/// CLOCK_MONOTONIC now, in nanoseconds.
uint64_t lo_monotonic_ns(void);
/// Gives the memory malloc holds free back to the system (`malloc_trim`).
void lo_return_free_memory(void);
/// CPU time consumed by the calling thread, in nanoseconds.
uint64_t lo_thread_cpu_ns(void);
/// CPU time consumed by thread `tid` of this process, in nanoseconds; -1 when it has ended.
int lo_thread_cpu_ns_of(pid_t tid, uint64_t *out);
/// Times thread `tid` of this process was switched onto a CPU (the third field of
/// /proc/self/task/TID/schedstat); -1 when it ended or the kernel keeps no count.
int lo_thread_switches_in(pid_t tid, uint64_t *out);
/// Time thread `tid` of this process has spent runnable on a run queue, waiting for a core (the
/// second field of /proc/self/task/TID/schedstat, added when the wait ends); -1 when it ended.
int lo_thread_run_delay(pid_t tid, uint64_t *out);
/// Whether thread `tid` of this process is in an uninterruptible wait (state D): for a thread whose
/// CPU clock stands still, a page fault or a read waiting for the disk.
int lo_thread_in_disk_wait(pid_t tid);
/// The identity of the Swift task running on the calling thread (its runtime id), or 0.
uintptr_t lo_current_swift_task(void);

/// What a task event records (`lo_task_event.kind`).
#define LO_TASK_EVENT_CREATED 1  ///< a task was created: `task`, `creator`, on `thread`, at `time_ns` (its first job enqueued then)
#define LO_TASK_EVENT_ENQUEUED 2 ///< one of a task's later jobs was handed to Dispatch (became ready) on `thread` at `time_ns`
#define LO_TASK_EVENT_RAN 3      ///< one of a task's jobs ran on `thread` from `time_ns` to `end_ns`

/// How a task was created (`lo_task_event.task_kind`).
#define LO_TASK_ASYNC_LET 1    ///< `async let`: a child of its creator
#define LO_TASK_GROUP_CHILD 2  ///< a task group's child
#define LO_TASK_UNSTRUCTURED 3 ///< `Task {}`: inherits its creator's task-local values
#define LO_TASK_DETACHED 4     ///< `Task.detached`: inherits nothing

/// One event of the Swift tasks of a session. Tasks are named by their runtime id; times are
/// CLOCK_MONOTONIC nanoseconds.
typedef struct lo_task_event {
    uint8_t kind;
    uint8_t task_kind;     ///< created: how
    uint16_t reserved;
    uint32_t thread;       ///< the thread it happened on
    uint64_t task;         ///< the task's identity
    uint64_t creator;      ///< created: the identity of the task that created it, 0 outside any task
    uint64_t time_ns;      ///< when it happened (a run: when it started)
    uint64_t end_ns;       ///< ran: when the job returned to its executor
} lo_task_event;

/// Copies the task events of the current or last session into `buffer` (up to `capacity`) and
/// returns how many there are; call with a NULL buffer to count. Events are grouped by the thread
/// that recorded them, in time order within each thread. Call once the session stopped.
size_t lo_task_events(lo_task_event *buffer, size_t capacity);
/// Copies the task events from the `start`th on (in the order of `lo_task_events`) into `buffer`,
/// up to `capacity`; returns how many it copied. Allocates nothing (an agent's crash path uses it).
size_t lo_task_events_from(size_t start, lo_task_event *buffer, size_t capacity);
/// Task events the session could not keep (its event memory was full).
uint64_t lo_task_events_lost(void);

/// Names (kernel `comm`) of the threads the last session found, as `tid`, then the
/// NUL-terminated name; call with index 0, 1, … until it returns 0.
int lo_sampler_thread_name(size_t index, pid_t *tid, char *buffer, size_t length);

/// What the process has spent so far, by the kernel's counts (see `lo_read_process_counters`).
typedef struct lo_process_counters {
    uint64_t time_ns;      ///< CLOCK_MONOTONIC when read
    uint64_t cpu_ns;       ///< the main thread's CPU time (its CPU clock)
    uint64_t runqueue_ns;  ///< the main thread's time runnable, waiting for a core (schedstat field 2)
    uint64_t read_bytes;   ///< bytes the process caused to be read from storage (getrusage's blocks in)
    uint64_t read_chars;   ///< not read (0): kept for the recording's layout
    uint64_t major_faults; ///< page faults that read from storage (getrusage)
    uint64_t minor_faults; ///< page faults served from memory
    uint64_t valid;        ///< which of the above were read: LO_COUNTERS_*
} lo_process_counters;
#define LO_COUNTERS_SCHEDULER 1u
#define LO_COUNTERS_IO 2u
#define LO_COUNTERS_FAULTS 4u
/// Reads the /proc file `path` whole into `buffer`, NUL-terminated, with system
/// calls only (async-signal-safe): the bytes read, at most `capacity - 1`; 0 when unreadable.
size_t lo_read_proc_file(const char *path, char *buffer, size_t capacity);
/// `lo_read_proc_file` with one read: for a thread's one-line files (schedstat, stat), which the
/// sampler thread reads at its checks, where a second read only to see the end costs a system call.
size_t lo_read_proc_line(const char *path, char *buffer, size_t capacity);
/// Reads the counters now (system calls only: async-signal-safe).
void lo_read_process_counters(lo_process_counters *out);
/// The counters as Liftoff's constructor read them, before `main` and before any sampling.
const lo_process_counters *lo_premain_counters(void);

/// What another copy of the sampler (the agent's, loaded into a program that links Liftoff)
/// needs to write this copy's recording when the process crashes: this copy's functions. Every
/// one of them is async-signal-safe once `halt` ran, or when no session runs.
typedef struct lo_sampler_source {
    uint32_t size;                                              ///< sizeof(lo_sampler_source)
    int (*is_running)(void);                                    ///< whether it samples now (no lock)
    void (*halt)(void);                                         ///< lo_sampler_halt
    uint32_t (*rate_hz)(void);                                  ///< the current or last session's rate
    lo_counts (*counts)(void);                                  ///< lo_sampler_counts
    const uint64_t *(*store)(size_t *word_count);               ///< lo_sampler_store
    size_t (*task_events)(lo_task_event *buffer, size_t capacity); ///< lo_task_events
    size_t (*task_events_from)(size_t start, lo_task_event *buffer, size_t capacity);
    int (*thread_name)(size_t index, pid_t *tid, char *buffer, size_t length);
    uint64_t (*chained_signals)(void);                          ///< lo_sampler_chained_signals
} lo_sampler_source;

/// This copy of the sampler, for `lo_agent_stand_down_to`.
const lo_sampler_source *lo_sampler_this_source(void);
/// The rate of the current or last session, in Hz (0 before any).
uint32_t lo_sampler_rate_hz(void);

/// Captures the stack of another registered thread: signals it and waits up to `timeout_ms`
/// for its handler to unwind. Returns the number of frames written to `buffer` (leaf first),
/// or -1 when the thread did not answer in time. One request at a time, process-wide.
int lo_capture_thread_stack(pid_t tid, uintptr_t *buffer, int capacity, int timeout_ms);

/// Sends SIGPROF to the calling thread: one sample now, when it is registered and a session
/// runs (the handler runs before this returns). For measuring the cost of one sample.
void lo_signal_current_thread(void);

/// The label of the Dispatch queue running the calling code, or "" when none (or when
/// libdispatch is not loaded).
const char *lo_current_queue_label(void);
// Whether the calling code runs on Dispatch's main queue (where the main actor runs), on
// whatever thread drains it.
int lo_on_main_queue(void);

/// The rules a blocking call in the UI context breaks (see blocking.c and waits.c).
enum {
    LO_BLOCKING_DISK_READ = 1,  ///< open, fopen or read of a regular file
    LO_BLOCKING_DISK_WRITE = 2, ///< an open for writing, write, fsync of a regular file
    LO_BLOCKING_NETWORK = 3,    ///< a call on an IPv4 or IPv6 socket, a name lookup
    LO_BLOCKING_SLEEP = 4,      ///< a sleep, or a poll, select or epoll wait with a finite timeout
    LO_BLOCKING_LOCK_WAIT = 5,  ///< a wait for a contended pthread mutex that reached the threshold
};
/// How long a wait for a contended mutex in the UI context may last before it is reported
/// (LO_BLOCKING_LOCK_WAIT), in nanoseconds: 10 ms unless set.
void lo_blocking_set_lock_threshold(uint64_t ns);
uint64_t lo_blocking_lock_threshold(void);

/// Called on the thread that made a blocking call in the UI context while armed: the rule, what
/// was called on what ("reading /etc/hosts"), how long it waits in nanoseconds (sleeps and timed
/// waits; 0 for the others) and the address the call returns to. The calls
/// the reporter makes on its thread are not checked.
typedef void (*lo_blocking_reporter)(int rule, const char *operation, uint64_t waited_ns, uintptr_t caller);
/// Registers the reporter (NULL: none).
void lo_blocking_set_reporter(lo_blocking_reporter reporter);
/// Adds `delta` to the number of reasons to check blocking calls (a collection, a launch): calls
/// are checked while it is above zero.
void lo_blocking_arm(int delta);
/// Whether blocking calls are being checked.
int lo_blocking_armed(void);
/// The thread treated as the main thread for the checks (0: the process's main thread).
void lo_blocking_set_ui_thread(pid_t tid);
/// Whether Dispatch's main queue is drained by worker threads (the program called `dispatch_main`,
/// as Swift's async `main` does), so that a call off the UI thread asks libdispatch which queue it
/// runs; 1 or 0. The setter makes a benchmark or a test measure either case in one process.
int lo_blocking_main_queue_on_workers(void);
/// Called with what a `write` or `writev` to standard output (1) or error (2) is given, on the
/// writing thread, before the call: at most `LO_OUTPUT_NOTED` bytes of a `writev`.
typedef void (*lo_output_hook)(int fd, const void *bytes, size_t length);
#define LO_OUTPUT_NOTED 128
/// Sets the hook `write` and `writev` call for standard output and error; NULL (the default): none.
void lo_set_output_hook(lo_output_hook hook);
void lo_blocking_set_main_queue_on_workers(int on);
/// Leaves the calling thread's calls unchecked until the matching `lo_blocking_exempt_end`
/// (nested pairs count): Liftoff's own file writes, which no rule is about.
void lo_blocking_exempt_begin(void);
void lo_blocking_exempt_end(void);

/// Sets an opaque per-thread pointer (the launch task running on this thread), or NULL.
void lo_set_thread_context(const void *context);
/// The pointer last set on this thread by `lo_set_thread_context`.
const void *lo_thread_context(void);

/// Copies the calling thread's name (pthread name) into `buffer`; returns 0 on success.
int lo_current_thread_name(char *buffer, size_t length);

/// Captures the calling thread's stack (outside a signal handler) into `buffer`,
/// leaf first, skipping this function's own frame. Returns the number of frames.
int lo_capture_current_stack(uintptr_t *buffer, int capacity);


/// Most loadable segments reported per object by `lo_iterate_objects`.
#define LO_MAX_SEGMENTS 16

/// One loaded ELF object (executable, shared library or vDSO).
typedef struct lo_object_info {
    const char *name;     ///< path as the loader knows it; empty for the main executable
    uintptr_t base;       ///< load bias: runtime address minus link-time address
    int segment_count;    ///< PT_LOAD segments below
    uintptr_t segment_start[LO_MAX_SEGMENTS];
    uintptr_t segment_end[LO_MAX_SEGMENTS];
} lo_object_info;

/// Called once per loaded object; return non-zero to stop early.
typedef int (*lo_object_visitor)(const lo_object_info *info, void *context);

/// Visits every loaded object with `dl_iterate_phdr` (never from a signal handler).
void lo_iterate_objects(lo_object_visitor visitor, void *context);

#ifdef __cplusplus
}
#endif

#endif
