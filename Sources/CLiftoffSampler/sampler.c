// Start, stop, registration, and the sampler thread's loop.

#include "lo_internal.h"

#include <linux/close_range.h>

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#define LO_DEFAULT_CAPACITY 4096u

lo_counters lo_count;


static pthread_mutex_t g_control_lock = PTHREAD_MUTEX_INITIALIZER; // start/stop
static pthread_mutex_t g_wait_lock = PTHREAD_MUTEX_INITIALIZER;    // sampler sleep
static pthread_cond_t g_wait_cond;
static pthread_once_t g_cond_once = PTHREAD_ONCE_INIT;
static int g_running; // guarded by g_control_lock
// A sampler thread that lo_sampler_quiesce left to end by itself (guarded by g_control_lock).
static int g_unjoined;
// Held by the sampler thread through each tick: who holds it knows no tick is under way.
static pthread_mutex_t g_tick_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_keep_sampling;
static pthread_t g_thread;
static uint32_t g_rate_hz;
static int g_all_threads;
static int g_defer_first_tick;
static _Atomic pid_t g_sampler_tid;   // the sampler thread's kernel id while it runs
static _Atomic int g_sampler_looping; // the sampler thread is inside its loop
static _Atomic int g_first_tick_done; // the session's first tick listed and checked every thread
static _Atomic int g_thread_running;  // the session's sampler thread got a core and runs

static void lo_init_cond(void) {
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&g_wait_cond, &attributes);
    pthread_condattr_destroy(&attributes);
}

// Sleeps until `next` (CLOCK_MONOTONIC, ns), or until the session ends and wakes it.
static void lo_sleep_until(uint64_t next) {
    struct timespec deadline = {.tv_sec = (time_t)(next / 1000000000ull), .tv_nsec = (long)(next % 1000000000ull)};
    pthread_mutex_lock(&g_wait_lock);
    while (atomic_load(&g_keep_sampling)) {
        if (pthread_cond_timedwait(&g_wait_cond, &g_wait_lock, &deadline) == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&g_wait_lock);
}

static void *lo_sampler_main(void *unused) {
    (void)unused;
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGPROF);
    // A signal meant for the process (a stop, an interrupt) goes to one of the program's threads,
    // whose handlers expect to run there, never to this one.
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGINT);
    sigaddset(&blocked, SIGHUP);
    sigaddset(&blocked, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &blocked, NULL);
    pthread_setname_np(pthread_self(), "liftoff-sampler");
    // A descriptor table of its own, holding none of the program's. The program's threads close
    // numbers and dup2 over them at any moment (a shell moves its output with close(1), then
    // dup2): a /proc file this thread opened in a shared table could take a number the program
    // then took over with dup2, and this thread's close then closed the program's file (its
    // writes failed with EBADF, 3 % of them in a loop that redirects as a shell does). In its own
    // table its files never meet the program's, and it keeps none of the program's pipes open.
#ifdef SYS_close_range
    lo_threads_set_private_files(syscall(SYS_close_range, 0, ~0U, CLOSE_RANGE_UNSHARE) == 0);
#else
    lo_threads_set_private_files(0);
