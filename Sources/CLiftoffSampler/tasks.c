// Swift tasks: who created each one, and when each of its jobs was enqueued and ran.
//
// The Swift runtime on Linux has no task-creation hook, so the entry points client code calls to
// create a task are interposed: `swift_task_create` (Task {}, Task.detached, a group's addTask)
// and `swift_asyncLet_begin` (async let). Code compiled into the program calls them through its
// PLT, so the definitions here take their place; each records the new task, the task (or the
// thread, outside any task) that created it and whether it inherits its creator's context, then
// returns what the runtime's own function returned.
//
// The global and main executors hand jobs to Dispatch with `dispatch_async_f`, which
// libswift_Concurrency calls through its PLT: the definition here records a Swift task's job as
// enqueued, and hands Dispatch a trampoline in place of the runtime's run function, which records
// when the job ran (start and end, on which thread). Nothing is allocated per job.
//
// Events go to per-thread chunks (no contended write), read after the session stopped. They are
// stamped with the CPU's time-stamp counter where it is invariant (a few nanoseconds, against
// about 25 for clock_gettime), converted to CLOCK_MONOTONIC from two readings of both, at the
// session's start and end. With no session running every wrapper only forwards the call.

#include "lo_internal.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

// ---- the runtime's task header --------------------------------------------------------

// TaskCreateFlags: the new task copies its creator's task-local values, or inherits its context
// (Task {} does both, a program's main task the second; Task.detached neither).
#define LO_CREATE_COPY_TASK_LOCALS (1u << 10)
#define LO_CREATE_INHERIT_CONTEXT (1u << 11)

uint64_t lo_task_identity(uintptr_t task) {
    if (task == 0) return 0;
    uint32_t id = *(const uint32_t *)(task + LO_TASK_ID);
    // Tasks are numbered from 1; a zero id (a runtime without ids) falls back to the address.
    return id != 0 ? id : (uint64_t)task;
}

uintptr_t lo_current_swift_task(void) { return (uintptr_t)lo_task_identity(lo_current_swift_task_pointer()); }

static int lo_task_kind_of(uintptr_t task, size_t create_flags) {
    uint32_t flags = *(const uint32_t *)(task + LO_TASK_FLAGS);
    if (flags & LO_TASK_FLAG_ASYNC_LET) return LO_TASK_ASYNC_LET;
    if (flags & LO_TASK_FLAG_GROUP_CHILD) return LO_TASK_GROUP_CHILD;
    if (flags & LO_TASK_FLAG_CHILD) return LO_TASK_GROUP_CHILD;
    return (create_flags & (LO_CREATE_COPY_TASK_LOCALS | LO_CREATE_INHERIT_CONTEXT)) ? LO_TASK_UNSTRUCTURED : LO_TASK_DETACHED;
}

// ---- time stamps -------------------------------------------------------------------------

// Whether events are stamped with the TSC: decided at the first stamp (a process that runs no
// Swift task never asks: the kernel's clock source is a sysfs read of about 40 us).
static _Atomic int g_use_tsc = -1;
static pthread_once_t g_use_tsc_once = PTHREAD_ONCE_INIT;
static uint64_t g_tsc_start, g_ns_start, g_tsc_end, g_ns_end;

static int lo_tsc_is_invariant(void);
static void lo_decide_tsc(void) { atomic_store(&g_use_tsc, lo_tsc_is_invariant()); }

// The raw counter, read at each session's start and end whatever stamps the events.
static inline uint64_t lo_tsc(void) {
#if defined(__x86_64__)
    uint32_t low, high;
    __asm__ volatile("rdtsc" : "=a"(low), "=d"(high));
    return (uint64_t)high << 32 | low;
#else
    return 0;
#endif
}

static inline uint64_t lo_stamp(void) {
    int use = atomic_load_explicit(&g_use_tsc, memory_order_relaxed);
    if (use < 0) {
        pthread_once(&g_use_tsc_once, lo_decide_tsc);
        use = atomic_load(&g_use_tsc);
    }
    return use > 0 ? lo_tsc() : lo_monotonic_ns();
}

