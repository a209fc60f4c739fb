#include "lo_sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <libunwind.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

// Writes a message with write(2) and aborts: usable anywhere, signal handlers included.
#define LO_FAIL(message)                                                                  \
    do {                                                                                  \
        static const char lo_fail_text[] = "liftoff sampler: " message "\n";             \
        ssize_t lo_fail_ignored = write(2, lo_fail_text, sizeof lo_fail_text - 1);        \
        (void)lo_fail_ignored;                                                            \
        abort();                                                                          \
    } while (0)

// Frames the handler may see above the interrupted one (handler, trampoline, and
// any libunwind frames) before it finds the interrupted program counter.
#define LO_SKIP_SEARCH 8
#define LO_DEFAULT_CAPACITY 4096u

typedef struct lo_slot {
    _Atomic uint64_t seq;
    uint64_t time_ns;
    int32_t tid;
    uint16_t depth;
    uint16_t flags;
    uintptr_t frames[LO_MAX_FRAMES];
} lo_slot;

_Static_assert(sizeof(uintptr_t) == 8, "Liftoff's sampler supports 64-bit targets only");

// ---- process-wide facts -------------------------------------------------------------

static pid_t g_main_tid;
static uint64_t g_premain_ns;
static __thread pid_t t_tid __attribute__((tls_model("initial-exec")));
static __thread int t_warming __attribute__((tls_model("initial-exec")));
static __thread int t_sampling __attribute__((tls_model("initial-exec")));
static __thread int t_warmed __attribute__((tls_model("initial-exec")));

static uint64_t lo_now(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t lo_monotonic_ns(void) { return lo_now(CLOCK_MONOTONIC); }
uint64_t lo_thread_cpu_ns(void) { return lo_now(CLOCK_THREAD_CPUTIME_ID); }

pid_t lo_current_tid(void) {
    pid_t tid = t_tid;
    if (tid == 0) {
        tid = (pid_t)syscall(SYS_gettid);
        t_tid = tid;
    }
    return tid;
}

__attribute__((constructor)) static void lo_load(void) {
    g_premain_ns = lo_monotonic_ns();
    g_main_tid = lo_current_tid();
}

pid_t lo_main_tid(void) { return g_main_tid; }
int lo_is_main_thread(void) { return lo_current_tid() == g_main_tid; }
uint64_t lo_premain_ns(void) { return g_premain_ns; }

// ---- session state --------------------------------------------------------------------

static pthread_mutex_t g_control_lock = PTHREAD_MUTEX_INITIALIZER;  // start/stop
static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER; // thread list
static pthread_mutex_t g_wait_lock = PTHREAD_MUTEX_INITIALIZER;     // sampler sleep
static pthread_cond_t g_wait_cond;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_handler_installed;

static pid_t g_threads[LO_MAX_THREADS];
static int g_thread_count;

static lo_slot *g_ring;
static size_t g_ring_bytes;
static uint32_t g_mask;
static _Atomic uint64_t g_head;
static uint64_t g_tail;

static _Atomic int g_active;     // handlers capture only while set
static _Atomic int g_in_handler; // handlers running now
static int g_running;            // guarded by g_control_lock
static _Atomic int g_keep_sampling;
static pthread_t g_thread;
static uint64_t g_period_ns;

// Unwinds outside handlers exclude unwinds in handlers. An unwind outside a handler (thread
// registration, `lo_capture_current_stack`) goes through the C library's dl_iterate_phdr and
// so takes libunwind's lock and then the loader's. A thread interrupted while holding the
// loader's lock (inside dlopen or dlclose) would wait in its handler for libunwind's lock: a
// deadlock. So while such an unwind runs, handlers do not enter libunwind: one that cannot
// enter within LO_UNWIND_WAIT_NS gives up and counts the sample as skipped, and the
// interrupted thread resumes and releases what it holds. Handlers among themselves run
// concurrently: they never take the loader's lock (see the loader snapshot).
static _Atomic int g_handler_unwinds;  // handlers inside libunwind now
static _Atomic int g_exclusive_unwind; // an unwind outside a handler runs or waits
#define LO_UNWIND_WAIT_NS 1000000ull

static int lo_unwind_enter_bounded(void) {
    uint64_t deadline = 0;
    for (;;) {
        atomic_fetch_add(&g_handler_unwinds, 1);
        if (!atomic_load(&g_exclusive_unwind)) return 1;
        atomic_fetch_sub(&g_handler_unwinds, 1);
        uint64_t now = lo_monotonic_ns();
        if (deadline == 0) deadline = now + LO_UNWIND_WAIT_NS;
        else if (now > deadline) return 0;
    }
}

static void lo_unwind_exit(void) { atomic_fetch_sub(&g_handler_unwinds, 1); }

// Outside signal handlers: block SIGPROF on this thread (so its own handler cannot wait on
// it), claim the exclusive unwind, and wait until no handler is inside libunwind.
static void lo_unwind_enter_blocking(sigset_t *saved) {
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &blocked, saved);
    for (;;) {
        int expected = 0;
        if (atomic_compare_exchange_weak(&g_exclusive_unwind, &expected, 1)) break;
        sched_yield();
    }
    while (atomic_load(&g_handler_unwinds) != 0) sched_yield();
}