#endif

    pid_t pid = getpid();
    uint64_t period = 1000000000ull / g_rate_hz;
    atomic_store(&g_sampler_tid, lo_current_tid());
    atomic_store_explicit(&g_thread_running, 1, memory_order_release);
    syscall(SYS_futex, &g_thread_running, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    uint64_t next = lo_monotonic_ns();
    if (g_defer_first_tick) {
        // Nothing until the first tick, a period from now: a process ended by then costs no more.
        next += period;
        lo_sleep_until(next);
        // Under the tick lock, as a tick: a session that ended meanwhile finds nothing begun.
        pthread_mutex_lock(&g_tick_lock);
        int going = atomic_load(&g_keep_sampling);
        if (going) lo_threads_begin(g_all_threads, g_rate_hz, lo_current_tid());
        pthread_mutex_unlock(&g_tick_lock);
        if (!going) {
            atomic_store(&g_sampler_looping, 0);
            return NULL;
        }
    } else {
        lo_threads_begin(g_all_threads, g_rate_hz, lo_current_tid());
    }
    uint64_t tick = 0;
    for (;;) {
        pthread_mutex_lock(&g_tick_lock);
        if (!atomic_load(&g_keep_sampling)) {
            pthread_mutex_unlock(&g_tick_lock);
            break;
        }
        lo_snapshot_refresh();
        // Before the first tick, which a program that links Liftoff waits for (the agent waits
        // only for this thread to run): handlers then find every object's rules indexed.
        lo_snapshot_make_resident();
        lo_ring_drain(lo_threads_answer);
        lo_ring_populate_ahead(64);
        uint64_t now = lo_monotonic_ns();
        lo_threads_tick(pid, now, ++tick);
        if (!atomic_exchange_explicit(&g_first_tick_done, 1, memory_order_release)) {
            syscall(SYS_futex, &g_first_tick_done, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
        }
        lo_unwind_load_if_wanted(lo_threads_have_private_files());
        pthread_mutex_unlock(&g_tick_lock);
        next += period;
        now = lo_monotonic_ns();
        if (next < now) {
            // Fell behind: the missed ticks count as ticks, so waits keep their length. The
            // schedule stays on its grid: the tick now less than a period overdue comes at once,
            // so each late wake-up loses no fraction of a tick (under load they add up: 8 ms of a
            // 150 ms wait when rounded away).
            uint64_t missed = (now - next) / period;
            tick += missed;
            next += missed * period;
        }
        lo_sleep_until(next);
    }
    atomic_store(&g_sampler_looping, 0);
    return NULL;
}

static void lo_reset_counts(void) {
    atomic_store(&lo_count.signals_sent, 0);
    atomic_store(&lo_count.captured, 0);
    atomic_store(&lo_count.dropped, 0);
    atomic_store(&lo_count.failed, 0);
    atomic_store(&lo_count.skipped, 0);
    atomic_store(&lo_count.truncated, 0);
    atomic_store(&lo_count.stored, 0);
    atomic_store(&lo_count.waiting, 0);
    atomic_store(&lo_count.unanswered, 0);
    atomic_store(&lo_count.threads_seen, 0);
    atomic_store(&lo_count.cpu_reads, 0);
    atomic_store(&lo_count.scans, 0);
    atomic_store(&lo_count.walked, 0);
    atomic_store(&lo_count.walk_fallbacks, 0);
    atomic_store(&lo_count.walk_checked, 0);
    atomic_store(&lo_count.walk_mismatches, 0);
    atomic_store(&lo_count.walk_guessed, 0);
    atomic_store(&lo_count.walk_callers_recovered, 0);
    atomic_store(&lo_count.retaken, 0);
    atomic_store(&lo_count.walk_captures, 0);
}

static void lo_sampler_join_thread(void);

lo_status lo_sampler_start(const lo_config *config) {
    uint32_t rate = config ? config->rate_hz : 0;
    uint32_t capacity = (config && config->ring_capacity) ? config->ring_capacity : LO_DEFAULT_CAPACITY;
    if (rate < LO_MIN_RATE_HZ || rate > LO_MAX_RATE_HZ) return LO_ERR_RATE;
    if (capacity < 16 || capacity > (1u << 20) || (capacity & (capacity - 1)) != 0) return LO_ERR_CAPACITY;

    lo_handler_install_once();
    pthread_once(&g_cond_once, lo_init_cond);
    if (!lo_handler_installed()) return LO_ERR_SIGNAL;

    pthread_mutex_lock(&g_control_lock);
    if (g_running) {
        pthread_mutex_unlock(&g_control_lock);
        return LO_OK;
    }
    // A process that went on after quiescing (an exec that failed): the earlier thread ends first.
    if (g_unjoined) lo_sampler_join_thread();
    if (lo_ring_create(capacity) != 0) {
        pthread_mutex_unlock(&g_control_lock);
        return LO_ERR_NO_MEMORY;
    }
    lo_store_reset();
    lo_reset_counts();
    g_rate_hz = rate;
    g_all_threads = config && (config->flags & LO_SAMPLE_ALL_THREADS);
    g_defer_first_tick = config && (config->flags & LO_DEFER_FIRST_TICK);
    lo_threads_set_disk_check(!(config && (config->flags & LO_SKIP_DISK_CHECK)));
    lo_walk_prepare();
    lo_handler_set_verify(config && (config->flags & LO_VERIFY_WALK));
    lo_snapshot_refresh();
    // The Swift task's storage on this thread, and libunwind's global state, before any handler needs them.
    lo_task_storage_touch();
    lo_warm_current_thread();

    atomic_store(&g_keep_sampling, 1);
    atomic_store(&g_sampler_looping, 1);
    atomic_store(&g_first_tick_done, 0);
    atomic_store(&g_thread_running, 0);
    lo_tasks_start();
    lo_handler_set_active(1);
    if (pthread_create(&g_thread, NULL, lo_sampler_main, NULL) != 0) {
        lo_handler_set_active(0);
        lo_tasks_stop();
        atomic_store(&g_keep_sampling, 0);
        lo_ring_destroy();
        lo_snapshot_drop();
        pthread_mutex_unlock(&g_control_lock);
        return LO_ERR_THREAD;
    }
    g_running = 1;
    pthread_mutex_unlock(&g_control_lock);
    return LO_OK;
}

// Wakes the sampler thread, which sees the session ended, and waits for it to end (the control
// lock held).
static void lo_sampler_join_thread(void) {
    pthread_mutex_lock(&g_wait_lock);
    atomic_store(&g_keep_sampling, 0);
    pthread_cond_broadcast(&g_wait_cond);
    pthread_mutex_unlock(&g_wait_lock);
    if (pthread_join(g_thread, NULL) != 0) LO_FAIL("could not join the sampler thread");
    g_unjoined = 0;
}

static void lo_sampler_end_session(void);

// Stops the session: with `joins`, once the sampler thread has ended; without, once the tick under
// way is done (the thread sees the session ended when it next wakes, and ends).
static void lo_sampler_end(int joins) {
    pthread_mutex_lock(&g_control_lock);
    if (!g_running) {
        pthread_mutex_unlock(&g_control_lock);
        return;
    }
    if (joins) {
        lo_sampler_join_thread();
    } else {
        pthread_mutex_lock(&g_tick_lock);
        atomic_store(&g_keep_sampling, 0);
        pthread_mutex_unlock(&g_tick_lock);
        g_unjoined = 1;
    }
    lo_sampler_end_session();
    pthread_mutex_unlock(&g_control_lock);
}

void lo_sampler_stop(void) { lo_sampler_end(1); }

void lo_sampler_quiesce(void) { lo_sampler_end(0); }

// After the sampler thread ended or quiesced (the control lock held).
static void lo_sampler_end_session(void) {
    // No new signals are sent now; stop capturing and wait for handlers in flight.
    lo_handler_set_active(0);
    lo_tasks_stop();
    lo_readers_wait_idle();
    lo_ring_drain(lo_threads_answer);
    lo_threads_end();
    lo_ring_destroy();
    lo_snapshot_drop();
    g_running = 0;
}

// Waits until `flag` is set by the sampler thread, which wakes its waiters.
static int lo_sampler_await(_Atomic int *flag, uint64_t timeout_ns) {
    uint64_t deadline = lo_monotonic_ns() + timeout_ns;
    while (!atomic_load_explicit(flag, memory_order_acquire)) {
        uint64_t now = lo_monotonic_ns();
        if (!atomic_load(&g_keep_sampling) || now >= deadline) return 0;
        // Woken by the first tick; a millisecond at most, to see a session that stopped.
        uint64_t wait = deadline - now < 1000000ull ? deadline - now : 1000000ull;
        struct timespec pause = {0, (long)wait};
        syscall(SYS_futex, flag, FUTEX_WAIT_PRIVATE, 0, &pause, NULL, 0);
    }
    return 1;
}

int lo_sampler_await_first_tick(uint64_t timeout_ns) { return lo_sampler_await(&g_first_tick_done, timeout_ns); }

int lo_sampler_await_running(uint64_t timeout_ns) { return lo_sampler_await(&g_thread_running, timeout_ns); }

void lo_sampler_leave_out_calling_thread(int left_out) { lo_threads_set_unsampled(left_out ? lo_current_tid() : 0); }

void lo_sampler_halt(void) {
    // No lock, no join, no condition variable: only atomics, a clock and nanosleep.
    atomic_store(&g_keep_sampling, 0);
    lo_handler_set_active(0);
    lo_tasks_halt();
    if (atomic_load(&g_sampler_tid) == lo_current_tid()) return; // the sampler thread itself
    // The sampler thread wakes at its next tick at the latest; at low rates, do not wait for it long.
    uint64_t deadline = lo_monotonic_ns() + 50000000ull;
    while (atomic_load(&g_sampler_looping) && lo_monotonic_ns() < deadline) {
        struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL);
    }
}