// Whether the time-stamp counter runs at a constant rate in every state on every CPU (CPUID's
// invariant-TSC bit, which Linux reports as constant_tsc and nonstop_tsc), and the kernel uses it
// as its own clock source.
static int lo_tsc_is_invariant(void) {
#if defined(__x86_64__)
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 8))) return 0;
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char source[16] = {0};
    ssize_t got = read(fd, source, sizeof source - 1);
    close(fd);
    return got >= 3 && strncmp(source, "tsc", 3) == 0;
#else
    return 0;
#endif
}

// A stamp as CLOCK_MONOTONIC nanoseconds, from the readings at the session's start and end.
static uint64_t lo_stamp_ns(uint64_t stamp) {
    if (atomic_load(&g_use_tsc) <= 0 || g_tsc_end <= g_tsc_start) return stamp;
    __int128 offset = (__int128)stamp - (__int128)g_tsc_start;
    __int128 ns = (__int128)g_ns_start + offset * (__int128)(g_ns_end - g_ns_start) / (__int128)(g_tsc_end - g_tsc_start);
    return ns < 0 ? 0 : (uint64_t)ns;
}

// ---- event chunks ----------------------------------------------------------------------

#define LO_CHUNK_EVENTS 2048
#define LO_MAX_CHUNKS 1024

typedef struct lo_chunk {
    struct lo_chunk *next;       // every chunk ever made, newest first
    _Atomic int owned;           // a thread writes to it this session
    _Atomic int busy;            // its thread is between checking the session and writing
    _Atomic uint32_t count;      // events written (each complete before the count covers it)
    lo_task_event events[LO_CHUNK_EVENTS];
} lo_chunk;

static _Atomic int g_tracking;
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is registered: by the first chunk ever claimed, so a
// process that runs no Swift task (a C program, a shell) pays neither for it nor for the barrier.
static int g_asymmetric;
static pthread_once_t g_asymmetric_once = PTHREAD_ONCE_INIT;

static void lo_register_asymmetric(void) {
    g_asymmetric = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}
static _Atomic uint64_t g_epoch = 1;
static _Atomic(lo_chunk *) g_chunks;
static _Atomic int g_chunk_total;
static _Atomic uint64_t g_lost;
static __thread lo_chunk *t_chunk;
static __thread uint64_t t_epoch;

// A chunk of this session for the calling thread: a free one made earlier, or a new one. Its
// owned flag is set with a full fence: `lo_tasks_stop`, which reads every chunk's flag after
// ending the session, skips the barrier when none is owned, and a writer that claims one after
// that read sees the session ended.
static lo_chunk *lo_claim_chunk(void) {
    pthread_once(&g_asymmetric_once, lo_register_asymmetric);
    for (lo_chunk *chunk = atomic_load(&g_chunks); chunk != NULL; chunk = chunk->next) {
        int expected = 0;
        if (atomic_load_explicit(&chunk->owned, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&chunk->owned, &expected, 1)) {
            atomic_thread_fence(memory_order_seq_cst);
            return chunk;
        }
    }
    if (atomic_fetch_add(&g_chunk_total, 1) >= LO_MAX_CHUNKS) {
        atomic_fetch_sub(&g_chunk_total, 1);
        return NULL;
    }
    lo_chunk *chunk = calloc(1, sizeof *chunk);
    if (chunk == NULL) {
        atomic_fetch_sub(&g_chunk_total, 1);
        return NULL;
    }
    atomic_store(&chunk->owned, 1);
    lo_chunk *head = atomic_load(&g_chunks);
    do {
        chunk->next = head;
    } while (!atomic_compare_exchange_weak(&g_chunks, &head, chunk));
    atomic_thread_fence(memory_order_seq_cst);
    return chunk;
}

// A writer's half of the Dekker pair with `lo_tasks_stop`: marks `chunk` busy and tells whether
// the session still records; every call is followed by `lo_leave`. Whatever the writer does
// between the two is either seen by the reader or never done. The pair's fence is asymmetric
// where the kernel has membarrier: free for writers, a system call for the reader.
static int lo_enter(lo_chunk *chunk) {
    atomic_store_explicit(&chunk->busy, 1, memory_order_relaxed);
    // With membarrier, `lo_tasks_stop` puts the full barrier on this thread's side when it needs
    // one; without it, each writer pays for it here.
    if (g_asymmetric) atomic_signal_fence(memory_order_seq_cst);
    else atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(&g_tracking, memory_order_relaxed);
}

