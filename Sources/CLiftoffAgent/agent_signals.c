// The agent's signals: the ones that end the process (the recording is written first, with
// async-signal-safe calls only), and SIGPROF, which the sampler shares with a program that has
// its own profiler.
//
// SIGPROF: the agent defines sigaction and signal. While it samples, a program that installs a
// SIGPROF handler gets it chained behind the sampler's (see lo_sampler_chain_signal), which
// stays first; asking for the current handler returns the program's. Every other signal, and
// SIGPROF once the agent stood down, goes straight to the C library.

#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <ucontext.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "recording.h"
#include "agent_signals.h"
#include "lo_sampler.h"

static struct sigaction previous[LO_AGENT_EXIT_SIGNAL_COUNT];

typedef int (*lo_sigaction_function)(int, const struct sigaction *, struct sigaction *);
static _Atomic(lo_sigaction_function) g_real_sigaction;

static lo_sigaction_function real_sigaction(void) {
    lo_sigaction_function function = atomic_load(&g_real_sigaction);
    if (function == NULL) {
        function = (lo_sigaction_function)dlsym(RTLD_NEXT, "sigaction");
        atomic_store(&g_real_sigaction, function);
    }
    return function;
}

static void on_signal(int sig, siginfo_t *info, void *context);

// The signals that stop a program (SIGTERM, SIGINT, SIGHUP): while the agent records, its handler
// stays installed behind the program's. A program that installs its own gets it run by the agent's
// (the process goes on, and is recorded until it ends); one that goes back to the default action
// (to re-raise the signal after cleaning up, as xz and many tools do) is recorded before it ends.
// A program that ignores one really ignores it, so that what it runs with exec inherits that (nohup).
static _Atomic int g_owns_stop_signals;

static int is_stop_signal(int sig) { return sig == SIGTERM || sig == SIGINT || sig == SIGHUP; }

static int exit_signal_index(int sig) {
    for (size_t i = 0; i < LO_AGENT_EXIT_SIGNAL_COUNT; i++) {
        if (lo_agent_exit_signals[i] == sig) return (int)i;
    }
    return -1;
}

static struct sigaction agent_action(const struct sigaction *program) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_signal;
    // On the program's alternate stack where its handler asked for one (a stack overflow's
    // SIGSEGV has no other stack to run on).
    action.sa_flags = SA_SIGINFO | SA_RESTART | (program->sa_flags & SA_ONSTACK);
    // While one of them writes the recording, the others wait.
    sigemptyset(&action.sa_mask);
    for (size_t j = 0; j < LO_AGENT_EXIT_SIGNAL_COUNT; j++) sigaddset(&action.sa_mask, lo_agent_exit_signals[j]);
    return action;
}

// Whether `action` runs a function of the program's (neither the default action nor ignoring).
static int has_own_handler(const struct sigaction *action) {
    if (action->sa_flags & SA_SIGINFO) return action->sa_sigaction != NULL;
    return action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN;
}

static int is_ignored(const struct sigaction *action) {
    return !(action->sa_flags & SA_SIGINFO) && action->sa_handler == SIG_IGN;
}

static int keep_stop_signal(int sig, const struct sigaction *action, struct sigaction *old) {
    int i = exit_signal_index(sig);
    if (i < 0) return -1;
    sigset_t mask;
    lo_agent_block_exit_signals(&mask);
    if (old) *old = previous[i];
    int result = 0;
    if (action) {
        previous[i] = *action;
        struct sigaction installed = is_ignored(action) ? *action : agent_action(action);
        result = real_sigaction()(sig, &installed, NULL);
    }
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    return result;
}

int sigaction(int signal_number, const struct sigaction *action, struct sigaction *old) {
    if (signal_number == SIGPROF && lo_agent_owns_sigprof && !lo_sampler_owns_action(action)) {
        if (action) lo_agent_set_program_flag(LO_AGENT_PROGRAM_SIGPROF, 1);
        lo_sampler_chain_signal(action, old);
        return 0;
    }
    if (is_stop_signal(signal_number) && atomic_load(&g_owns_stop_signals) &&
        (lo_agent_records() || lo_agent_program_records())) {
        return keep_stop_signal(signal_number, action, old);
    }
    return real_sigaction()(signal_number, action, old);
}

sighandler_t signal(int signal_number, sighandler_t handler) {
    struct sigaction action, old;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(signal_number, &action, &old) != 0) return SIG_ERR;
    return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)old.sa_sigaction : old.sa_handler;
}

// _exit skips atexit: a program that ends with it (a fork child, a handler) is still recorded,
// with what a signal handler may do. It then ends the process as the C library's does.
void _exit(int status) {
    if (lo_agent_records()) {
        // A SIGTERM that comes meanwhile (a pool stopping its workers) waits: the process ends
        // here anyway, and the recording is whole.
        lo_agent_block_exit_signals(NULL);
        lo_agent_write_halted(0);
    }
    for (;;) syscall(SYS_exit_group, status);
}

// A fault, an abort or a quit: the program crashes, and its own crash handler (Swift's backtracer)
// runs next, in a process where SIGPROF is the program's again.
static int is_crash(int sig) {
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT || sig == SIGQUIT ||
           sig == SIGTRAP;
}