static int lo_sampler_thread_gone(void) {
    pid_t tid = atomic_load(&g_sampler_tid);
    if (tid == 0 || tid == lo_current_tid()) return 1;
    return syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;
}

// A thread waiting inside the sampler's handler has SIGPROF blocked, and a crash handler that
// suspends threads with it (Swift's backtracer) could not reach it: futex waits are woken, other
// waits end when they would have, and none is resumed from now on. The sampler thread ends too, so
// a crash handler lists only the program's threads.
void lo_sampler_release_waits(uint64_t bound_ns) {
    lo_handler_stop_resuming();
    uint64_t deadline = lo_monotonic_ns() + bound_ns;
    while ((lo_handler_wake_resumed() > 0 || !lo_sampler_thread_gone()) && lo_monotonic_ns() < deadline) {
        struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL);
    }
}

void lo_sampler_reset_after_fork(void) {
    // Only the thread that called fork exists here: the sampler thread, and any lock another
    // thread held, are gone. Everything starts over, without waiting for anyone.
    lo_clock_after_fork();
    pthread_mutex_init(&g_control_lock, NULL);
    pthread_mutex_init(&g_wait_lock, NULL);
    pthread_mutex_init(&g_tick_lock, NULL);
    g_unjoined = 0;
    lo_init_cond();
    g_running = 0;
    atomic_store(&g_keep_sampling, 0);
    atomic_store(&g_sampler_looping, 0);
    atomic_store(&g_sampler_tid, 0);
    lo_handler_after_fork();
    lo_tasks_after_fork();
    lo_threads_after_fork();
    lo_snapshot_after_fork();
    lo_ring_destroy();
    lo_store_reset();
    lo_registry_after_fork();
}