static void lo_leave(lo_chunk *chunk) { atomic_store_explicit(&chunk->busy, 0, memory_order_release); }

// Appends one event when a session runs and returns where it was written (NULL when it was not).
static lo_task_event *lo_record(const lo_task_event *event) {
    if (!atomic_load_explicit(&g_tracking, memory_order_relaxed)) return NULL;
    uint64_t epoch = atomic_load_explicit(&g_epoch, memory_order_relaxed);
    lo_chunk *chunk = t_chunk;
    if (chunk == NULL || t_epoch != epoch ||
        atomic_load_explicit(&chunk->count, memory_order_relaxed) >= LO_CHUNK_EVENTS) {
        chunk = lo_claim_chunk();
        t_chunk = chunk;
        t_epoch = epoch;
        if (chunk == NULL) {
            atomic_fetch_add_explicit(&g_lost, 1, memory_order_relaxed);
            return NULL;
        }
    }
    lo_task_event *written = NULL;
    if (lo_enter(chunk)) {
        uint32_t at = atomic_load_explicit(&chunk->count, memory_order_relaxed);
        chunk->events[at] = *event;
        atomic_store_explicit(&chunk->count, at + 1, memory_order_release);
        written = &chunk->events[at];
    }
    lo_leave(chunk);
    return written;
}

// Sets the end of a run that `lo_record` wrote in session `epoch` when it began, if that session
// still records. A run whose end is never set was still running when the session stopped: the
// reader ends it there. The thread's current chunk carries the busy flag (the job may have moved
// it to another one); the reader waits for every chunk's.
static void lo_record_end(lo_task_event *run, uint64_t epoch, uint64_t end) {
    lo_chunk *chunk = t_chunk;
    if (run == NULL || chunk == NULL) return;
    if (lo_enter(chunk) && atomic_load_explicit(&g_epoch, memory_order_relaxed) == epoch) {
        __atomic_store_n(&run->end_ns, end == 0 ? 1 : end, __ATOMIC_RELEASE);
    }
    lo_leave(chunk);
}

// The time-stamp counter and the clock read together: the counter between two clock reads, from
// the attempt whose two reads lie closest. A preemption between a lone pair of reads (a busy core,
// a program pinned beside a busy process) put the pair milliseconds apart and shifted every run's
// time converted with it off its ticks. Safe in a signal handler (the clock is the vDSO's).
static void lo_read_clock_pair(uint64_t *tsc, uint64_t *ns) {
    uint64_t best = UINT64_MAX;
    for (int attempt = 0; attempt < 8; attempt++) {
        uint64_t before = lo_monotonic_ns(), counter = lo_tsc(), after = lo_monotonic_ns();
        uint64_t bracket = after - before;
        if (bracket < best) {
            best = bracket;
            *tsc = counter;
            *ns = before + bracket / 2;
        }
        if (bracket < 2000) break;
    }
}

void lo_tasks_start(void) {
    // Earlier sessions' chunks are free again; threads notice by the epoch.
    for (lo_chunk *chunk = atomic_load(&g_chunks); chunk != NULL; chunk = chunk->next) {
        atomic_store(&chunk->count, 0);
        atomic_store(&chunk->owned, 0);
    }
    atomic_store(&g_lost, 0);
    lo_async_prepare();
    g_tsc_end = 0;
    lo_read_clock_pair(&g_tsc_start, &g_ns_start);
    atomic_fetch_add(&g_epoch, 1);
    atomic_store(&g_tracking, 1);
}

void lo_tasks_stop(void) {
    atomic_store(&g_tracking, 0);
    int owned = 0;
    for (lo_chunk *chunk = atomic_load(&g_chunks); chunk != NULL && !owned; chunk = chunk->next) {
        owned = atomic_load(&chunk->owned);
    }
    if (owned && g_asymmetric && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        LO_FAIL("membarrier failed after it was registered");
    }
    for (lo_chunk *chunk = atomic_load(&g_chunks); chunk != NULL; chunk = chunk->next) {
        while (atomic_load(&chunk->busy)) sched_yield();
    }
    lo_read_clock_pair(&g_tsc_end, &g_ns_end);
}

