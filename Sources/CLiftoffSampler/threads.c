// The thread table: which threads are sampled, and whether each one ran since its last sample.
//
// Every tick the sampler thread reads the CPU clock of each busy thread. A thread that ran gets
// SIGPROF and its handler records the stack. A thread that did not run since a sample that found
// it waiting in a system call still waits there, so the sampler records a waiting sample without
// signalling it. "Did not run" must not miss a wake-up, however short: a thread that wakes for a
// few microseconds between two waits must be sampled afresh, or the second wait is reported with
// the first one's stack. Its CPU clock cannot tell alone, because answering the signal costs the
// thread CPU time outside the handler too (delivery, sigreturn, blocking again). So the handler of
// a waiting sample reads the thread's context switches out so far (getrusage, one system call),
// and the first check after it reads the switches in from /proc/self/task/TID/schedstat: in the
// handler the thread has switched in once more than out, so more switches in than that mean it
// woke again. Once that check passes, the CPU clock it read is the wait's baseline, and any
// advance of it, by a nanosecond, means the thread ran (see lo_check). Where schedstat gives no
// switch count, a CPU advance of LO_IDLE_CPU_NS is taken to mean it ran.
//
// Threads idle for LO_IDLE_STREAK checks join the idle group, checked together through the
// process's CPU clock, with one waiting record every LO_IDLE_CHECK_NS standing for the ticks
// since, and checked one by one every LO_IDLE_EXACT_NS. So the cost follows the threads that run,
// not the threads that exist.
//
// A signal that reaches a running thread late was waiting for a core: the thread was runnable but
// not running, preempted where the handler finds it. Such an answer is recorded as running for
// the ticks its CPU time since the previous check fills and runnable for the rest of the ticks it
// took (lo_running_ticks). Where the thread's schedstat can tell, an answer of a thread that did
// not use most of its time, late or not, is split by the time it waited on a run queue instead
// (lo_runnable_ticks): on a busy machine a thread may run just after each of the sampler's ticks.
//
// When every thread is sampled, the list comes from /proc/self/task, read again whenever a
// thread was created through pthread_create (which Liftoff wraps to learn of it) and at least
// every LO_LIST_INTERVAL_NS. Long-idle threads are not read one by one while the process's CPU
// clock shows that none of them ran (see the idle group check below).

#include "lo_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#define LO_PENDING_TIMEOUT_NS 100000000ull
#define LO_LIST_INTERVAL_NS 100000000ull
#define LO_IDLE_CHECK_NS 10000000ull
#define LO_IDLE_STREAK 8u
#define LO_IDLE_CPU_NS 20000ull
#define LO_IDLE_EXACT_NS 100000000ull
#define LO_GROUP_SPAN 32u
#define LO_GROUP_SLACK_NS 1000ull
#define LO_RUNNABLE_MIN_NS 100000ull
#define LO_NAME_BYTES 16
#define LO_RQ_CARRY_TICKS 4 // run-queue wait kept for the answers that follow (lo_runnable_ticks)

// How a thread waiting since its last sample is known to still wait.
enum {
    LO_WAIT_TOLERANT = 0, // no switch count: a CPU advance within LO_IDLE_CPU_NS is not a run
    LO_WAIT_SETTLING = 1, // the next check compares switches in with `expect_ins`
    LO_WAIT_SETTLED = 2,  // any CPU advance past `wait_cpu` is a run
};

typedef struct lo_thread {
    pid_t tid;
    uint32_t generation;
    uint8_t pending, has_stack, stack_waits, checked, gone, names_read, maybe_stray, wait_mode, ran_now;
    uint8_t resumed_recorded; // its resumed wait's stack is in the store: later ticks repeat it
    uint8_t sent_in_disk;     // it was in a disk wait (state D) when its signal was sent
    uint32_t idle_streak;
    uint64_t sent_ns, sent_after_ns, sent_tick, base_cpu, answer_cpu, read_cpu, last_tick;
    uint64_t expect_ins, wait_cpu;
    uint64_t missed_ticks; // ticks the sampler fell behind on while the thread ran (lo_check)
    uint64_t disk_ticks;   // ticks its signal was pending while it waited for the disk (state D)
    int64_t cpu_carry;     // CPU time not yet counted in running ticks, or owed (lo_running_ticks)
    uint64_t base_ns;      // when `base_cpu` was read: the start of the window of its next signal
    uint64_t rq_base;      // its run-queue wait (schedstat) at the last read, when `rq_known`
    int64_t rq_carry;      // run-queue wait not yet counted in runnable ticks (lo_runnable_ticks)
    uint8_t rq_known;
    uint8_t partly_idle;   // it used a quarter tick less than the time since its previous check when signalled
    char name[LO_NAME_BYTES];
} lo_thread;

typedef struct lo_name {
    pid_t tid;
    char name[LO_NAME_BYTES];
} lo_name;

static lo_thread *g_table;
static size_t g_count, g_capacity;
static int32_t *g_index;
static size_t g_index_size;