int lo_sampler_is_running(void) {
    pthread_mutex_lock(&g_control_lock);
    int running = g_running;
    pthread_mutex_unlock(&g_control_lock);
    return running;
}

int lo_sampler_begin_request(void) {
    pthread_mutex_lock(&g_control_lock);
    int own_snapshot = !g_running;
    if (own_snapshot) {
        lo_walk_prepare();
        lo_snapshot_refresh();
    }
    pthread_mutex_unlock(&g_control_lock);
    return own_snapshot;
}

void lo_sampler_end_request(int own_snapshot) {
    if (!own_snapshot) return;
    pthread_mutex_lock(&g_control_lock);
    if (!g_running) {
        lo_readers_wait_idle();
        lo_snapshot_drop();
    }
    pthread_mutex_unlock(&g_control_lock);
}

// Warms libunwind once per thread: a pool thread registered for every task it runs warms up
// only once, so it does not hold up other threads' samples each time.
static __thread int t_warmed __attribute__((tls_model("initial-exec")));

lo_status lo_sampler_register_current_thread(void) {
    lo_handler_install_once();
    if (!lo_handler_installed()) return LO_ERR_SIGNAL;
    pid_t tid = lo_current_tid();
    lo_task_storage_touch();
    if (!t_warmed) {
        lo_warm_current_thread();
        t_warmed = 1;
    }
    lo_registration stamp = {lo_monotonic_ns(), lo_thread_cpu_ns()};
    lo_status status = lo_registry_register(tid, stamp);
    lo_threads_changed();
    return status;
}