static void lo_unwind_exit_blocking(const sigset_t *saved) {
    atomic_store(&g_exclusive_unwind, 0);
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}

static _Atomic uint64_t g_signals_sent, g_captured, g_dropped, g_failed, g_skipped, g_truncated, g_stored;

static uint64_t *g_store;
static size_t g_store_words, g_store_capacity;

// ---- the loader snapshot ---------------------------------------------------------------
//
// libunwind finds unwind tables with dl_iterate_phdr, which takes the loader's lock. A thread
// interrupted inside dlopen or dlclose may hold that lock, or be half-way through taking it,
// and its handler would then wait for itself forever. So Liftoff defines dl_iterate_phdr in
// the program: outside a sampling handler it forwards to the C library; inside one it walks
// a snapshot of the loaded objects, with their program headers copied, that the sampler
// thread refreshes whenever the loader's add/remove counters change. The handler never
// takes the loader's lock.

typedef int (*lo_phdr_callback)(struct dl_phdr_info *, size_t, void *);
typedef int (*lo_iterate_function)(lo_phdr_callback, void *);

typedef struct lo_snapshot {
    struct lo_snapshot *retired_next;
    unsigned long long adds, subs;
    size_t count, bytes;
    struct dl_phdr_info *infos;
} lo_snapshot;

static lo_iterate_function g_real_iterate;
static _Atomic(lo_snapshot *) g_snapshot;
static lo_snapshot *g_retired;
static size_t g_snapshot_bytes;

static lo_iterate_function lo_real_iterate(void) {
    if (g_real_iterate == NULL) {
        g_real_iterate = (lo_iterate_function)dlsym(RTLD_NEXT, "dl_iterate_phdr");
        if (g_real_iterate == NULL) LO_FAIL("dl_iterate_phdr not found in the C library");
    }
    return g_real_iterate;
}

int dl_iterate_phdr(lo_phdr_callback callback, void *data) {
    if (t_sampling) {
        lo_snapshot *snapshot = atomic_load(&g_snapshot);
        if (snapshot == NULL) return 0;
        int result = 0;
        for (size_t i = 0; i < snapshot->count; i++) {
            result = callback(&snapshot->infos[i], sizeof(struct dl_phdr_info), data);
            if (result != 0) break;
        }
        return result;
    }
    return lo_real_iterate()(callback, data);
}

typedef struct lo_count_state {
    size_t objects, headers;
    unsigned long long adds, subs;
} lo_count_state;

static int lo_count_objects(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    lo_count_state *state = data;
    state->objects++;
    state->headers += info->dlpi_phnum;
    state->adds = info->dlpi_adds;
    state->subs = info->dlpi_subs;
    return 0;
}

static int lo_read_counters(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    lo_count_state *state = data;
    state->adds = info->dlpi_adds;
    state->subs = info->dlpi_subs;
    return 1;
}

typedef struct lo_fill_state {
    lo_snapshot *snapshot;
    ElfW(Phdr) *headers;
    size_t header_capacity, headers_used, object_capacity;
} lo_fill_state;

static int lo_fill_objects(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    lo_fill_state *state = data;
    lo_snapshot *snapshot = state->snapshot;
    if (snapshot->count == state->object_capacity) return 1;
    if (state->headers_used + info->dlpi_phnum > state->header_capacity) return 1;
    ElfW(Phdr) *copy = state->headers + state->headers_used;
    memcpy(copy, info->dlpi_phdr, info->dlpi_phnum * sizeof(ElfW(Phdr)));
    state->headers_used += info->dlpi_phnum;
    struct dl_phdr_info *out = &snapshot->infos[snapshot->count++];
    memset(out, 0, sizeof *out);
    out->dlpi_addr = info->dlpi_addr;
    out->dlpi_name = "";
    out->dlpi_phdr = copy;
    out->dlpi_phnum = info->dlpi_phnum;
    out->dlpi_adds = info->dlpi_adds;
    out->dlpi_subs = info->dlpi_subs;
    return 0;
}