static int g_all;
static uint64_t g_period_ns, g_idle_cpu_ns, g_runnable_ns, g_next_list_ns, g_current_tick, g_next_exact_ns;
static uint64_t g_current_tick_ns;
static uint32_t g_idle_record_ticks, g_generation;
static pid_t g_sampler_tid;
static int g_task_fd = -1;
static _Atomic int g_changed;

static pthread_mutex_t g_names_lock = PTHREAD_MUTEX_INITIALIZER;
static lo_name *g_names;
static size_t g_name_count, g_name_capacity;

void lo_threads_changed(void) { atomic_store_explicit(&g_changed, 1, memory_order_relaxed); }

// ---- pthread_create: learn of new threads at once -----------------------------------------

typedef int (*lo_create_function)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static _Atomic(lo_create_function) g_real_create;

// A new thread reads its Swift task once before its own code runs (lo_task_storage_touch).
typedef struct lo_thread_start {
    void *(*start)(void *);
    void *argument;
} lo_thread_start;

static void *lo_thread_begins(void *argument) {
    lo_thread_start begin = *(lo_thread_start *)argument;
    free(argument);
    lo_task_storage_touch();
    return begin.start(begin.argument);
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attributes, void *(*start)(void *), void *argument) {
    lo_create_function real = atomic_load_explicit(&g_real_create, memory_order_relaxed);
    if (real == NULL) {
        real = (lo_create_function)dlsym(RTLD_NEXT, "pthread_create");
        if (real == NULL) LO_FAIL("pthread_create not found in the C library");
        atomic_store_explicit(&g_real_create, real, memory_order_relaxed);
    }
    lo_thread_start *begin = malloc(sizeof *begin);
    int result;
    if (begin != NULL) {
        *begin = (lo_thread_start){.start = start, .argument = argument};
        result = real(thread, attributes, lo_thread_begins, begin);
        if (result != 0) free(begin);
    } else {
        result = real(thread, attributes, start, argument);
    }
    if (result == 0) lo_threads_changed();
    return result;
}

// ---- the table and its index (open addressing by tid) -------------------------------------

static size_t lo_slot_of(pid_t tid) { return (size_t)((uint32_t)tid * 2654435761u); }

static long lo_find(pid_t tid) {
    if (g_index == NULL) return -1;
    size_t mask = g_index_size - 1;
    for (size_t i = lo_slot_of(tid) & mask;; i = (i + 1) & mask) {
        int32_t entry = g_index[i];
        if (entry < 0) return -1;
        if (g_table[entry].tid == tid) return entry;
    }
}

static void lo_index_insert(size_t entry) {
    size_t mask = g_index_size - 1;
    size_t i = lo_slot_of(g_table[entry].tid) & mask;
    while (g_index[i] >= 0) i = (i + 1) & mask;
    g_index[i] = (int32_t)entry;
}

static int lo_reindex(size_t minimum) {
    size_t size = 64;
    while (size < minimum * 2 + 2) size *= 2;
    if (size != g_index_size) {
        int32_t *grown = realloc(g_index, size * sizeof(int32_t));
        if (grown == NULL) return -1;
        g_index = grown;
        g_index_size = size;
    }
    memset(g_index, 0xff, g_index_size * sizeof(int32_t));
    for (size_t i = 0; i < g_count; i++) lo_index_insert(i);
    return 0;
}

