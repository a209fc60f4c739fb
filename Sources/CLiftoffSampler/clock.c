// Process facts: times, thread ids, the main thread, CPU clocks and switch counts, the current
// Swift task.

#include "lo_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

pid_t lo_g_main_tid;
static uint64_t g_premain_ns;
__thread pid_t lo_t_tid __attribute__((tls_model("initial-exec")));
static __thread const void *t_context __attribute__((tls_model("initial-exec")));

uint64_t lo_clock_ns(clockid_t clock) {
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t lo_monotonic_ns(void) { return lo_clock_ns(CLOCK_MONOTONIC); }
uint64_t lo_thread_cpu_ns(void) { return lo_clock_ns(CLOCK_THREAD_CPUTIME_ID); }

// The kernel's clock id for another thread's scheduler CPU time (what pthread_getcpuclockid
// builds from a pthread_t, made here from a kernel tid): CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED.
static clockid_t lo_thread_clock(pid_t tid) { return (clockid_t)((~(unsigned)tid) << 3) | 6; }

int lo_thread_cpu_ns_of(pid_t tid, uint64_t *out) {
    struct timespec ts;
    if (clock_gettime(lo_thread_clock(tid), &ts) != 0) return -1;
    *out = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return 0;
}

void lo_clock_after_fork(void) { lo_t_tid = 0; }

pid_t lo_current_tid(void) {
    pid_t tid = lo_t_tid;
    if (tid == 0) {
        tid = (pid_t)syscall(SYS_gettid);
        lo_t_tid = tid;
    }
    return tid;
}

__attribute__((constructor)) static void lo_load(void) {
    g_premain_ns = lo_monotonic_ns();
    lo_g_main_tid = lo_current_tid();
}

pid_t lo_main_tid(void) { return lo_g_main_tid; }
int lo_is_main_thread(void) { return lo_current_tid() == lo_g_main_tid; }
uint64_t lo_premain_ns(void) { return g_premain_ns; }

void lo_set_thread_context(const void *context) { t_context = context; }
const void *lo_thread_context(void) { return t_context; }

int lo_current_thread_name(char *buffer, size_t length) {
    return pthread_getname_np(pthread_self(), buffer, length);
}

// libdispatch's own declaration needs its headers; NULL asks for the current queue's label.
extern const char *dispatch_queue_get_label(void *queue) __attribute__((weak));

const char *lo_current_queue_label(void) {
    if (dispatch_queue_get_label == NULL) return "";
    const char *label = dispatch_queue_get_label(NULL);
    return label ? label : "";
}

int lo_on_main_queue(void) { return strcmp(lo_current_queue_label(), "com.apple.main-thread") == 0; }

// swift_task_getCurrent takes no argument and returns a pointer, which the Swift calling
// convention passes as C does; it only reads a thread-local value, so handlers may call it, once
// that value exists on the thread. In a process the loader ran an audit library in (LD_AUDIT, as
// `liftoff profile` sets it), the loader set thread-local storage up before it loaded the Swift
// runtime, so the runtime's is allocated on each thread's first read, with malloc: read first in
// a handler that interrupted malloc, it deadlocks. There a thread's task is read in handlers only
// once the thread read it outside one (lo_task_storage_touch: as the session starts, as a thread
// created through pthread_create starts, as a thread registers).
typedef void *(*lo_task_getter)(void);
static _Atomic(lo_task_getter) g_task_getter;
static pthread_once_t g_task_once = PTHREAD_ONCE_INIT;
static atomic_int g_task_storage_late;
static __thread int t_task_storage_ready __attribute__((tls_model("initial-exec")));

static void lo_resolve_task_getter(void) {
    const char *audit = getenv("LD_AUDIT");
    atomic_store(&g_task_storage_late, audit != NULL && audit[0] != 0);
    atomic_store(&g_task_getter, (lo_task_getter)dlsym(RTLD_DEFAULT, "swift_task_getCurrent"));
}

void lo_task_storage_touch(void) {
    if (t_task_storage_ready) return;
    lo_handler_resolve_task_getter();
    lo_task_getter getter = atomic_load_explicit(&g_task_getter, memory_order_relaxed);
    if (getter == NULL) return;
    (void)getter();
    t_task_storage_ready = 1;
}

void lo_handler_resolve_task_getter(void) { pthread_once(&g_task_once, lo_resolve_task_getter); }

uintptr_t lo_current_swift_task_pointer(void) {
    lo_task_getter getter = atomic_load_explicit(&g_task_getter, memory_order_relaxed);
    if (getter == NULL) {
        lo_handler_resolve_task_getter();
        getter = atomic_load_explicit(&g_task_getter, memory_order_relaxed);
        if (getter == NULL) return 0;
    }
    return (uintptr_t)getter();
}


// In a handler: no pthread_once, only the value resolved before sampling began. The running task
// holds itself alive, so its header may be read.
uintptr_t lo_handler_current_task(void) {
    lo_task_getter getter = atomic_load_explicit(&g_task_getter, memory_order_relaxed);
    if (getter == NULL || (atomic_load_explicit(&g_task_storage_late, memory_order_relaxed) && !t_task_storage_ready)) return 0;
    return (uintptr_t)getter();
}

// /proc/self/task/TID/LEAF into `path` (at least 48 bytes; LEAF at most 10 characters).
static void lo_task_path(pid_t tid, const char *leaf, char *path) {
    static const char prefix[] = "/proc/self/task/";
    memcpy(path, prefix, sizeof prefix);
    size_t length = sizeof prefix - 1;
    char digits[12];
    int n = 0;
    for (unsigned value = (unsigned)tid; n == 0 || value != 0; value /= 10) digits[n++] = (char)('0' + value % 10);
    while (n > 0) path[length++] = digits[--n];
    path[length++] = '/';
    size_t leaf_length = strlen(leaf);
    memcpy(path + length, leaf, leaf_length + 1);
}

// The fields of /proc/self/task/TID/schedstat: CPU time, time waiting on a run queue, switches in.
static int lo_thread_schedstat(pid_t tid, uint64_t fields[3]) {
    char path[48];
    lo_task_path(tid, "schedstat", path);
    char buffer[96];
    if (lo_read_proc_line(path, buffer, sizeof buffer) == 0) return -1;
    int field = 0;
    uint64_t value = 0;
    for (const char *c = buffer;; c++) {
        if (*c >= '0' && *c <= '9') {
            value = value > UINT64_MAX / 10 ? UINT64_MAX : value * 10 + (uint64_t)(*c - '0');
        } else {
            fields[field] = value;
            if (field == 2) return 0;
            if (*c == 0) return -1;
            field++;
            value = 0;
        }
    }
}

int lo_thread_switches_in(pid_t tid, uint64_t *out) {
    uint64_t fields[3];
    if (lo_thread_schedstat(tid, fields) != 0 || fields[2] == 0) return -1;
    *out = fields[2];
    return 0;
}

int lo_thread_run_delay(pid_t tid, uint64_t *out) {
    uint64_t fields[3];
    if (lo_thread_schedstat(tid, fields) != 0) return -1;
    *out = fields[1];
    return 0;
}

int lo_thread_in_disk_wait(pid_t tid) {
    char path[48];
    lo_task_path(tid, "stat", path);
    // "TID (comm) S …": the state follows the last ')' (a name may hold parentheses).
    char buffer[256];
    if (lo_read_proc_line(path, buffer, sizeof buffer) == 0) return 0;
    const char *close = strrchr(buffer, ')');
    return close != NULL && close[1] == ' ' && close[2] == 'D';
}

void lo_return_free_memory(void) { malloc_trim(0); }

// The launch is ready (its first frame, or its LaunchRecorder's ready). It does nothing: a tool
// that counts the launch (valgrind's callgrind, told --dump-after=lo_launch_ready) stops its
// count when the call returns. Kept out of line and never folded away.
__attribute__((noinline, used)) void lo_launch_ready(void) {
    __asm__ volatile("" ::: "memory");
}