// Frees retired snapshots once no handler can still be reading one.
static void lo_reclaim_snapshots(int force) {
    if (!force && atomic_load(&g_in_handler) != 0) return;
    while (g_retired != NULL) {
        lo_snapshot *next = g_retired->retired_next;
        g_snapshot_bytes -= g_retired->bytes;
        free(g_retired);
        g_retired = next;
    }
}

// Sampler thread (or start/stop) only.
static void lo_refresh_snapshot(void) {
    lo_snapshot *current = atomic_load(&g_snapshot);
    if (current != NULL) {
        lo_count_state counters = {0};
        lo_real_iterate()(lo_read_counters, &counters);
        if (counters.adds == current->adds && counters.subs == current->subs) {
            lo_reclaim_snapshots(0);
            return;
        }
    }
    lo_count_state counts = {0};
    lo_real_iterate()(lo_count_objects, &counts);
    size_t objects = counts.objects + 8, headers = counts.headers + 64;
    size_t bytes = sizeof(lo_snapshot) + objects * sizeof(struct dl_phdr_info) + headers * sizeof(ElfW(Phdr));
    lo_snapshot *snapshot = calloc(1, bytes);
    if (snapshot == NULL) return;
    snapshot->bytes = bytes;
    snapshot->infos = (struct dl_phdr_info *)(snapshot + 1);
    lo_fill_state fill = {snapshot, (ElfW(Phdr) *)(snapshot->infos + objects), headers, 0, objects};
    lo_real_iterate()(lo_fill_objects, &fill);
    // The counters of the last object seen are the loader's counters for this walk.
    snapshot->adds = snapshot->count ? snapshot->infos[snapshot->count - 1].dlpi_adds : 0;
    snapshot->subs = snapshot->count ? snapshot->infos[snapshot->count - 1].dlpi_subs : 0;
    g_snapshot_bytes += bytes;
    lo_snapshot *old = atomic_exchange(&g_snapshot, snapshot);
    if (old != NULL) {
        old->retired_next = g_retired;
        g_retired = old;
    }
    lo_reclaim_snapshots(0);
}

// After sampling stopped and no handler runs: drop every snapshot.
static void lo_drop_snapshots(void) {
    lo_snapshot *current = atomic_exchange(&g_snapshot, NULL);
    if (current != NULL) {
        current->retired_next = g_retired;
        g_retired = current;
    }
    lo_reclaim_snapshots(1);
}

// ---- stack requests from other threads ------------------------------------------------

static pthread_mutex_t g_request_lock = PTHREAD_MUTEX_INITIALIZER;
// Each request has a sequence number; a handler answers into the buffer of the request it saw
// and marks that number done, so a late answer to an abandoned request can never be taken for
// the answer to the next one.
static _Atomic pid_t g_request_tid;
static _Atomic uint64_t g_request_seq;
static _Atomic uint64_t g_request_done;
static int g_request_count[2];
static uintptr_t g_request_frames[2][LO_MAX_FRAMES];

// ---- the signal path ----------------------------------------------------------------

static uintptr_t lo_interrupted_pc(void *context) {
    ucontext_t *uc = (ucontext_t *)context;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
#error "Liftoff's sampler supports x86_64 and aarch64"
#endif
}