static void lo_read_name(lo_thread *thread) {
    char path[48] = "/proc/self/task/";
    char digits[12];
    int n = 0;
    for (unsigned value = (unsigned)thread->tid; n == 0 || value != 0; value /= 10) digits[n++] = (char)('0' + value % 10);
    size_t length = strlen(path);
    while (n > 0) path[length++] = digits[--n];
    memcpy(path + length, "/comm", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buffer[LO_NAME_BYTES + 1];
    ssize_t got = read(fd, buffer, LO_NAME_BYTES);
    close(fd);
    if (got <= 0) return;
    if (buffer[got - 1] == '\n') got--;
    memset(thread->name, 0, sizeof thread->name);
    memcpy(thread->name, buffer, (size_t)got < LO_NAME_BYTES - 1 ? (size_t)got : LO_NAME_BYTES - 1);
    thread->names_read++;
}

static void lo_keep_name(const lo_thread *thread) {
    if (thread->name[0] == 0) return;
    pthread_mutex_lock(&g_names_lock);
    if (g_name_count == g_name_capacity) {
        size_t capacity = g_name_capacity ? g_name_capacity * 2 : 64;
        lo_name *grown = realloc(g_names, capacity * sizeof(lo_name));
        if (grown == NULL) {
            pthread_mutex_unlock(&g_names_lock);
            return;
        }
        g_names = grown;
        g_name_capacity = capacity;
    }
    g_names[g_name_count].tid = thread->tid;
    memcpy(g_names[g_name_count].name, thread->name, LO_NAME_BYTES);
    g_name_count++;
    pthread_mutex_unlock(&g_names_lock);
}

static pid_t g_skip[LO_MAX_THREADS];
static uint64_t g_skip_cpu[LO_MAX_THREADS];
static int g_skip_count;
static uint64_t g_group_process_cpu, g_group_own_cpu, g_group_tick, g_group_moved, g_group_skew, g_group_min_every;
static uint8_t g_skip_ran[LO_MAX_THREADS];

static void lo_see(pid_t tid) {
    if (tid <= 0 || tid == g_sampler_tid) return;
    for (int i = 0; i < g_skip_count; i++) {
        if (g_skip[i] == tid) return;
    }
    long found = lo_find(tid);
    if (found >= 0 && !g_table[found].gone) {
        g_table[found].generation = g_generation;
        return;
    }
    if (found >= 0) {
        // A new thread with the tid of one that ended.
        lo_keep_name(&g_table[found]);
        memset(&g_table[found], 0, sizeof(lo_thread));
        g_table[found].tid = tid;
    } else {
        if (g_count == g_capacity) {
            size_t capacity = g_capacity ? g_capacity * 2 : 64;
            lo_thread *grown = realloc(g_table, capacity * sizeof(lo_thread));
            if (grown == NULL) return;
            g_table = grown;
            g_capacity = capacity;
        }
        found = (long)g_count++;
        memset(&g_table[found], 0, sizeof(lo_thread));
        g_table[found].tid = tid;
        if (g_count * 2 + 2 > g_index_size) lo_reindex(g_count);
        else lo_index_insert((size_t)found);
    }
    lo_thread *thread = &g_table[found];
    thread->generation = g_generation;
    lo_read_name(thread);
    LO_COUNT(threads_seen, 1);
}

struct lo_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static void lo_list_processes_threads(void) {
    if (g_task_fd < 0) g_task_fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g_task_fd < 0 || lseek(g_task_fd, 0, SEEK_SET) != 0) return;
    char buffer[8192] __attribute__((aligned(8)));
    for (;;) {
        long got = syscall(SYS_getdents64, g_task_fd, buffer, sizeof buffer);
        if (got <= 0) break;
        for (long offset = 0; offset < got;) {
            struct lo_dirent64 *entry = (struct lo_dirent64 *)(buffer + offset);
            offset += entry->d_reclen;
            pid_t tid = 0;
            const char *c = entry->d_name;
            if (*c < '0' || *c > '9') continue;
            for (; *c >= '0' && *c <= '9'; c++) tid = tid * 10 + (*c - '0');
            lo_see(tid);
        }
    }
}

static void lo_list_threads(void) {
    g_generation++;
    LO_COUNT(scans, 1);
    pid_t chosen[LO_MAX_THREADS];
    int chosen_count = 0;
    lo_registry_copy(chosen, &chosen_count, g_skip, &g_skip_count);
    if (g_all) chosen_count = 0;

    if (g_all) lo_list_processes_threads();
    else for (int i = 0; i < chosen_count; i++) lo_see(chosen[i]);
    // Forget threads that ended or left, keeping their names.
    size_t kept = 0;
    for (size_t i = 0; i < g_count; i++) {
        if (g_table[i].generation != g_generation || g_table[i].gone) {
            lo_keep_name(&g_table[i]);
            continue;
        }
        if (kept != i) g_table[kept] = g_table[i];
        kept++;
    }
    if (kept != g_count) {
        g_count = kept;
        lo_reindex(g_count);
    }
}

void lo_threads_begin(int all_threads, uint32_t rate_hz, pid_t sampler_tid) {
    g_all = all_threads;
    g_period_ns = 1000000000ull / rate_hz;
    g_idle_cpu_ns = LO_IDLE_CPU_NS < g_period_ns / 4 ? LO_IDLE_CPU_NS : g_period_ns / 4;
    g_runnable_ns = g_period_ns / 2 > LO_RUNNABLE_MIN_NS ? g_period_ns / 2 : LO_RUNNABLE_MIN_NS;
    g_next_exact_ns = 0;

    g_idle_record_ticks = (uint32_t)(LO_IDLE_CHECK_NS / g_period_ns);
    if (g_idle_record_ticks < 1) g_idle_record_ticks = 1;
    g_sampler_tid = sampler_tid;
    g_generation = 0;
    g_current_tick = 0;
    g_group_tick = UINT64_MAX; // no group check before a first reading
    g_group_moved = 0;
    g_group_skew = 0;
    // At most about a thousand group checks a second, whatever the rate.
    g_group_min_every = rate_hz / 1000 > 1 ? rate_hz / 1000 : 1;
    g_next_list_ns = 0;
    g_count = 0;
    atomic_store(&g_changed, 1);
    pthread_mutex_lock(&g_names_lock);
    g_name_count = 0;
    pthread_mutex_unlock(&g_names_lock);
}