void lo_tasks_after_fork(void) {
    atomic_store(&g_tracking, 0);
    // A thread of the parent may have been writing an event: it does not exist here.
    for (lo_chunk *chunk = atomic_load(&g_chunks); chunk != NULL; chunk = chunk->next) {
        atomic_store(&chunk->busy, 0);
        atomic_store(&chunk->owned, 0);
        atomic_store(&chunk->count, 0);
    }
}

void lo_tasks_halt(void) {
    // From a signal handler: events being written now may be left out, nothing is waited for.
    atomic_store(&g_tracking, 0);
    lo_read_clock_pair(&g_tsc_end, &g_ns_end);
}

size_t lo_task_events_from(size_t start, lo_task_event *buffer, size_t capacity) {
    size_t seen = 0, copied = 0;
    for (lo_chunk *chunk = atomic_load(&g_chunks); chunk != NULL && copied < capacity; chunk = chunk->next) {
        if (!atomic_load(&chunk->owned)) continue;
        uint32_t count = atomic_load_explicit(&chunk->count, memory_order_acquire);
        if (seen + count <= start) {
            seen += count;
            continue;
        }
        for (uint32_t index = start > seen ? (uint32_t)(start - seen) : 0; index < count && copied < capacity; index++) {
            lo_task_event event = chunk->events[index];
            event.time_ns = lo_stamp_ns(event.time_ns);
            if (event.kind == LO_TASK_EVENT_RAN) {
                uint64_t end = __atomic_load_n(&chunk->events[index].end_ns, __ATOMIC_ACQUIRE);
                // A run never ended was still running when the session stopped: it ends there.
                event.end_ns = end != 0 ? lo_stamp_ns(end) : g_ns_end;
            }
            buffer[copied++] = event;
        }
        seen += count;
    }
    return copied;
}

size_t lo_task_events(lo_task_event *buffer, size_t capacity) {
    size_t total = 0;
    for (lo_chunk *chunk = atomic_load(&g_chunks); chunk != NULL; chunk = chunk->next) {
        if (atomic_load(&chunk->owned)) total += atomic_load_explicit(&chunk->count, memory_order_acquire);
    }
    if (buffer != NULL) lo_task_events_from(0, buffer, capacity);
    return total;
}

uint64_t lo_task_events_lost(void) { return atomic_load(&g_lost); }

// ---- task creation ----------------------------------------------------------------------

// The definition this file stands in for: the next one in the lookup order, found once.
static void *lo_next(_Atomic(void *) *slot, const char *name) {
    void *function = atomic_load_explicit(slot, memory_order_relaxed);
    if (function == NULL) {
        function = dlsym(RTLD_NEXT, name);
        if (function == NULL) LO_FAIL("a function the task recorder wraps is not defined by any loaded library");
        atomic_store(slot, function);
    }
    return function;
}

// Set while the runtime creates a task on this thread: the job it enqueues meanwhile is the new
// task's first, enqueued when the task was created (the creation event stands for the enqueue).
static __thread int t_creating;

static void lo_record_creation(uintptr_t task, int kind, uint64_t created) {
    if (task == 0) return;
    lo_task_event event = {
        .kind = LO_TASK_EVENT_CREATED,
        .task_kind = (uint8_t)kind,
        .thread = (uint32_t)lo_current_tid(),
        .task = lo_task_identity(task),
        .creator = lo_task_identity(lo_current_swift_task_pointer()),
        .time_ns = created,
    };
    (void)lo_record(&event);
}

typedef struct lo_task_and_context {
    void *task;
    void *context;
} lo_task_and_context;

typedef __attribute__((swiftcall)) lo_task_and_context (*lo_task_create_function)(
    size_t, void *, const void *, void *, void *);
typedef __attribute__((swiftcall)) void (*lo_async_let_begin_function)(void *, void *, const void *, void *, void *, void *);

// The wrappers below are weak: a program linked with the Swift runtime itself
// (--static-swift-stdlib) has the runtime's own definitions in the same link, and those win
// (that program records no task events); with the runtime's shared libraries they come first.
#define LO_WRAPPER __attribute__((weak))

