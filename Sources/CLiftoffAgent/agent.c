// The injected agent: see include/lo_agent.h. This file starts it (before `main`), follows a
// fork() child and stands it down for a program that records itself; recording.c keeps its state
// and writes its recording, agent_exec.c follows the programs it runs, agent_signals.c its signals.
// Each file calls only the ones below it: agent.c → agent_exec.c, agent_signals.c → recording.c →
// rules.c (thread rules in the program, `liftoff profile --rules`).

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recording.h"
#include "agent_exec.h"
#include "agent_signals.h"
#include "output.h"
#include "rules.h"
#include "lo_agent.h"
#include "lo_sampler.h"

/* A program that links Liftoff records itself (its sampler calls this before starting): the
   agent stops sampling, gives SIGPROF back, and writes nothing of its own. Its children are still
   followed, but for those its crash handler starts: the crash signals' hooks stay, and only mark
   the crash before handing it on, so that Swift's backtracer is not taken for the launch. Given
   the program's sampler (`program`, not NULL), the agent keeps it: if the program ends by a
   signal (a crash, or SIGTERM, SIGINT or SIGHUP it does not handle) before it wrote its own
   profile, the agent writes what that sampler kept as the program's recording, so the launch is
   not lost. The stop signals then stay hooked behind the program's own handlers. */
int lo_agent_stand_down_to(const lo_sampler_source *program) {
    lo_agent_rules_end();
    if (!lo_agent_claim_write()) return 0;
    lo_sampler_stop();
    lo_agent_owns_sigprof = 0;
    lo_agent_hand_over(program);
    lo_agent_write_loader_records();
    int kept = lo_agent_program_records();
    if (!kept) lo_agent_restore_stop_signals();
    lo_agent.pid = 0;
    return kept;
}

void lo_agent_stand_down(void) { lo_agent_stand_down_to(NULL); }

/* ---- start ---- */

/* When `main` starts: the C library's start calls it through __libc_start_main, which the agent
   defines to hand it `main` behind a stamp. Until then the stamp is the agent's own start. */
typedef int (*lo_main_function)(int, char **, char **);
typedef int (*lo_start_main_function)(lo_main_function, int, char **, void (*)(void), void (*)(void), void (*)(void),
                                      void *);
static lo_main_function program_main;

static int stamped_main(int argc, char **argv, char **envp) {
    if (lo_agent_records()) lo_agent.main_entry_ns = lo_monotonic_ns();
    // A tail call: no frame of the agent's stays below `main` in the program's stacks (its
    // samples, a crash's backtrace).
    __attribute__((musttail)) return program_main(argc, argv, envp);
}

int __libc_start_main(lo_main_function main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end) {
    lo_start_main_function next = (lo_start_main_function)dlsym(RTLD_NEXT, "__libc_start_main");
    program_main = main;
    return next(lo_agent.directory[0] ? stamped_main : main, argc, argv, init, fini, rtld_fini, stack_end);
}

static void on_exit_handler(void) { lo_agent_write_stopped(0); }

// A fork() child of a recorded program is recorded too, from the fork: a shell's subshell, a
// pre-forking server's worker, Python's multiprocessing. The parent's session does not exist
// here (its sampler thread stayed in the parent): the sampler starts over. A child that goes on
// to exec writes this recording first (its pre-exec phase), as any recorded program does.
// A sampling signal that arrives while the kernel copies the process makes it start the fork over
// (a process under the agent, its mappings more numerous, takes a few hundred microseconds to
// copy: at 1 kHz, about one fork in three): the forking thread takes none until the copy is made.
static __thread sigset_t t_mask_before_fork __attribute__((tls_model("initial-exec")));

static void before_fork(void) {
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &blocked, &t_mask_before_fork);
}

static void in_parent(void) { pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, NULL); }

static void in_child(void) {
    pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, NULL);
    lo_agent_forked_pid = (pid_t)syscall(SYS_getpid);
    lo_agent_fork_ns = lo_monotonic_ns();
    if (lo_agent.pid == 0 || !lo_agent.follows_children || atomic_load(&lo_agent_crashed)) return;
    lo_sampler_after_fork();
    lo_agent.parent = lo_agent.pid;
    lo_agent.pid = lo_agent_forked_pid;
    lo_agent.is_root = 0;
    lo_agent.command_length = 0;
    lo_agent.image = 0;
    lo_agent.process_start_ns = lo_agent.premain_ns = lo_agent.main_entry_ns = lo_agent_fork_ns;
    lo_read_process_counters(&lo_agent.premain_counters);
    lo_agent_set_program_flag(LO_AGENT_PROGRAM_BLOCKS_SIGPROF, 0);
    lo_agent_rules_after_fork();
    lo_agent_output_after_fork();
    lo_agent_begin();
}

// LIFTOFF_AGENT_IMAGE=PID:START:IMAGE: the process an exec came from, when it started, and the
// image number the next program of that process takes.
static int parse_image(const char *text, uint64_t values[3]) {
    for (int i = 0; i < 3; i++) {
        values[i] = 0;
        if (*text < '0' || *text > '9') return 0;
        while (*text >= '0' && *text <= '9') {
            if (values[i] > UINT64_MAX / 10 - 1) return 0;
            values[i] = values[i] * 10 + (uint64_t)(*text++ - '0');
        }
        if (i < 2 && *text++ != ':') return 0;
    }
    return *text == 0;
}

