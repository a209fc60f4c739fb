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

int sigaction(int signal_number, const struct sigaction *action, struct sigaction *old) {
    if (signal_number == SIGPROF && lo_agent_owns_sigprof && !lo_sampler_owns_action(action)) {
        if (action) lo_agent_set_program_flag(LO_AGENT_PROGRAM_SIGPROF, 1);
        lo_sampler_chain_signal(action, old);
        return 0;
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

static void on_signal(int sig, siginfo_t *info, void *context) {
    lo_agent_write_halted(LO_AGENT_ENDED_BY_SIGNAL | (uint32_t)(sig & 0xff) << 8);
    lo_agent_wait_for_writer();
    /* The program's own handling: its handler, or the default action, which ends it. */
    for (size_t i = 0; i < LO_AGENT_EXIT_SIGNAL_COUNT; i++) {
        if (lo_agent_exit_signals[i] != sig) continue;
        real_sigaction()(sig, &previous[i], NULL);
        if ((previous[i].sa_flags & SA_SIGINFO) && previous[i].sa_sigaction) {
            previous[i].sa_sigaction(sig, info, context);
            return;
        }
        if (previous[i].sa_handler != SIG_DFL && previous[i].sa_handler != SIG_IGN) {
            previous[i].sa_handler(sig);
            return;
        }
        if (previous[i].sa_handler == SIG_IGN) return;
        /* A fault re-raised by returning: the instruction runs again, now with the default
           action. Any other signal is raised again, unblocked. */
        if (info && info->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE)) return;
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        return;
    }
}

void lo_agent_install_exit_signals(void) {
    for (size_t i = 0; i < LO_AGENT_EXIT_SIGNAL_COUNT; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = on_signal;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        // While one of them writes the recording, the others wait.
        sigemptyset(&action.sa_mask);
        for (size_t j = 0; j < LO_AGENT_EXIT_SIGNAL_COUNT; j++) sigaddset(&action.sa_mask, lo_agent_exit_signals[j]);
        real_sigaction()(lo_agent_exit_signals[i], &action, &previous[i]);
    }
}

void lo_agent_restore_exit_signals(void) {
    for (size_t i = 0; i < LO_AGENT_EXIT_SIGNAL_COUNT; i++) real_sigaction()(lo_agent_exit_signals[i], &previous[i], NULL);
}