// Checks one thread: reads its CPU clock and records a wait, or signals it when it ran.
// Returns the CPU time it used since its previous read (for the group check), or 0.
static uint64_t lo_check(lo_thread *thread, pid_t pid, uint64_t now_ns, uint64_t tick) {
    uint64_t cpu;
    LO_COUNT(cpu_reads, 1);
    if (lo_thread_cpu_ns_of(thread->tid, &cpu) != 0) {
        thread->gone = 1;
        lo_threads_changed();
        return 0;
    }
    uint64_t moved = cpu > thread->read_cpu ? cpu - thread->read_cpu : 0;
    thread->read_cpu = cpu;
    // A thread in a wait the handler resumed has SIGPROF blocked until the wait ends: a signal would
    // stay pending all along, and the wait would be in no sample. It waits at the stack the handler
    // found; a signal already pending is answered when the wait ends, for the ticks after this one.
    uintptr_t resumed[LO_MAX_FRAMES];
    uint64_t task = 0;
    uint32_t async = 0;
    // Once its stack is stored, only whether it still waits there is asked: the checks run every tick.
    int depth = lo_handler_resumed_stack(thread->tid, thread->resumed_recorded ? NULL : resumed, LO_MAX_FRAMES, &task,
                                         &async);
    if (depth > 0) {
        uint64_t covered = tick > thread->last_tick ? tick - thread->last_tick : 1;
        if (thread->resumed_recorded) {
            // The same wait: a repeat of its stack, and the thread joins the idle group as any wait does.
            lo_store_append(thread->tid, now_ns, 0, 0, covered, LO_SAMPLE_WAITING, NULL, 0, 0);
            if (thread->idle_streak < LO_IDLE_STREAK) thread->idle_streak++;
        } else {
            lo_store_append(thread->tid, now_ns, task, 0, covered, LO_SAMPLE_IN_SYSCALL, resumed, depth, async);
            thread->resumed_recorded = 1;
        }
        thread->last_tick = tick;
        thread->base_cpu = cpu;
        thread->base_ns = now_ns;
        thread->has_stack = 1;
        thread->stack_waits = 1;
        thread->checked = 1;
        if (thread->pending) {
            thread->sent_tick = tick + 1;
            thread->sent_ns = now_ns;
        }
        return moved;
    }
    if (thread->pending) {
        // A signal not answered yet: the thread is preempted, or in the disk wait of a page fault
        // (state D), which the signal cannot interrupt (between two faults it may run a little).
        // Which one is read now, for this tick; the answer, when it comes, splits its late ticks
        // accordingly.
        if (now_ns > thread->sent_ns && now_ns - thread->sent_ns >= g_runnable_ns && lo_thread_in_disk_wait(thread->tid)) {
            thread->disk_ticks++;
        }
        if (now_ns < thread->sent_ns || now_ns - thread->sent_ns < LO_PENDING_TIMEOUT_NS) return moved;
        // Signals blocked, or the answer was dropped: try again.
        thread->pending = 0;
        thread->has_stack = 0;
        LO_COUNT(unanswered, 1);
    }
    uint64_t covered = tick > thread->last_tick ? tick - thread->last_tick : 1;
    uint64_t used = cpu > thread->base_cpu ? cpu - thread->base_cpu : 0;
    // A wait repeats the thread's last stack only when that stack was taken while it waited (in
    // a system call) and it has not run since; a thread caught running that then stopped is
    // signalled once more, to learn where it waits.
    int still_waits = 0;
    if (thread->has_stack && thread->stack_waits) {
        if (thread->wait_mode == LO_WAIT_SETTLING) {
            // A thread that used more than answering a signal costs ran; only a small advance needs
            // the switch count.
            uint64_t ins;
            if (used > g_idle_cpu_ns) {
                still_waits = 0;
            } else if (lo_thread_switches_in(thread->tid, &ins) != 0) {
                thread->wait_mode = LO_WAIT_TOLERANT;
                still_waits = used <= g_idle_cpu_ns;
            } else if (ins <= thread->expect_ins) {
                thread->wait_mode = LO_WAIT_SETTLED;
                thread->wait_cpu = cpu;
                still_waits = 1;
            }
        } else if (thread->wait_mode == LO_WAIT_SETTLED) {
            still_waits = cpu <= thread->wait_cpu;
        } else {
            still_waits = used <= g_idle_cpu_ns;
        }
    }
    if (still_waits) {
        lo_store_append(thread->tid, now_ns, 0, 0, covered, LO_SAMPLE_WAITING, NULL, 0, 0);
        thread->base_cpu = cpu;
        thread->base_ns = now_ns;
        if (thread->idle_streak < LO_IDLE_STREAK) thread->idle_streak++;
    } else {
        // It ran: ticks since the previous check (an idle thread's last record) keep its previous
        // stack, when that stack was a wait.
        // Ticks the sampler missed (it fell behind, waiting for a core itself) while this thread
        // ran on from a running sample: the answer stands for as many of them as the CPU time it
        // used fills, so a busy thread keeps its samples when the sampler is late.
        thread->missed_ticks = 0;
        if (covered > 1 && thread->has_stack && thread->stack_waits) {
            lo_store_append(thread->tid, now_ns - g_period_ns, 0, 0, covered - 1, LO_SAMPLE_WAITING, NULL, 0, 0);
        } else if (covered > 1 && thread->checked) {
            uint64_t filled = used / g_period_ns;
            thread->missed_ticks = filled < covered - 1 ? filled : covered - 1;
        }
        // Read the clock right before sending: a stack request's handler that starts after this
        // may carry this signal too (lo_threads_answer), and `now_ns` may be long past on a busy machine.
        uint64_t sending_ns = lo_monotonic_ns();
        // A thread that used less than half a tick's CPU since its last check and waits for the disk
        // now (a page fault that reads) answers when the read completes, often within the
        // tick: its answer is counted by the CPU it used, and the rest as waiting for the disk.
        // Only such partly idle ticks cost the read of its state.
        thread->sent_in_disk = thread->checked && used < g_period_ns / 2 && lo_thread_in_disk_wait(thread->tid);
        uint64_t window = now_ns > thread->base_ns ? now_ns - thread->base_ns : 0;
        thread->partly_idle = thread->checked && used + g_period_ns / 4 <= window;
        if (syscall(SYS_tgkill, pid, thread->tid, SIGPROF) == 0) {
            LO_COUNT(signals_sent, 1);
            thread->pending = 1;
            thread->sent_ns = sending_ns;
            thread->sent_tick = tick;
            thread->sent_after_ns = lo_monotonic_ns();
            thread->maybe_stray = 0;
            thread->answer_cpu = thread->checked ? used : 0;
        } else if (errno == ESRCH) {
            thread->gone = 1;
            lo_threads_changed();
            return moved;
        }
        thread->base_cpu = cpu;
        thread->base_ns = now_ns;
        thread->checked = 1;
        thread->idle_streak = 0;
    }
    thread->last_tick = tick;
    return moved;
}

