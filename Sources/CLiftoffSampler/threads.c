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
// When every thread is sampled, the list comes from /proc/self/task, read again whenever a
// thread was created through pthread_create (which Liftoff wraps to learn of it) and at least
// every LO_LIST_INTERVAL_NS. Long-idle threads are not read one by one while the process's CPU
// clock shows that none of them ran (see the idle group check below).

#include "lo_internal.h"
#include "lo_thread_table.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LO_PENDING_TIMEOUT_NS 100000000ull
#define LO_LIST_INTERVAL_NS 100000000ull
#define LO_IDLE_CHECK_NS 10000000ull
#define LO_IDLE_STREAK 8u
#define LO_IDLE_CPU_NS 20000ull
#define LO_IDLE_EXACT_NS 100000000ull
#define LO_GROUP_SPAN 32u
#define LO_GROUP_SLACK_NS 1000ull
#define LO_RUNNABLE_MIN_NS 100000ull

typedef struct lo_name {
    pid_t tid;
    char name[LO_NAME_BYTES];
} lo_name;

lo_thread *lo_thread_table;
static size_t g_count, g_capacity;
static int32_t *g_index;
static size_t g_index_size;

static int g_all;
uint64_t lo_tick_period_ns, lo_tick_runnable_ns, lo_tick_current;
static uint64_t g_idle_cpu_ns, g_next_list_ns, g_next_exact_ns;
static uint64_t g_current_tick_ns;
static uint32_t g_idle_record_ticks, g_generation;
static pid_t g_sampler_tid;
static int g_task_fd = -1;     // /proc/self/task, opened by the sampler thread
static int g_private_files;    // the sampler thread has a descriptor table of its own (sampler.c)

void lo_threads_set_private_files(int private_files) {
    // A new sampler thread opens its own: a number from another table means nothing in it.
    g_private_files = private_files;
    g_task_fd = -1;
}

int lo_threads_have_private_files(void) { return g_private_files; }

static int g_disk_check = 1; // a late or partly idle answer's thread state is read (LO_SKIP_DISK_CHECK)
void lo_threads_set_disk_check(int checks) { g_disk_check = checks; }

// Forgets /proc/self/task from another thread: a sampler thread's own table goes with the thread,
// and closing that number here would close one of the program's files.
static void lo_forget_task_fd(void) {
    if (g_task_fd >= 0 && !g_private_files) close(g_task_fd);
    g_task_fd = -1;
}
static _Atomic int g_changed;

static pthread_mutex_t g_names_lock = PTHREAD_MUTEX_INITIALIZER;
static lo_name *g_names;
static size_t g_name_count, g_name_capacity;

void lo_threads_changed(void) { atomic_store_explicit(&g_changed, 1, memory_order_relaxed); }

// ---- pthread_create: learn of new threads at once -----------------------------------------

typedef int (*lo_create_function)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static _Atomic(lo_create_function) g_real_create;

// A new thread reads its Swift task once before its own code runs (lo_task_storage_touch).
//
// The block that carries the thread's function to it is never freed by the new thread: a thread's
// first free (or malloc) sets up the C library's per-thread cache and may make an arena, and the
// first arena a process makes reads /sys/devices/system/cpu/online, opening a descriptor in the
// program's table from a thread that would otherwise open none. A program that closes a number and
// dup2s over it then and there (a shell moving its output) lost a write to it. The new thread hands
// the block back to a list instead, and the next pthread_create takes it from there.
typedef struct lo_thread_start {
    void *(*start)(void *);
    void *argument;
    struct lo_thread_start *next;
} lo_thread_start;

static pthread_mutex_t g_spare_starts_lock = PTHREAD_MUTEX_INITIALIZER;
static lo_thread_start *g_spare_starts;

static lo_thread_start *lo_take_start_block(void) {
    pthread_mutex_lock(&g_spare_starts_lock);
    lo_thread_start *block = g_spare_starts;
    if (block != NULL) g_spare_starts = block->next;
    pthread_mutex_unlock(&g_spare_starts_lock);
    return block != NULL ? block : malloc(sizeof *block);
}

static void lo_return_start_block(lo_thread_start *block) {
    pthread_mutex_lock(&g_spare_starts_lock);
    block->next = g_spare_starts;
    g_spare_starts = block;
    pthread_mutex_unlock(&g_spare_starts_lock);
}

static void *lo_thread_begins(void *argument) {
    lo_thread_start begin = *(lo_thread_start *)argument;
    lo_return_start_block(argument);
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
    lo_thread_start *begin = lo_take_start_block();
    int result;
    if (begin != NULL) {
        *begin = (lo_thread_start){.start = start, .argument = argument, .next = NULL};
        result = real(thread, attributes, lo_thread_begins, begin);
        if (result != 0) lo_return_start_block(begin);
    } else {
        result = real(thread, attributes, start, argument);
    }
    if (result == 0) lo_threads_changed();
    return result;
}

// ---- the table and its index (open addressing by tid) -------------------------------------

