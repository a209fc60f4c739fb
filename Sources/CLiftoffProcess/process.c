// Process helpers Swift cannot call directly (syscall(2) is variadic).

#include <sys/syscall.h>
#include <unistd.h>

#include "lo_process.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same on every architecture */
#endif

int lo_pidfd_open(int pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#ifndef SYS_close_range
#define SYS_close_range 436 /* the same on every architecture */
#endif

/* Writes `value` in decimal over the digits after the first '=' of `entry`, when it takes as many
   digits as are there (a later monotonic time does, but at a power of ten). Async-signal-safe. */
static void restamp(char *entry, uint64_t value) {
    char *digits = strchr(entry, '=');
    if (!digits) return;
    digits++;
    size_t width = strlen(digits);
    char text[24];
    size_t length = 0;
    do {
        text[length++] = (char)('0' + value % 10);
        value /= 10;
    } while (value && length < sizeof text);
    if (length != width) return;
    for (size_t i = 0; i < length; i++) digits[i] = text[length - 1 - i];
}

/* This thread's CPU time (its CPU clock) and time waiting for a core (/proc/thread-self/schedstat's
   second number), in nanoseconds. Async-signal-safe. 0 when read, -1 when not. */
static int schedstat(uint64_t *cpu, uint64_t *waiting) {
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[96];
    ssize_t length;
    while ((length = read(fd, text, sizeof text - 1)) < 0 && errno == EINTR) {}
    close(fd);
    if (length <= 0) return -1;
    text[length] = 0;
    uint64_t values[2] = {0, 0};
    const char *at = text;
    for (int i = 0; i < 2; i++) {
        if (*at < '0' || *at > '9') return -1;
        while (*at >= '0' && *at <= '9') values[i] = values[i] * 10 + (uint64_t)(*at++ - '0');
        if (*at == ' ') at++;
    }
    (void)values[0];  /* it lags for a running thread; its CPU clock is exact */
    struct timespec clock;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &clock) != 0) return -1;
    *cpu = (uint64_t)clock.tv_sec * 1000000000ull + (uint64_t)clock.tv_nsec;
    *waiting = values[1];
    return 0;
}

static uint64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static int spawn(char *const argv[], char *const envp[], int out_fd, int err_fd, lo_faults **faults, int *faults_errno,
                 int stamp_index, uint64_t spawn_ns, uint64_t *started_ns) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return -1;
    /* With faults to record, the child waits at a gate until the events are open on it. */
    int gate[2] = {-1, -1};
    if (faults && pipe2(gate, O_CLOEXEC) != 0) {
        int saved = errno;
        close(report[0]);
        close(report[1]);
        errno = saved;
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(report[0]);
        close(report[1]);
        if (gate[0] >= 0) close(gate[0]);
        if (gate[1] >= 0) close(gate[1]);
        errno = saved;
        return -1;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls from here to exec. */
        int failure = 0;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
            failure = errno ? errno : ESRCH;
            goto fail;
        }
        setpgid(0, 0);
        /* The program starts with default signal handling and nothing blocked, whatever this
           process ignores (SIGPIPE) or blocks. */
        struct sigaction action;
        for (int sig = 1; sig < NSIG; sig++) {
            if (sigaction(sig, NULL, &action) == 0 && action.sa_handler == SIG_IGN) signal(sig, SIG_DFL);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
            failure = errno;
            goto fail;
        }
        /* Every other descriptor closes at exec (the report pipe already does). */
        if (syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) != 0) {
            for (int fd = 3; fd < 65536; fd++) {
                if (fd != report[1]) fcntl(fd, F_SETFD, FD_CLOEXEC);
            }
        }
        if (gate[0] >= 0) {
            /* The parent opens the events while the child waits here. The wait is no part of the
               launch: the launch's start moves by it, in the time variable and to the parent
               (first on the report pipe), so that the kernel's counts since the fork (its CPU
               and run-queue time) still fall within the launch, and only the wait is left out. */
            char go;
            uint64_t cpu[2] = {0, 0}, waiting[2] = {0, 0};
            int counted = schedstat(&cpu[0], &waiting[0]) == 0;
            uint64_t before = monotonic_ns();
            close(gate[1]);
            while (read(gate[0], &go, 1) < 0 && errno == EINTR) {}
            uint64_t after = monotonic_ns();
            counted = counted && schedstat(&cpu[1], &waiting[1]) == 0;
            /* Only the blocked part of it: a child that waited for a core or ran meanwhile (a busy
               machine) has that time counted by the kernel, and so kept in the launch. */
            uint64_t waited = after > before ? after - before : 0;
            if (counted) {
                uint64_t busy = (cpu[1] - cpu[0]) + (waiting[1] - waiting[0]);
                waited = waited > busy ? waited - busy : 0;
            }
            uint64_t started = spawn_ns + waited;
            if (stamp_index >= 0) restamp(envp[stamp_index], started);
            (void)!write(report[1], &started, sizeof started);
        }
        execvpe(argv[0], argv, envp);
        failure = errno;
    fail:
        (void)!write(report[1], &failure, sizeof failure);
        _exit(127);
    }
    close(report[1]);
    if (faults) {
        close(gate[0]);
        *faults = lo_faults_open(pid);
        *faults_errno = *faults ? 0 : errno;
        /* The child goes on once the gate closes, whatever the kernel said. */
        close(gate[1]);
    }
    /* Gated, the report pipe first brings when the launch started (8 bytes), unless the child
       failed before its gate (4 bytes, its errno); then, as ever, nothing (exec closed it) or
       exec's errno. */
    int failure = 0;
    ssize_t got;
    if (faults) {
        unsigned char bytes[8];
        size_t have = 0;
        while (have < sizeof bytes) {
            ssize_t part = read(report[0], bytes + have, sizeof bytes - have);
            if (part < 0 && errno == EINTR) continue;
            if (part <= 0) break;
            have += (size_t)part;
        }
        if (have == sizeof bytes) {
            uint64_t started;
            memcpy(&started, bytes, sizeof started);
            if (started_ns) *started_ns = started;
        } else if (have == sizeof failure) {
            memcpy(&failure, bytes, sizeof failure);
            got = sizeof failure;
            goto failed;
        }
    }
    do {
        got = read(report[0], &failure, sizeof failure);
    } while (got < 0 && errno == EINTR);
failed:
    close(report[0]);
    if (got == (ssize_t)sizeof failure) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        if (faults && *faults) {
            lo_faults_close(*faults);
            *faults = NULL;
        }
        errno = failure;
        return -1;
    }
    return pid;
}

int lo_spawn(char *const argv[], char *const envp[], int out_fd, int err_fd) {
    return spawn(argv, envp, out_fd, err_fd, NULL, NULL, -1, 0, NULL);
}

int lo_spawn_recording_faults(char *const argv[], char *const envp[], int out_fd, int err_fd, lo_faults **faults,
                              int *faults_errno, int stamp_index, uint64_t spawn_ns, uint64_t *started_ns) {
    *faults = NULL;
    *faults_errno = 0;
    if (started_ns) *started_ns = spawn_ns;
    return spawn(argv, envp, out_fd, err_fd, faults, faults_errno, stamp_index, spawn_ns, started_ns);
}

int lo_become_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1);
}