static int lo_is_idle(const lo_thread *thread) {
    return thread->idle_streak >= LO_IDLE_STREAK && !thread->pending && thread->has_stack && thread->stack_waits;
}

// The idle group check. Reading every idle thread's clock costs a system call each; instead,
// the sampler reads the process's CPU clock and its own, after the busy threads' clocks. When the
// process used no more CPU than the threads read (the busy ones, Liftoff's opted-out helpers) and
// the sampler itself, no idle thread ran, and each idle thread's wait simply goes on: one waiting
// record every LO_IDLE_CHECK_NS stands for the ticks since. Otherwise every idle thread is checked
// now, to find the one that woke. The reads are not one instant: a thread that ran between its
// read and the process's read makes the next check's difference smaller by what it used then. So
// the threads that ran (and the sampler) are read once more after the process's clock, and what
// they used in between is the next check's slack, with LO_GROUP_SLACK_NS for the rest. A wake-up
// hidden in that slack is found by the check of every idle thread each LO_IDLE_EXACT_NS (and at
// each listing of the threads). The process's clock walks every thread, so with more than
// LO_GROUP_SPAN idle threads, or above 1 kHz, the group is checked every few ticks, not each one.

// A thread that waits for the sampler's first tick (lo_sampler_await_first_tick_unsampled): not
// checked until it is done, so its wait is in no sample.
static _Atomic pid_t g_unsampled_tid;

void lo_threads_set_unsampled(pid_t tid) { atomic_store(&g_unsampled_tid, tid); }