static size_t lo_slot_of(pid_t tid) { return (size_t)((uint32_t)tid * 2654435761u); }

long lo_threads_find(pid_t tid) {
    if (g_index == NULL) return -1;
    size_t mask = g_index_size - 1;
    for (size_t i = lo_slot_of(tid) & mask;; i = (i + 1) & mask) {
        int32_t entry = g_index[i];
        if (entry < 0) return -1;
        if (lo_thread_table[entry].tid == tid) return entry;
    }
}

static void lo_index_insert(size_t entry) {
    size_t mask = g_index_size - 1;
    size_t i = lo_slot_of(lo_thread_table[entry].tid) & mask;
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

void lo_thread_read_name(lo_thread *thread) {
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

static void lo_see(pid_t tid, lo_registration stamp) {
    if (tid <= 0 || tid == g_sampler_tid) return;
    for (int i = 0; i < g_skip_count; i++) {
        if (g_skip[i] == tid) return;
    }
    long found = lo_threads_find(tid);
    if (found >= 0 && !lo_thread_table[found].gone) {
        lo_thread_table[found].generation = g_generation;
        return;
    }
    if (found >= 0) {
        // A new thread with the tid of one that ended.
        lo_keep_name(&lo_thread_table[found]);
        memset(&lo_thread_table[found], 0, sizeof(lo_thread));
        lo_thread_table[found].tid = tid;
    } else {
        if (g_count == g_capacity) {
            size_t capacity = g_capacity ? g_capacity * 2 : 64;
            lo_thread *grown = realloc(lo_thread_table, capacity * sizeof(lo_thread));
            if (grown == NULL) return;
            lo_thread_table = grown;
            g_capacity = capacity;
        }
        found = (long)g_count++;
        memset(&lo_thread_table[found], 0, sizeof(lo_thread));
        lo_thread_table[found].tid = tid;
        if (g_count * 2 + 2 > g_index_size) lo_reindex(g_count);
        else lo_index_insert((size_t)found);
    }
    lo_thread *thread = &lo_thread_table[found];
    thread->generation = g_generation;
    // Registered since the last listing, and listed late (the sampler waited for a core): the
    // ticks since it registered are checked as any missed ticks are, by the CPU it used since.
    uint64_t since = g_current_tick_ns > stamp.at_ns ? g_current_tick_ns - stamp.at_ns : 0;
    if (stamp.at_ns != 0 && since < LO_LIST_INTERVAL_NS && lo_tick_period_ns > 0) {
        uint64_t back = since / lo_tick_period_ns;
        thread->last_tick = lo_tick_current > back ? lo_tick_current - back : 0;
        thread->base_cpu = stamp.cpu_ns;
        thread->read_cpu = stamp.cpu_ns;
        thread->base_ns = stamp.at_ns;
        thread->checked = 1;
    }
    lo_thread_read_name(thread);
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
            lo_see(tid, (lo_registration){0, 0});
        }
    }
}

static void lo_list_threads(void) {
    g_generation++;
    LO_COUNT(scans, 1);
    pid_t chosen[LO_MAX_THREADS];
    static lo_registration stamps[LO_MAX_THREADS];
    int chosen_count = 0;
    lo_registry_copy(chosen, stamps, &chosen_count, g_skip, &g_skip_count);
    if (g_all) chosen_count = 0;

    if (g_all) lo_list_processes_threads();
    else for (int i = 0; i < chosen_count; i++) lo_see(chosen[i], stamps[i]);
    // Forget threads that ended or left, keeping their names.
    size_t kept = 0;
    for (size_t i = 0; i < g_count; i++) {
        if (lo_thread_table[i].generation != g_generation || lo_thread_table[i].gone) {
            lo_keep_name(&lo_thread_table[i]);
            continue;
        }
        if (kept != i) lo_thread_table[kept] = lo_thread_table[i];
        kept++;
    }
    if (kept != g_count) {
        g_count = kept;
        lo_reindex(g_count);
    }
}