LO_WRAPPER __attribute__((swiftcall)) lo_task_and_context swift_task_create(
    size_t flags, void *options, const void *result_type, void *entry, void *context) {
    static _Atomic(void *) real;
    lo_task_create_function function = (lo_task_create_function)lo_next(&real, "swift_task_create");
    if (!atomic_load_explicit(&g_tracking, memory_order_relaxed)) {
        return function(flags, options, result_type, entry, context);
    }
    uint64_t now = lo_stamp();
    t_creating = 1;
    lo_task_and_context created = function(flags, options, result_type, entry, context);
    t_creating = 0;
    lo_record_creation((uintptr_t)created.task, lo_task_kind_of((uintptr_t)created.task, flags), now);
    return created;
}

// The task of an `async let` once begun, as swift::AsyncLet::getTask reads it (the runtime does not
// export that accessor): the word after the child record, with flag bits below the task's
// alignment. Only for the runtime layout it was read from, and only when it names an async-let task.
static uintptr_t lo_async_let_task(const void *async_let) {
    if (!lo_task_layout_known()) return 0;
    uintptr_t task = *(const uintptr_t *)((uintptr_t)async_let + 0x18) & ~(uintptr_t)0xf;
    if (task == 0 || (*(const uint32_t *)(task + LO_TASK_FLAGS) & (LO_TASK_FLAG_ASYNC_LET | 0xffu)) != LO_TASK_FLAG_ASYNC_LET) return 0;
    return task;
}

LO_WRAPPER __attribute__((swiftcall)) void swift_asyncLet_begin(
    void *async_let, void *options, const void *result_type, void *entry, void *context, void *result) {
    static _Atomic(void *) real;
    lo_async_let_begin_function function = (lo_async_let_begin_function)lo_next(&real, "swift_asyncLet_begin");
    if (!atomic_load_explicit(&g_tracking, memory_order_relaxed)) {
        function(async_let, options, result_type, entry, context, result);
        return;
    }
    uint64_t now = lo_stamp();
    t_creating = 1;
    function(async_let, options, result_type, entry, context, result);
    t_creating = 0;
    lo_record_creation(lo_async_let_task(async_let), LO_TASK_ASYNC_LET, now);
}

// ---- jobs handed to Dispatch --------------------------------------------------------------

typedef void (*lo_dispatch_function)(void *);
typedef void (*lo_dispatch_async_function)(void *, void *, lo_dispatch_function);

// The functions libswift_Concurrency hands its jobs to Dispatch with, found by the library they
// lie in (the runtime's run-job function is not exported), and a few that are not. Each known one
// has a trampoline that stands in for it.
#define LO_KNOWN_FUNCTIONS 8
static _Atomic uintptr_t g_job_functions[LO_KNOWN_FUNCTIONS];
static _Atomic uintptr_t g_other_functions[LO_KNOWN_FUNCTIONS];

// The slot of `function` in `table`, remembering it in a free one; -1 when the table is full.
static int lo_remember(_Atomic uintptr_t *table, uintptr_t function) {
    for (int index = 0; index < LO_KNOWN_FUNCTIONS; index++) {
        uintptr_t expected = 0;
        if (atomic_compare_exchange_strong(&table[index], &expected, function) || expected == function) return index;
    }
    return -1;
}

// The slot of a run function of the Swift runtime, or -1 for any other function.
static int lo_swift_job_slot(lo_dispatch_function function) {
    uintptr_t address = (uintptr_t)function;
    for (int index = 0; index < LO_KNOWN_FUNCTIONS; index++) {
        uintptr_t known = atomic_load_explicit(&g_job_functions[index], memory_order_relaxed);
        if (known == address) return index;
        if (known == 0) break;
    }
    for (int index = 0; index < LO_KNOWN_FUNCTIONS; index++) {
        uintptr_t known = atomic_load_explicit(&g_other_functions[index], memory_order_relaxed);
        if (known == address) return -1;
        if (known == 0) break;
    }
    Dl_info info;
    int swift = dladdr((void *)function, &info) != 0 && info.dli_fname != NULL &&
                strstr(info.dli_fname, "libswift_Concurrency") != NULL;
    if (!swift) {
        lo_remember(g_other_functions, address);
        return -1;
    }
    return lo_remember(g_job_functions, address);
}

// A task's job as it runs on this thread: its run, written before the job runs and its end set
// after (a job that completes its task may resume the code that stops the session before it
// returns, and its run must not be lost), and the start of the job it ran inside, if any.
__thread uint64_t lo_t_job_ns __attribute__((tls_model("initial-exec")));