void lo_threads_tick(pid_t pid, uint64_t now_ns, uint64_t tick) {
    g_current_tick = tick;
    g_current_tick_ns = now_ns;
    int listed = 0;
    if (atomic_exchange_explicit(&g_changed, 0, memory_order_relaxed) || now_ns >= g_next_list_ns) {
        lo_list_threads();
        g_next_list_ns = now_ns + LO_LIST_INTERVAL_NS;
        listed = 1;
    }
    uint64_t moved = 0;
    size_t idle = 0;
    for (size_t i = 0; i < g_count; i++) {
        lo_thread *thread = &g_table[i];
        thread->ran_now = 0;
        if (thread->gone || thread->tid == atomic_load(&g_unsampled_tid)) continue;
        if (lo_is_idle(thread)) {
            idle++;
            continue;
        }
        uint64_t used = lo_check(thread, pid, now_ns, tick);
        moved += used;
        thread->ran_now = used > 0;
    }
    for (int i = 0; i < g_skip_count; i++) {
        uint64_t cpu;
        g_skip_ran[i] = 0;
        if (lo_thread_cpu_ns_of(g_skip[i], &cpu) != 0) continue;
        uint64_t used = cpu > g_skip_cpu[i] ? cpu - g_skip_cpu[i] : 0;
        if (!listed) moved += used;
        g_skip_ran[i] = used > 0;
        g_skip_cpu[i] = cpu;
    }
    // Reading the process's CPU clock walks every thread: with many idle threads (or at high rates)
    // the group is checked every few ticks, the busy threads' CPU summed in between.
    g_group_moved += moved;
    uint64_t every = 1 + idle / LO_GROUP_SPAN;
    if (every < g_group_min_every) every = g_group_min_every;
    if (idle > 0 && !listed && g_group_tick != UINT64_MAX && tick - g_group_tick < every && now_ns < g_next_exact_ns) return;
    // Read last, in this order, so that the skew between reads can only make the idle threads
    // seem to have used more, never less; then read again what ran, to bound the skew the next
    // check inherits (see the idle group check above).
    uint64_t own = lo_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t process = lo_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    uint64_t skew = lo_clock_ns(CLOCK_THREAD_CPUTIME_ID) - own;
    if (idle > 0) {
        for (size_t i = 0; i < g_count; i++) {
            uint64_t cpu;
            if (!g_table[i].ran_now || lo_thread_cpu_ns_of(g_table[i].tid, &cpu) != 0) continue;
            skew += cpu > g_table[i].read_cpu ? cpu - g_table[i].read_cpu : 0;
        }
        for (int i = 0; i < g_skip_count; i++) {
            uint64_t cpu;
            if (!g_skip_ran[i] || lo_thread_cpu_ns_of(g_skip[i], &cpu) != 0) continue;
            skew += cpu > g_skip_cpu[i] ? cpu - g_skip_cpu[i] : 0;
        }
    }
    int quiet = 0;
    if (idle > 0 && !listed && g_group_tick != UINT64_MAX && now_ns < g_next_exact_ns) {
        uint64_t used = process - g_group_process_cpu;
        uint64_t accounted = g_group_moved + (own - g_group_own_cpu);
        quiet = used <= accounted + g_group_skew + LO_GROUP_SLACK_NS;
    }
    g_group_process_cpu = process;
    g_group_own_cpu = own;
    g_group_tick = tick;
    g_group_moved = 0;
    g_group_skew = skew;
    if (idle == 0) return;
    if (!quiet && now_ns >= g_next_exact_ns) g_next_exact_ns = now_ns + LO_IDLE_EXACT_NS;
    for (size_t i = 0; i < g_count; i++) {
        lo_thread *thread = &g_table[i];
        if (thread->gone || !lo_is_idle(thread)) continue;
        if (quiet) {
            if (tick - thread->last_tick >= g_idle_record_ticks) {
                lo_store_append(thread->tid, now_ns, 0, 0, tick - thread->last_tick, LO_SAMPLE_WAITING, NULL, 0, 0);
                thread->last_tick = tick;
            }
        } else {
            // Some thread ran that the busy ones do not account for, or it is time to look at each:
            // find the one that woke now.
            lo_check(thread, pid, now_ns, tick);
        }
    }
}

// How many of an answer's ticks, found outside a system call, the thread ran. One that answers
// within g_runnable_ns was running when the signal came, and ran for all of them. One that answers
// later was preempted: the sample's instant says "runnable", but on a busy machine the sampler runs
// when the threads it samples do not, so the instants are not a fair draw, and counting them would
// report a thread that ran half the time as running a tenth of it. So a late answer ran for as many
// ticks as the CPU time it used since its previous check fills, and waited for a core in the rest.
// The carry keeps the CPU time each answer leaves over, and owes what a prompt answer counted
// beyond the CPU it used, within one tick either way, so the ticks counted running follow the CPU
// time the thread used.
static uint64_t lo_running_ticks(lo_thread *thread, int late, uint64_t ticks) {
    int64_t period = (int64_t)g_period_ns;
    int64_t used = thread->answer_cpu < (uint64_t)INT64_MAX / 2 ? (int64_t)thread->answer_cpu : INT64_MAX / 2;
    int64_t credit = thread->cpu_carry + used;
    uint64_t running;
    if (late) {
        running = credit > 0 ? (uint64_t)(credit / period) : 0;
        if (running > ticks) running = ticks;
    } else {
        running = ticks;
    }
    int64_t count = running < (uint64_t)(INT64_MAX / 2 / period) ? (int64_t)running : INT64_MAX / 2 / period;
    credit -= count * period;
    thread->cpu_carry = credit > period ? period : credit < -period ? -period : credit;
    return running;
}