static void lo_publish(int32_t tid, uint64_t time_ns, void **frames, int depth, uint16_t flags) {
    uint64_t pos = atomic_load_explicit(&g_head, memory_order_relaxed);
    for (;;) {
        lo_slot *slot = &g_ring[pos & g_mask];
        uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
        int64_t lag = (int64_t)(seq - pos);
        if (lag == 0) {
            if (atomic_compare_exchange_weak_explicit(&g_head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                slot->time_ns = time_ns;
                slot->tid = tid;
                slot->depth = (uint16_t)depth;
                slot->flags = flags;
                memcpy(slot->frames, frames, (size_t)depth * sizeof(uintptr_t));
                atomic_store_explicit(&slot->seq, pos + 1, memory_order_release);
                atomic_fetch_add_explicit(&g_captured, 1, memory_order_relaxed);
                if (flags & LO_SAMPLE_TRUNCATED) {
                    atomic_fetch_add_explicit(&g_truncated, 1, memory_order_relaxed);
                }
                return;
            }
        } else if (lag < 0) {
            atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
            return;
        } else {
            pos = atomic_load_explicit(&g_head, memory_order_relaxed);
        }
    }
}

// Index of the interrupted frame among the first frames of a handler's backtrace (the frames
// before it are the handler's own and the signal trampoline), or -1.
static int lo_interrupted_frame(void *const *frames, int count, void *context) {
    uintptr_t pc = lo_interrupted_pc(context);
    for (int i = 0; i < count && i < LO_SKIP_SEARCH; i++) {
        if ((uintptr_t)frames[i] == pc) return i;
    }
    return -1;
}

static void lo_handler(int signal_number, siginfo_t *info, void *context) {
    (void)signal_number;
    (void)info;
    int saved_errno = errno;
    uint64_t time_ns = lo_monotonic_ns();
    atomic_fetch_add(&g_in_handler, 1);
    uint64_t request = atomic_load(&g_request_seq);
    if (!t_warming && atomic_load(&g_request_tid) == lo_current_tid() && atomic_load(&g_request_done) != request) {
        void *frames[LO_SKIP_SEARCH + LO_MAX_FRAMES + 1];
        int count = 0;
        if (lo_unwind_enter_bounded()) {
            t_sampling = 1;
            count = unw_backtrace(frames, (int)(sizeof frames / sizeof frames[0]));
            t_sampling = 0;
            lo_unwind_exit();
        }
        int start = lo_interrupted_frame(frames, count, context);
        int depth = start < 0 ? 0 : count - start;
        if (depth > LO_MAX_FRAMES) depth = LO_MAX_FRAMES;
        int slot = (int)(request & 1);
        for (int i = 0; i < depth; i++) g_request_frames[slot][i] = (uintptr_t)frames[start + i];
        g_request_count[slot] = depth;
        atomic_store(&g_request_done, request);
        atomic_fetch_sub(&g_in_handler, 1);
        errno = saved_errno;
        return;
    }
    int wanted = t_warming || atomic_load(&g_active);
    if (wanted && !lo_unwind_enter_bounded()) {
        if (!t_warming) atomic_fetch_add_explicit(&g_skipped, 1, memory_order_relaxed);
    } else if (wanted) {
        void *frames[LO_SKIP_SEARCH + LO_MAX_FRAMES + 1];
        // The warm-up signal interrupts Liftoff's own registration code, which holds no
        // loader lock; real samples use the snapshot.
        t_sampling = !t_warming;
        int count = unw_backtrace(frames, (int)(sizeof frames / sizeof frames[0]));
        t_sampling = 0;
        lo_unwind_exit();
        if (!t_warming) {
            int start = lo_interrupted_frame(frames, count, context);
            if (start < 0 || count - start <= 0) {
                atomic_fetch_add_explicit(&g_failed, 1, memory_order_relaxed);
            } else {
                int depth = count - start;
                uint16_t flags = 0;
                if (depth > LO_MAX_FRAMES || count == (int)(sizeof frames / sizeof frames[0])) {
                    flags |= LO_SAMPLE_TRUNCATED;
                    if (depth > LO_MAX_FRAMES) depth = LO_MAX_FRAMES;
                }
                lo_publish(lo_current_tid(), time_ns, frames + start, depth, flags);
            }
        }
    }
    atomic_fetch_sub(&g_in_handler, 1);
    errno = saved_errno;
}

// The handler stays installed for the life of the process: a SIGPROF still in flight
// after `stop` must meet a handler, since the default action would end the process.
static void lo_install_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = lo_handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGPROF, &action, NULL) == 0) g_handler_installed = 1;

    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&g_wait_cond, &attributes);
    pthread_condattr_destroy(&attributes);
}

// ---- the consumer side (sampler thread, or `stop` after it joined) -----------------