typedef struct lo_job_run {
    lo_task_event *run;
    uint64_t epoch;
    uint64_t outer_job_ns;
} lo_job_run;

static lo_job_run lo_job_begins(void *job) {
    // A job may run another inline (an executor's synchronous run): the outer one's start comes back.
    lo_job_run state = {.outer_job_ns = lo_t_job_ns};
    lo_t_job_ns = lo_monotonic_ns();
    // The job is the task, alive until it runs.
    lo_task_event event = {
        .kind = LO_TASK_EVENT_RAN,
        .thread = (uint32_t)lo_current_tid(),
        .task = lo_task_identity((uintptr_t)job),
        .time_ns = lo_stamp(),
        .end_ns = 0,
    };
    state.run = lo_record(&event);
    // The session the run was written in (t_epoch is the epoch of the thread's chunk).
    state.epoch = t_epoch;
    return state;
}

static void lo_job_ends(lo_job_run state) {
    lo_t_job_ns = state.outer_job_ns;
    lo_record_end(state.run, state.epoch, lo_stamp());
}

// Runs a task's job through the runtime's function in `slot`, recording when it ran.
static inline void lo_run_job(int slot, void *job) {
    lo_dispatch_function function = (lo_dispatch_function)atomic_load_explicit(&g_job_functions[slot], memory_order_relaxed);
    lo_job_run state = lo_job_begins(job);
    function(job);
    lo_job_ends(state);
}

#define LO_TRAMPOLINE(slot) \
    static void lo_run_job_##slot(void *job) { lo_run_job(slot, job); }
LO_TRAMPOLINE(0)
LO_TRAMPOLINE(1)
LO_TRAMPOLINE(2)
LO_TRAMPOLINE(3)
LO_TRAMPOLINE(4)
LO_TRAMPOLINE(5)
LO_TRAMPOLINE(6)
LO_TRAMPOLINE(7)
static const lo_dispatch_function g_trampolines[LO_KNOWN_FUNCTIONS] = {
    lo_run_job_0, lo_run_job_1, lo_run_job_2, lo_run_job_3, lo_run_job_4, lo_run_job_5, lo_run_job_6, lo_run_job_7,
};

// A program's own call to run a job synchronously: the entry point of `static func main() async`
// runs the main task's first job on the main thread this way (a SerialExecutorRef is two words).
typedef __attribute__((swiftcall)) void (*lo_job_run_function)(void *, void *, uintptr_t);

LO_WRAPPER __attribute__((swiftcall)) void swift_job_run(void *job, void *executor_identity, uintptr_t executor_implementation) {
    static _Atomic(void *) real;
    lo_job_run_function function = (lo_job_run_function)lo_next(&real, "swift_job_run");
    if (!atomic_load_explicit(&g_tracking, memory_order_relaxed) || job == NULL ||
        (*(const uint32_t *)((uintptr_t)job + LO_TASK_FLAGS) & 0xffu) != 0) {
        function(job, executor_identity, executor_implementation);
        return;
    }
    lo_job_run state = lo_job_begins(job);
    function(job, executor_identity, executor_implementation);
    lo_job_ends(state);
}

LO_WRAPPER void dispatch_async_f(void *queue, void *context, lo_dispatch_function function) {
    static _Atomic(void *) real;
    lo_dispatch_async_function next = (lo_dispatch_async_function)lo_next(&real, "dispatch_async_f");
    int slot = -1;
    // A Swift job whose kind (the low byte of its flags) is 0 is a task.
    if (atomic_load_explicit(&g_tracking, memory_order_relaxed) && context != NULL && function != NULL &&
        (slot = lo_swift_job_slot(function)) >= 0 && (*(const uint32_t *)((uintptr_t)context + LO_TASK_FLAGS) & 0xffu) == 0) {
        if (!t_creating) {
            lo_task_event event = {
                .kind = LO_TASK_EVENT_ENQUEUED,
                .thread = (uint32_t)lo_current_tid(),
                .task = lo_task_identity((uintptr_t)context),
                .time_ns = lo_stamp(),
            };
            (void)lo_record(&event);
        }
        function = g_trampolines[slot];
    }
    next(queue, context, function);
}
