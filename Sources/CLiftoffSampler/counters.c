// What a process has spent so far, by the kernel's counts: CPU time and time waiting for a core
// (its main thread's /proc/self/schedstat), bytes read from storage and page faults (getrusage). Read when Liftoff's constructor runs, before `main` and before any sampling
// signal, they split the time from exec to `main` into on a CPU, waiting for a core, and blocked.
// Only system calls: the agent also reads them in a signal handler, when its recording is written.

#include "lo_internal.h"

#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static lo_process_counters g_premain_counters;

// The decimal number at `*at` (saturating), and `*at` moved past it.
static uint64_t lo_parse_decimal(const char **at) {
    uint64_t value = 0;
    while (**at >= '0' && **at <= '9') {
        uint64_t digit = (uint64_t)(**at - '0');
        value = value > (UINT64_MAX - digit) / 10 ? UINT64_MAX : value * 10 + digit;
        (*at)++;
    }
    return value;
}

void lo_read_process_counters(lo_process_counters *out) {
    memset(out, 0, sizeof *out);
    out->time_ns = lo_monotonic_ns();
    char text[512];
    if (lo_read_proc_line("/proc/self/schedstat", text, sizeof text) > 0) {
        const char *at = text;
        out->cpu_ns = lo_parse_decimal(&at);
        // schedstat's CPU time lags for a thread that is running (it is brought up to date when
        // the thread is switched out or ticks); the main thread's CPU clock is exact.
        uint64_t exact;
        if (lo_thread_cpu_ns_of((pid_t)syscall(SYS_getpid), &exact) == 0) out->cpu_ns = exact;
        if (*at == ' ') {
            at++;
            out->runqueue_ns = lo_parse_decimal(&at);
            out->valid |= LO_COUNTERS_SCHEDULER;
        }
    }
    struct rusage usage;
    if (syscall(SYS_getrusage, RUSAGE_SELF, &usage) == 0) {
        out->major_faults = (uint64_t)usage.ru_majflt;
        out->minor_faults = (uint64_t)usage.ru_minflt;
        // Blocks of 512 bytes: the kernel's count of bytes read from storage, as /proc/self/io's
        // read_bytes says it, without a file to open.
        out->read_bytes = (uint64_t)usage.ru_inblock * 512;
        out->valid |= LO_COUNTERS_FAULTS | LO_COUNTERS_IO;
    }
}

__attribute__((constructor)) static void lo_read_premain_counters(void) {
    if (g_premain_counters.time_ns == 0) lo_read_process_counters(&g_premain_counters);
}

const lo_process_counters *lo_premain_counters(void) {
    lo_read_premain_counters();
    return &g_premain_counters;
}