static void lo_store_append(const lo_slot *slot) {
    size_t needed = g_store_words + LO_SAMPLE_HEADER_WORDS + slot->depth;
    if (needed > g_store_capacity) {
        size_t capacity = g_store_capacity ? g_store_capacity : 1u << 16;
        while (capacity < needed) capacity *= 2;
        uint64_t *grown = realloc(g_store, capacity * sizeof(uint64_t));
        if (grown == NULL) {
            atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
            return;
        }
        g_store = grown;
        g_store_capacity = capacity;
    }
    uint64_t *out = g_store + g_store_words;
    out[0] = (uint64_t)(uint32_t)slot->tid | ((uint64_t)slot->depth << 32) | ((uint64_t)slot->flags << 48);
    out[1] = slot->time_ns;
    memcpy(out + LO_SAMPLE_HEADER_WORDS, slot->frames, (size_t)slot->depth * sizeof(uint64_t));
    g_store_words = needed;
    atomic_fetch_add_explicit(&g_stored, 1, memory_order_relaxed);
}

static void lo_drain(void) {
    for (;;) {
        lo_slot *slot = &g_ring[g_tail & g_mask];
        uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
        if (seq != g_tail + 1) return;
        lo_store_append(slot);
        atomic_store_explicit(&slot->seq, g_tail + (uint64_t)g_mask + 1, memory_order_release);
        g_tail++;
    }
}

static void lo_signal_registered_threads(pid_t pid) {
    pthread_mutex_lock(&g_registry_lock);
    for (int i = 0; i < g_thread_count;) {
        if (syscall(SYS_tgkill, pid, g_threads[i], SIGPROF) == 0) {
            atomic_fetch_add_explicit(&g_signals_sent, 1, memory_order_relaxed);
            i++;
        } else if (errno == ESRCH) {
            // The thread ended without unregistering: forget it.
            g_threads[i] = g_threads[--g_thread_count];
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&g_registry_lock);
}

static void *lo_sampler_main(void *unused) {
    (void)unused;
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &blocked, NULL);
    pthread_setname_np(pthread_self(), "liftoff-sampler");

    pid_t pid = getpid();
    uint64_t next = lo_monotonic_ns();
    while (atomic_load(&g_keep_sampling)) {
        lo_refresh_snapshot();
        lo_signal_registered_threads(pid);
        lo_drain();
        next += g_period_ns;
        uint64_t now = lo_monotonic_ns();
        if (next < now) next = now; // fell behind: skip the missed ticks
        struct timespec deadline = {.tv_sec = (time_t)(next / 1000000000ull),
                                     .tv_nsec = (long)(next % 1000000000ull)};
        pthread_mutex_lock(&g_wait_lock);
        while (atomic_load(&g_keep_sampling)) {
            if (pthread_cond_timedwait(&g_wait_cond, &g_wait_lock, &deadline) == ETIMEDOUT) break;
        }
        pthread_mutex_unlock(&g_wait_lock);
    }
    return NULL;
}

// ---- control ----------------------------------------------------------------------------

static void lo_reset_counts(void) {
    atomic_store(&g_signals_sent, 0);
    atomic_store(&g_captured, 0);
    atomic_store(&g_dropped, 0);
    atomic_store(&g_failed, 0);
    atomic_store(&g_skipped, 0);
    atomic_store(&g_truncated, 0);
    atomic_store(&g_stored, 0);
}

static void lo_free_ring(void) {
    if (g_ring != NULL) {
        munmap(g_ring, g_ring_bytes);
        g_ring = NULL;
        g_ring_bytes = 0;
    }
}

lo_status lo_sampler_start(const lo_config *config) {
    uint32_t rate = config ? config->rate_hz : 0;
    uint32_t capacity = (config && config->ring_capacity) ? config->ring_capacity : LO_DEFAULT_CAPACITY;
    if (rate < LO_MIN_RATE_HZ || rate > LO_MAX_RATE_HZ) return LO_ERR_RATE;
    if (capacity < 16 || capacity > (1u << 20) || (capacity & (capacity - 1)) != 0) return LO_ERR_CAPACITY;

    pthread_once(&g_once, lo_install_handler);
    if (!g_handler_installed) return LO_ERR_SIGNAL;

    pthread_mutex_lock(&g_control_lock);
    if (g_running) {
        pthread_mutex_unlock(&g_control_lock);
        return LO_OK;
    }
    size_t bytes = (size_t)capacity * sizeof(lo_slot);
    void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ring == MAP_FAILED) {
        pthread_mutex_unlock(&g_control_lock);
        return LO_ERR_NO_MEMORY;
    }
    g_ring = ring;
    g_ring_bytes = bytes;
    g_mask = capacity - 1;
    for (uint32_t i = 0; i < capacity; i++) atomic_init(&g_ring[i].seq, i);
    atomic_store(&g_head, 0);
    g_tail = 0;
    free(g_store);
    g_store = NULL;
    g_store_words = g_store_capacity = 0;
    lo_reset_counts();
    g_period_ns = 1000000000ull / rate;
    lo_refresh_snapshot();

    atomic_store(&g_keep_sampling, 1);
    atomic_store(&g_active, 1);
    if (pthread_create(&g_thread, NULL, lo_sampler_main, NULL) != 0) {
        atomic_store(&g_active, 0);
        atomic_store(&g_keep_sampling, 0);
        lo_free_ring();
        lo_drop_snapshots();
        pthread_mutex_unlock(&g_control_lock);
        return LO_ERR_THREAD;
    }
    g_running = 1;
    pthread_mutex_unlock(&g_control_lock);
    return LO_OK;
}