// SIGPROF back to the program, the sampler halted: its own handler if it set one, else ignored
// (a tick the sampler sent just before it stopped must not end the process, as SIGPROF's default
// would). A crash handler that suspends threads with SIGPROF then installs and gets its own.
static void give_back_sigprof(void) {
    struct sigaction program;
    lo_sampler_chain_signal(NULL, &program);
    if (program.sa_handler == SIG_DFL && !(program.sa_flags & SA_SIGINFO)) program.sa_handler = SIG_IGN;
    lo_agent_owns_sigprof = 0;
    real_sigaction()(SIGPROF, &program, NULL);
}

// Runs the program's handling of `sig` as the kernel would have: on the mask the handler asked
// for, with SA_RESETHAND honoured; or its default action.
static void hand_on(size_t i, int sig, siginfo_t *info, void *context) {
    struct sigaction program = previous[i];
    struct sigaction installed = program;
    if (program.sa_flags & SA_RESETHAND) {
        memset(&installed, 0, sizeof installed);
        installed.sa_handler = SIG_DFL;
    }
    int has_handler = has_own_handler(&program);
    if (has_handler && is_stop_signal(sig) && atomic_load(&g_owns_stop_signals)) {
        previous[i] = installed; // the agent's handler stays, for the program's next one
    } else {
        real_sigaction()(sig, &installed, NULL);
    }
    if (has_handler) {
        // The mask the program's handler would have run with: the interrupted code's, its own
        // sa_mask, and the signal unless SA_NODEFER. (The agent's blocked every exit signal, and a
        // crash handler's helper thread inherits the mask: a fault it expects to catch would kill.)
        sigset_t mask = context ? ((ucontext_t *)context)->uc_sigmask : program.sa_mask;
        sigorset(&mask, &mask, &program.sa_mask);
        if (!(program.sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
        else sigdelset(&mask, sig);
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
        if (program.sa_flags & SA_SIGINFO) program.sa_sigaction(sig, info, context);
        else program.sa_handler(sig);
        return;
    }
    if (is_ignored(&program)) return;
    /* A fault re-raised by returning: the instruction runs again, now with the default action.
       Any other signal is raised again, unblocked. */
    if (info && info->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE)) return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
}

static void on_signal(int sig, siginfo_t *info, void *context) {
    int crash = is_crash(sig);
    int i = exit_signal_index(sig);
    if (i < 0) return;
    if (!crash && atomic_load(&g_owns_stop_signals) && (lo_agent_records() || lo_agent_program_records())) {
        // The program handles it and goes on: recorded until it ends.
        if (has_own_handler(&previous[i])) {
            hand_on((size_t)i, sig, info, context);
            return;
        }
        atomic_store(&g_owns_stop_signals, 0);
    }
    // Programs the crash handler starts (swift-backtrace) are not part of the launch: they run
    // without the agent.
    if (crash) atomic_store(&lo_agent_crashed, 1);
    lo_agent_write_halted(LO_AGENT_ENDED_BY_SIGNAL | (uint32_t)(sig & 0xff) << 8);
    // A program that records itself and had not written its profile yet: what its sampler kept.
    lo_agent_write_program(LO_AGENT_ENDED_BY_SIGNAL | (uint32_t)(sig & 0xff) << 8);
    lo_agent_wait_for_writer();
    if (lo_agent_owns_sigprof && lo_agent_records()) {
        give_back_sigprof();
        // Returns as soon as they are gone; on a loaded machine the sampler thread and the
        // threads woken may wait long for a core (100 ms was not always enough under `stress`).
        if (crash) lo_sampler_release_waits(1000000000ull);
    }
    hand_on((size_t)i, sig, info, context);
}

void lo_agent_install_exit_signals(void) {
    // Before main, a signal's action is the default or, inherited through exec, ignored: the
    // agent's is set and the previous one read in one call, and put back where it was ignored or
    // asked for an alternate stack (another library's constructor may have set one).
    struct sigaction usual = agent_action(&(struct sigaction){.sa_flags = 0});
    for (size_t i = 0; i < LO_AGENT_EXIT_SIGNAL_COUNT; i++) {
        int sig = lo_agent_exit_signals[i];
        if (real_sigaction()(sig, &usual, &previous[i]) != 0) continue;
        // A signal the program ignores stays ignored (nohup's SIGHUP, a shell's background job).
        if (is_ignored(&previous[i])) {
            real_sigaction()(sig, &previous[i], NULL);
        } else if (previous[i].sa_flags & SA_ONSTACK) {
            struct sigaction action = agent_action(&previous[i]);
            real_sigaction()(sig, &action, NULL);
        }
    }
    atomic_store(&g_owns_stop_signals, 1);
}

void lo_agent_restore_stop_signals(void) {
    atomic_store(&g_owns_stop_signals, 0);
    for (size_t i = 0; i < LO_AGENT_EXIT_SIGNAL_COUNT; i++) {
        int sig = lo_agent_exit_signals[i];
        if (!is_crash(sig)) real_sigaction()(sig, &previous[i], NULL);
    }
}