// How many of an answer's ticks, found outside a system call, waited for a core, by the time the
// thread's schedstat says it spent on a run queue since the previous read; -1 when that is not
// known. Read when the answer came late, or the thread used a quarter of a tick less than the time
// before its signal: a thread that answers at once was running at the instant the signal came, but
// that instant is not a fair draw on a busy machine (the sampler's own wake-up makes the kernel
// choose who runs next, and a thread that runs a third of the time may run just after every tick),
// and a late answer's CPU time says how long it ran but not whether it slept. The answer has run,
// so its wait for the signal is in the count. A read costs about 9 µs (opening the file): a thread
// that used the time it had is not read, and the little it waited is in the next read's difference.
// The carry keeps what an answer leaves over, up to LO_RQ_CARRY_TICKS.
static int64_t lo_runnable_ticks(lo_thread *thread, uint64_t ticks) {
    uint64_t waited;
    if (lo_thread_run_delay(thread->tid, &waited) != 0) {
        thread->rq_known = 0;
        return -1;
    }
    int known = thread->rq_known && waited >= thread->rq_base;
    uint64_t delta = known ? waited - thread->rq_base : 0;
    thread->rq_base = waited;
    thread->rq_known = 1;
    if (!known) return -1;
    int64_t period = (int64_t)g_period_ns;
    int64_t credit = thread->rq_carry + (delta < (uint64_t)INT64_MAX / 4 ? (int64_t)delta : INT64_MAX / 4);
    uint64_t runnable = credit > 0 ? (uint64_t)(credit / period) : 0;
    if (runnable > ticks) runnable = ticks;
    credit -= (int64_t)runnable * period;
    thread->rq_carry = credit > LO_RQ_CARRY_TICKS * period ? LO_RQ_CARRY_TICKS * period : credit;
    return (int64_t)runnable;
}

// Records `ticks` of an answer from `time_ns` on, one period apart. Ticks before the job of the
// Swift task it was taken in began on the thread ran something else there (the sampler fell behind
// and the answer stands for ticks it missed, or the thread waited for a core): they are the
// thread's, with the stack the answer found, but not the task's.
static void lo_append_answer(const lo_slot *slot, uint64_t time_ns, uint64_t cpu, uint64_t ticks, uint16_t flags) {
    if (slot->task != 0 && slot->job_ns > time_ns) {
        uint64_t before = (slot->job_ns - time_ns + g_period_ns - 1) / g_period_ns;
        if (before > ticks) before = ticks;
        lo_store_append(slot->tid, time_ns, 0, cpu, before, flags, slot->frames, slot->depth, slot->async);
        if (before == ticks) return;
        time_ns += before * g_period_ns;
        ticks -= before;
        cpu = 0;
    }
    lo_store_append(slot->tid, time_ns, slot->task, cpu, ticks, flags, slot->frames, slot->depth, slot->async);
}

void lo_threads_answer(const lo_slot *slot) {
    long found = lo_find(slot->tid);
    uint64_t cpu = 0;
    if (slot->flags & LO_SLOT_REQUEST) {
        // A stack request's signal: it answers the sampler only when the sampler's own signal was
        // outstanding when the handler ran (and so merged into it); otherwise it is no sample (a
        // request answered earlier by the sampler's signal still gets its own signal later).
        if (found < 0 || !g_table[found].pending || slot->time_ns < g_table[found].sent_ns) return;
        // A handler that began between the clock read and the send may have run before the
        // sampler's signal arrived: that signal then comes on its own, and is not a second sample.
        if (slot->time_ns < g_table[found].sent_after_ns) g_table[found].maybe_stray = 1;
    } else if (found >= 0 && !g_table[found].pending && g_table[found].maybe_stray) {
        g_table[found].maybe_stray = 0;
        return;
    }
    uint16_t flags = (uint16_t)(slot->flags & ~LO_SLOT_REQUEST);
    uint64_t time_ns = slot->time_ns, ticks = 1, running = 0, disk_ticks = 0;
    if (found >= 0) {
        lo_thread *thread = &g_table[found];
        // An answer stands for the ticks from the one that sent the signal to now: the ticks in
        // between were not recorded while it was pending. A running thread answers within
        // microseconds; one that answers late was preempted, waiting for a core where the handler
        // found it. One found in a system call waited there (the signal woke it, and on a busy
        // machine it may wait for a core to answer).
        if (thread->pending && g_current_tick >= thread->sent_tick) {
            uint64_t since_send = g_current_tick - thread->sent_tick;
            ticks = since_send + 1;
            int late = !(flags & LO_SAMPLE_IN_SYSCALL) && slot->time_ns > thread->sent_ns &&
                       slot->time_ns - thread->sent_ns >= g_runnable_ns;
            if (thread->sent_in_disk && !(flags & LO_SAMPLE_IN_SYSCALL)) {
                // Sent while it waited for the disk: the ticks its CPU time does not fill waited there.
                late = 1;
                disk_ticks = UINT64_MAX;
            }
            if (ticks > 1 || late) time_ns = thread->sent_ns;
            if (thread->missed_ticks > 0) {
                uint64_t back = thread->missed_ticks * g_period_ns;
                ticks += thread->missed_ticks;
                time_ns = thread->sent_ns > back ? thread->sent_ns - back : 0;
            }
            // The ticks are taken one period apart, and none after the handler ran: a sampler late
            // for the tick that sent the signal may take the next on time, before the answer came.
            uint64_t spread = (ticks - 1) * g_period_ns;
            if (time_ns + spread > slot->time_ns) time_ns = slot->time_ns > spread ? slot->time_ns - spread : 0;
            if (disk_ticks == 0) disk_ticks = thread->disk_ticks;
            if (!(flags & LO_SAMPLE_IN_SYSCALL) && disk_ticks == 0) {
                int64_t runnable = late || thread->partly_idle ? lo_runnable_ticks(thread, ticks) : -1;
                running = runnable >= 0 ? ticks - (uint64_t)runnable : lo_running_ticks(thread, late, ticks);
            } else if (!(flags & LO_SAMPLE_IN_SYSCALL)) {
                // Seen waiting for the disk: it ran for the ticks its CPU time fills; of the rest, as
                // many as its run-queue wait fills waited for a core, and the others for the disk
                // (the read also keeps that wait from being counted again at the next answer).
                running = lo_running_ticks(thread, late, ticks);
                int64_t runnable = lo_runnable_ticks(thread, ticks - running);
                if (runnable >= 0) disk_ticks = ticks - running - (uint64_t)runnable;
            }
        } else {
            disk_ticks = thread->disk_ticks;
        }
        thread->missed_ticks = 0;
        thread->sent_in_disk = 0;
        thread->disk_ticks = 0;
        thread->pending = 0;
        thread->resumed_recorded = 0;
        thread->last_tick = g_current_tick;
        thread->has_stack = slot->depth > 0;
        thread->stack_waits = (flags & LO_SAMPLE_IN_SYSCALL) != 0;
        // In the handler the thread had switched in once more than out (it was running).
        thread->wait_mode = slot->switches != 0 ? LO_WAIT_SETTLING : LO_WAIT_TOLERANT;
        thread->expect_ins = slot->switches + 1;
        // The handler's time is not the thread's own work.
        thread->base_cpu = thread->base_cpu + slot->handler_ns < thread->base_cpu ? UINT64_MAX
                                                                                  : thread->base_cpu + slot->handler_ns;
        cpu = thread->answer_cpu;
        thread->answer_cpu = 0;
        // Threads often name themselves just after they start: read the name again.
        if (thread->names_read < 3) lo_read_name(thread);
    }
    if (slot->depth == 0) return;
    if (flags & LO_SAMPLE_IN_SYSCALL || running >= ticks) {
        lo_append_answer(slot, time_ns, cpu, ticks, flags);
        return;
    }
    // The ticks it ran, those the sampler saw it in a disk wait waited for the disk, the rest waited
    // for a core, at one stack.
    if (running > 0) {
        lo_append_answer(slot, time_ns, cpu, running, flags);
        cpu = 0;
    }
    uint64_t disk = disk_ticks < ticks - running ? disk_ticks : ticks - running;
    if (disk > 0) {
        lo_append_answer(slot, time_ns + running * g_period_ns, cpu, disk, flags | LO_SAMPLE_DISK);
        cpu = 0;
    }
    if (ticks - running - disk == 0) return;
    lo_append_answer(slot, time_ns + (running + disk) * g_period_ns, cpu, ticks - running - disk, flags | LO_SAMPLE_RUNNABLE);
}