void lo_sampler_stop(void) {
    pthread_mutex_lock(&g_control_lock);
    if (!g_running) {
        pthread_mutex_unlock(&g_control_lock);
        return;
    }
    pthread_mutex_lock(&g_wait_lock);
    atomic_store(&g_keep_sampling, 0);
    pthread_cond_broadcast(&g_wait_cond);
    pthread_mutex_unlock(&g_wait_lock);
    if (pthread_join(g_thread, NULL) != 0) LO_FAIL("could not join the sampler thread");

    // No new signals are sent now; stop capturing and wait for handlers in flight.
    atomic_store(&g_active, 0);
    while (atomic_load(&g_in_handler) != 0) sched_yield();
    lo_drain();
    lo_free_ring();
    lo_drop_snapshots();
    g_running = 0;
    pthread_mutex_unlock(&g_control_lock);
}

int lo_sampler_is_running(void) {
    pthread_mutex_lock(&g_control_lock);
    int running = g_running;
    pthread_mutex_unlock(&g_control_lock);
    return running;
}

lo_status lo_sampler_register_current_thread(void) {
    pthread_once(&g_once, lo_install_handler);
    if (!g_handler_installed) return LO_ERR_SIGNAL;
    pid_t tid = lo_current_tid();

    // Warm libunwind on this thread (its per-thread cache and the signal-frame path)
    // before any sample is taken, so the handler does not set them up mid-sample.
    // Once per thread: a pool thread registered for every task it runs warms up only once,
    // so it does not hold up other threads' samples each time.
    if (!t_warmed) {
        void *frames[LO_SKIP_SEARCH + LO_MAX_FRAMES + 1];
        sigset_t saved;
        lo_unwind_enter_blocking(&saved);
        (void)unw_backtrace(frames, (int)(sizeof frames / sizeof frames[0]));
        lo_unwind_exit_blocking(&saved);
        t_warming = 1;
        syscall(SYS_tgkill, getpid(), tid, SIGPROF);
        t_warming = 0;
        t_warmed = 1;
    }

    pthread_mutex_lock(&g_registry_lock);
    for (int i = 0; i < g_thread_count; i++) {
        if (g_threads[i] == tid) {
            pthread_mutex_unlock(&g_registry_lock);
            return LO_OK;
        }
    }
    if (g_thread_count == LO_MAX_THREADS) {
        pthread_mutex_unlock(&g_registry_lock);
        return LO_ERR_TOO_MANY_THREADS;
    }
    g_threads[g_thread_count++] = tid;
    pthread_mutex_unlock(&g_registry_lock);
    return LO_OK;
}

lo_status lo_sampler_unregister_current_thread(void) { return lo_sampler_unregister_thread(lo_current_tid()); }

lo_status lo_sampler_unregister_thread(pid_t tid) {
    pthread_mutex_lock(&g_registry_lock);
    for (int i = 0; i < g_thread_count; i++) {
        if (g_threads[i] == tid) {
            g_threads[i] = g_threads[--g_thread_count];
            pthread_mutex_unlock(&g_registry_lock);
            return LO_OK;
        }
    }
    pthread_mutex_unlock(&g_registry_lock);
    return LO_ERR_NOT_REGISTERED;
}

int lo_sampler_registered_count(void) {
    pthread_mutex_lock(&g_registry_lock);
    int count = g_thread_count;
    pthread_mutex_unlock(&g_registry_lock);
    return count;
}