lo_status lo_sampler_unregister_current_thread(void) { return lo_sampler_unregister_thread(lo_current_tid()); }

lo_status lo_sampler_unregister_thread(pid_t tid) {
    if (!lo_registry_unregister(tid)) return LO_ERR_NOT_REGISTERED;
    lo_threads_changed();
    return LO_OK;
}

lo_status lo_sampler_exclude_thread(pid_t tid) {
    lo_status status = lo_registry_exclude(tid);
    lo_threads_changed();
    return status;
}

lo_status lo_sampler_include_thread(pid_t tid) {
    if (!lo_registry_include(tid)) return LO_ERR_NOT_REGISTERED;
    lo_threads_changed();
    return LO_OK;
}

int lo_sampler_registered_count(void) { return lo_registry_registered_count(); }

lo_counts lo_sampler_counts(void) {
    lo_counts counts = {
        .signals_sent = atomic_load(&lo_count.signals_sent),
        .captured = atomic_load(&lo_count.captured),
        .dropped = atomic_load(&lo_count.dropped),
        .failed = atomic_load(&lo_count.failed),
        .skipped = atomic_load(&lo_count.skipped),
        .truncated = atomic_load(&lo_count.truncated),
        .stored = atomic_load(&lo_count.stored),
        .waiting = atomic_load(&lo_count.waiting),
        .unanswered = atomic_load(&lo_count.unanswered),
        .threads_seen = atomic_load(&lo_count.threads_seen),
        .cpu_reads = atomic_load(&lo_count.cpu_reads),
        .scans = atomic_load(&lo_count.scans),
        .walked = atomic_load(&lo_count.walked),
        .walk_fallbacks = atomic_load(&lo_count.walk_fallbacks),
        .walk_checked = atomic_load(&lo_count.walk_checked),
        .walk_mismatches = atomic_load(&lo_count.walk_mismatches),
        .walk_guessed = atomic_load(&lo_count.walk_guessed),
        .walk_callers_recovered = atomic_load(&lo_count.walk_callers_recovered),
        .walk_captures = atomic_load(&lo_count.walk_captures),
        .retaken = atomic_load(&lo_count.retaken),
    };
    return counts;
}

const uint64_t *lo_sampler_store(size_t *word_count) { return lo_store_words(word_count); }

void lo_sampler_clear_store(void) {
    pthread_mutex_lock(&g_control_lock);
    if (!g_running) lo_store_reset();
    pthread_mutex_unlock(&g_control_lock);
}

size_t lo_sampler_resident_bytes(void) {
    pthread_mutex_lock(&g_control_lock);
    size_t bytes = lo_ring_bytes() + lo_store_bytes() + lo_snapshot_bytes();
    pthread_mutex_unlock(&g_control_lock);
    return bytes;
}

uint32_t lo_sampler_rate_hz(void) { return g_rate_hz; }

// Whether a session samples now, without the control lock (a crash handler calls it).
static int lo_sampler_is_sampling(void) { return atomic_load(&g_keep_sampling) != 0; }

static const lo_sampler_source g_this_source = {
    .size = sizeof(lo_sampler_source),
    .is_running = lo_sampler_is_sampling,
    .halt = lo_sampler_halt,
    .rate_hz = lo_sampler_rate_hz,
    .counts = lo_sampler_counts,
    .store = lo_sampler_store,
    .task_events = lo_task_events,
    .task_events_from = lo_task_events_from,
    .thread_name = lo_sampler_thread_name,
    .chained_signals = lo_sampler_chained_signals,
};

const lo_sampler_source *lo_sampler_this_source(void) { return &g_this_source; }

// A section that says a program links this sampler, so that `liftoff record` can tell, from its
// executable alone, that it records itself (section headers survive `strip`).
__attribute__((used, retain, section("liftoff_sampler"))) static const char lo_linked_marker[] = "Liftoff sampler";