void lo_threads_begin(int all_threads, uint32_t rate_hz, pid_t sampler_tid) {
    g_all = all_threads;
    lo_tick_period_ns = 1000000000ull / rate_hz;
    g_idle_cpu_ns = LO_IDLE_CPU_NS < lo_tick_period_ns / 4 ? LO_IDLE_CPU_NS : lo_tick_period_ns / 4;
    lo_tick_runnable_ns = lo_tick_period_ns / 2 > LO_RUNNABLE_MIN_NS ? lo_tick_period_ns / 2 : LO_RUNNABLE_MIN_NS;
    g_next_exact_ns = 0;

    g_idle_record_ticks = (uint32_t)(LO_IDLE_CHECK_NS / lo_tick_period_ns);
    if (g_idle_record_ticks < 1) g_idle_record_ticks = 1;
    g_sampler_tid = sampler_tid;
    g_generation = 0;
    lo_tick_current = 0;
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
        if (now_ns > thread->sent_ns && now_ns - thread->sent_ns >= lo_tick_runnable_ns && g_disk_check &&
            lo_thread_in_disk_wait(thread->tid)) {
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
            lo_store_append(thread->tid, now_ns - lo_tick_period_ns, 0, 0, covered - 1, LO_SAMPLE_WAITING, NULL, 0, 0);
        } else if (covered > 1 && thread->checked) {
            uint64_t filled = used / lo_tick_period_ns;
            thread->missed_ticks = filled < covered - 1 ? filled : covered - 1;
        }
        // Read the clock right before sending: a stack request's handler that starts after this
        // may carry this signal too (lo_threads_answer), and `now_ns` may be long past on a busy machine.
        uint64_t sending_ns = lo_monotonic_ns();
        // A thread that used less than half a tick's CPU since its last check and waits for the disk
        // now (a page fault that reads) answers when the read completes, often within the
        // tick: its answer is counted by the CPU it used, and the rest as waiting for the disk.
        // Only such partly idle ticks cost the read of its state.
        thread->sent_in_disk =
            g_disk_check && thread->checked && used < lo_tick_period_ns / 2 && lo_thread_in_disk_wait(thread->tid);
        uint64_t window = now_ns > thread->base_ns ? now_ns - thread->base_ns : 0;
        thread->partly_idle = thread->checked && used + lo_tick_period_ns / 4 <= window;
        siginfo_t signal;
        memset(&signal, 0, sizeof signal);
        signal.si_signo = SIGPROF;
        signal.si_code = SI_QUEUE;
        signal.si_errno = LO_SAMPLER_SIGNAL_TAG;
        signal.si_pid = pid;
        // How far the thread's CPU time is behind the clock (its CPU clock as this check read it):
        // its handler, which reads both again, learns how long the thread waited since (see
        // handler.c). Had it run since the read, the wait comes out shorter, never longer.
        signal.si_value.sival_ptr = (void *)(uintptr_t)(sending_ns - cpu);
        if (syscall(SYS_rt_tgsigqueueinfo, pid, thread->tid, SIGPROF, &signal) == 0) {
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

// A thread that starts the sampler and waits for its first tick (lo_sampler_leave_out_calling_thread):
// not checked until it is done, so that work is in no sample.
static _Atomic pid_t g_unsampled_tid;

void lo_threads_set_unsampled(pid_t tid) { atomic_store(&g_unsampled_tid, tid); }

void lo_threads_tick(pid_t pid, uint64_t now_ns, uint64_t tick) {
    lo_tick_current = tick;
    g_current_tick_ns = now_ns;
    int listed = 0;
    if (atomic_exchange_explicit(&g_changed, 0, memory_order_relaxed) || now_ns >= g_next_list_ns) {
        lo_list_threads();
        lo_handler_reap_retake_timers(pid);
        g_next_list_ns = now_ns + LO_LIST_INTERVAL_NS;
        listed = 1;
    }
    uint64_t moved = 0;
    size_t idle = 0;
    for (size_t i = 0; i < g_count; i++) {
        lo_thread *thread = &lo_thread_table[i];
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
            if (!lo_thread_table[i].ran_now || lo_thread_cpu_ns_of(lo_thread_table[i].tid, &cpu) != 0) continue;
            skew += cpu > lo_thread_table[i].read_cpu ? cpu - lo_thread_table[i].read_cpu : 0;
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
        lo_thread *thread = &lo_thread_table[i];
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

void lo_threads_end(void) {
    lo_handler_reap_retake_timers(getpid());
    // Idle threads' waits are recorded every LO_IDLE_CHECK_NS: record the ticks since, up to the
    // last tick, at which the group check found them still waiting.
    for (size_t i = 0; i < g_count; i++) {
        lo_thread *thread = &lo_thread_table[i];
        if (thread->gone || !lo_is_idle(thread) || thread->last_tick >= lo_tick_current) continue;
        lo_store_append(thread->tid, g_current_tick_ns, 0, 0, lo_tick_current - thread->last_tick, LO_SAMPLE_WAITING,
                        NULL, 0, 0);
    }
    for (size_t i = 0; i < g_count; i++) {
        if (!lo_thread_table[i].gone) lo_thread_read_name(&lo_thread_table[i]);
        lo_keep_name(&lo_thread_table[i]);
    }
    free(lo_thread_table);
    free(g_index);
    lo_thread_table = NULL;
    g_index = NULL;
    g_count = g_capacity = g_index_size = 0;
    lo_forget_task_fd();
}

void lo_threads_after_fork(void) {
    free(lo_thread_table);
    free(g_index);
    lo_thread_table = NULL;
    g_index = NULL;
    g_count = g_capacity = g_index_size = 0;
    // Opened as /proc/self/task of the parent: the child lists its own.
    lo_forget_task_fd();
    pthread_mutex_init(&g_names_lock, NULL);
    // Another thread may have held the spare blocks' list mid-change: the child starts a new one.
    pthread_mutex_init(&g_spare_starts_lock, NULL);
    g_spare_starts = NULL;
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