lo_counts lo_sampler_counts(void) {
    lo_counts counts = {
        .signals_sent = atomic_load(&g_signals_sent),
        .captured = atomic_load(&g_captured),
        .dropped = atomic_load(&g_dropped),
        .failed = atomic_load(&g_failed),
        .skipped = atomic_load(&g_skipped),
        .truncated = atomic_load(&g_truncated),
        .stored = atomic_load(&g_stored),
    };
    return counts;
}

const uint64_t *lo_sampler_store(size_t *word_count) {
    if (word_count) *word_count = g_store_words;
    return g_store;
}

void lo_sampler_clear_store(void) {
    pthread_mutex_lock(&g_control_lock);
    if (!g_running) {
        free(g_store);
        g_store = NULL;
        g_store_words = g_store_capacity = 0;
    }
    pthread_mutex_unlock(&g_control_lock);
}

size_t lo_sampler_resident_bytes(void) {
    pthread_mutex_lock(&g_control_lock);
    size_t bytes = g_ring_bytes + g_store_capacity * sizeof(uint64_t) + g_snapshot_bytes;
    pthread_mutex_unlock(&g_control_lock);
    return bytes;
}

int lo_capture_thread_stack(pid_t tid, uintptr_t *buffer, int capacity, int timeout_ms) {
    if (buffer == NULL || capacity <= 0) return 0;
    pthread_once(&g_once, lo_install_handler);
    pthread_mutex_lock(&g_request_lock);
    // Without a running session, build a loader snapshot for the handler to walk.
    pthread_mutex_lock(&g_control_lock);
    int own_snapshot = !g_running;
    if (own_snapshot) lo_refresh_snapshot();
    pthread_mutex_unlock(&g_control_lock);

    uint64_t request = atomic_fetch_add(&g_request_seq, 1) + 1;
    atomic_store(&g_request_tid, tid);
    int result = -1;
    if (syscall(SYS_tgkill, getpid(), tid, SIGPROF) == 0) {
        uint64_t deadline = lo_monotonic_ns() + (uint64_t)timeout_ms * 1000000ull;
        while (atomic_load(&g_request_done) != request && lo_monotonic_ns() < deadline) {
            struct timespec pause = {0, 100000};
            nanosleep(&pause, NULL);
        }
        if (atomic_load(&g_request_done) == request) {
            int slot = (int)(request & 1);
            result = g_request_count[slot] < capacity ? g_request_count[slot] : capacity;
            memcpy(buffer, g_request_frames[slot], (size_t)result * sizeof(uintptr_t));
        }
    }
    atomic_store(&g_request_tid, 0);
    if (own_snapshot) {
        pthread_mutex_lock(&g_control_lock);
        if (!g_running) {
            while (atomic_load(&g_in_handler) != 0) sched_yield();
            lo_drop_snapshots();
        }
        pthread_mutex_unlock(&g_control_lock);
    }
    pthread_mutex_unlock(&g_request_lock);
    return result;
}

static __thread const void *t_context __attribute__((tls_model("initial-exec")));

void lo_set_thread_context(const void *context) { t_context = context; }
const void *lo_thread_context(void) { return t_context; }

void lo_signal_current_thread(void) { syscall(SYS_tgkill, getpid(), lo_current_tid(), SIGPROF); }

// libdispatch's own declaration needs its headers; NULL asks for the current queue's label.
extern const char *dispatch_queue_get_label(void *queue) __attribute__((weak));

const char *lo_current_queue_label(void) {
    if (dispatch_queue_get_label == NULL) return "";
    const char *label = dispatch_queue_get_label(NULL);
    return label ? label : "";
}

int lo_current_thread_name(char *buffer, size_t length) {
    return pthread_getname_np(pthread_self(), buffer, length);
}

__attribute__((noinline)) int lo_capture_current_stack(uintptr_t *buffer, int capacity) {
    if (buffer == NULL || capacity <= 0) return 0;
    void *frames[LO_MAX_FRAMES + 1];
    int limit = capacity + 1 < LO_MAX_FRAMES + 1 ? capacity + 1 : LO_MAX_FRAMES + 1;
    sigset_t saved;
    lo_unwind_enter_blocking(&saved);
    int count = unw_backtrace(frames, limit);
    lo_unwind_exit_blocking(&saved);
    if (count <= 1) return 0;
    for (int i = 1; i < count; i++) buffer[i - 1] = (uintptr_t)frames[i];
    return count - 1;
}