// The arguments as the C library hands them to constructors, NUL-separated, as /proc/PID/cmdline
// has them (one fewer file to read at the end); 0 when they do not fit.
static size_t copy_arguments(int argc, char **argv, char *out, size_t capacity) {
    size_t used = 0;
    for (int i = 0; argv != NULL && i < argc && argv[i] != NULL; i++) {
        size_t length = strlen(argv[i]) + 1;
        if (length > capacity - used) return 0;
        memcpy(out + used, argv[i], length);
        used += length;
    }
    return used;
}

// After an exec that held SIGPROF for the agent (agent_exec.c): whatever the previous program's
// sampler sent is not this one's; it is taken, and SIGPROF is unblocked as the program had it.
static void release_held_sigprof(void) {
    const char *held = getenv(LO_ENV_HELD);
    if (held == NULL) return;
    unsetenv(LO_ENV_HELD);
    if (strcmp(held, "1") != 0) return;
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    struct timespec now = {0, 0};
    while (sigtimedwait(&prof, NULL, &now) == SIGPROF) {
    }
    pthread_sigmask(SIG_UNBLOCK, &prof, NULL);
}

__attribute__((constructor)) static void lo_agent_start(int argc, char **argv, char **envp) {
    (void)envp;
    release_held_sigprof();
    const char *out = getenv(LO_ENV_OUT);
    if (!out || !*out || strlen(out) >= sizeof lo_agent.directory - 64) return;
    Dl_info self;
    if (dladdr((void *)lo_agent_start, &self) && self.dli_fname && strlen(self.dli_fname) < sizeof lo_agent.library) {
        strcpy(lo_agent.library, self.dli_fname);
    }
    lo_agent_find_exec();
    const char *children = getenv(LO_ENV_CHILDREN);
    lo_agent.follows_children = !(children && strcmp(children, "0") == 0);
    pid_t pid = getpid();
    /* The sampler's own load-time stamp may not be taken yet: constructors run in any order. */
    uint64_t premain = lo_premain_ns();
    if (premain == 0) premain = lo_monotonic_ns();
    uint64_t start = premain;
    uint32_t image = 0;
    uint64_t previous[3];
    const char *image_text = getenv(LO_ENV_IMAGE);
    /* The process liftoff started, in its first program or a later one (exec). */
    const char *root = getenv(LO_ENV_ROOT);
    long root_pid = root ? strtol(root, NULL, 10) : 0;
    lo_agent.is_root = !image_text || root_pid == (long)pid;
    if (image_text && parse_image(image_text, previous)) {
        if (previous[0] == (uint64_t)pid) {
            /* A program this process went on to run with exec. */
            if (previous[1] > 0 && previous[1] <= premain) start = previous[1];
            image = previous[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)previous[2];
        } else {
            /* A program another recorded process started. */
            if (!lo_agent.follows_children) return;
            if (previous[0] == 0 && previous[1] > 0 && previous[1] <= premain && premain - previous[1] < 60000000000ULL) {
                start = previous[1];
            }
        }
    } else {
        /* The program liftoff started: it says when it spawned it. */
        const char *launch = getenv(LO_ENV_LAUNCH);
        unsigned long long spawn = launch ? strtoull(launch, NULL, 10) : 0;
        if (spawn > 0 && spawn <= premain && premain - spawn < 60000000000ULL) start = spawn;
    }
    strcpy(lo_agent.directory, out);
    lo_agent.rate_hz = 1000;
    const char *rate = getenv(LO_ENV_RATE);
    if (rate) {
        long value = strtol(rate, NULL, 10);
        if (value >= LO_MIN_RATE_HZ && value <= LO_MAX_RATE_HZ) lo_agent.rate_hz = (uint32_t)value;
    }
    lo_agent.pid = pid;
    lo_agent.parent = getppid();
    lo_agent.command_length = copy_arguments(argc, argv, lo_agent.command, sizeof lo_agent.command);
    lo_agent.image = image;
    lo_agent.process_start_ns = start;
    lo_agent.premain_ns = premain;
    lo_agent.premain_counters = *lo_premain_counters();
    if (!lo_agent_set_paths()) {
        lo_agent.pid = 0;
        return;
    }
    /* The programs this one runs with exec see where it came from: this process, this start. */
    char value[80];
    size_t length = lo_agent_format_u64(value, (uint64_t)pid);
    value[length++] = ':';
    length += lo_agent_format_u64(value + length, start);
    value[length++] = ':';
    lo_agent_format_u64(value + length, (uint64_t)image + 1);
    setenv(LO_ENV_IMAGE, value, 1);
    if (!image_text) {
        lo_agent_format_u64(value, (uint64_t)pid);
        setenv(LO_ENV_ROOT, value, 1);
    }
    if (!lo_agent_start_sampling()) {
        lo_agent.pid = 0;
        return;
    }
    lo_agent.main_entry_ns = lo_monotonic_ns();
    sigset_t blocked;
    if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0 && sigismember(&blocked, SIGPROF)) {
        lo_agent_set_program_flag(LO_AGENT_PROGRAM_BLOCKS_SIGPROF, 1);
    }
    lo_agent_owns_sigprof = 1;
    lo_agent_rules_begin();
    lo_agent_output_begin();
    pthread_atfork(before_fork, in_parent, in_child);
    atexit(on_exit_handler);
    lo_agent_install_exit_signals();
}