void lo_threads_end(void) {
    // Idle threads' waits are recorded every LO_IDLE_CHECK_NS: record the ticks since, up to the
    // last tick, at which the group check found them still waiting.
    for (size_t i = 0; i < g_count; i++) {
        lo_thread *thread = &g_table[i];
        if (thread->gone || !lo_is_idle(thread) || thread->last_tick >= g_current_tick) continue;
        lo_store_append(thread->tid, g_current_tick_ns, 0, 0, g_current_tick - thread->last_tick, LO_SAMPLE_WAITING,
                        NULL, 0, 0);
    }
    for (size_t i = 0; i < g_count; i++) {
        if (!g_table[i].gone) lo_read_name(&g_table[i]);
        lo_keep_name(&g_table[i]);
    }
    free(g_table);
    free(g_index);
    g_table = NULL;
    g_index = NULL;
    g_count = g_capacity = g_index_size = 0;
    if (g_task_fd >= 0) {
        close(g_task_fd);
        g_task_fd = -1;
    }
}

void lo_threads_after_fork(void) {
    free(g_table);
    free(g_index);
    g_table = NULL;
    g_index = NULL;
    g_count = g_capacity = g_index_size = 0;
    // Opened as /proc/self/task of the parent: the child lists its own.
    if (g_task_fd >= 0) close(g_task_fd);
    g_task_fd = -1;
    pthread_mutex_init(&g_names_lock, NULL);
    free(g_names);
    g_names = NULL;
    g_name_count = g_name_capacity = 0;
}

int lo_sampler_thread_name(size_t index, pid_t *tid, char *buffer, size_t length) {
    pthread_mutex_lock(&g_names_lock);
    int found = index < g_name_count;
    if (found) {
        if (tid) *tid = g_names[index].tid;
        if (buffer && length > 0) {
            size_t n = strnlen(g_names[index].name, LO_NAME_BYTES);
            if (n >= length) n = length - 1;
            memcpy(buffer, g_names[index].name, n);
            buffer[n] = 0;
        }
    }
    pthread_mutex_unlock(&g_names_lock);
    return found;
}
