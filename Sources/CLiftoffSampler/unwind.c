// libunwind calls, and the exclusion between unwinds in handlers and outside them.
//
// An unwind outside a handler (warming a thread, `lo_capture_current_stack` without a session) goes through the
// C library's dl_iterate_phdr and so takes libunwind's lock and then the loader's. A thread
// interrupted while holding the loader's lock (inside dlopen or dlclose) would wait in its
// handler for libunwind's lock: a deadlock. So while such an unwind runs, handlers do not
// enter libunwind: one that cannot enter within LO_UNWIND_WAIT_NS gives up and counts the
// sample as skipped, and the interrupted thread resumes and releases what it holds. Handlers
// among themselves run concurrently: they never take the loader's lock (see snapshot.c).

#include "lo_internal.h"

#include <libunwind.h>
#include <sched.h>
#include <string.h>
#include <ucontext.h>

static _Atomic int g_handler_unwinds;  // handlers inside libunwind now
static _Atomic int g_exclusive_unwind; // an unwind outside a handler runs or waits
#define LO_UNWIND_WAIT_NS 1000000ull

int lo_unwind_enter_bounded(void) {
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

void lo_unwind_exit(void) { atomic_fetch_sub(&g_handler_unwinds, 1); }

void lo_unwind_enter_blocking(sigset_t *saved) {
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

void lo_unwind_exit_blocking(const sigset_t *saved) {
    atomic_store(&g_exclusive_unwind, 0);
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}

uintptr_t lo_context_pc(void *context) {
    ucontext_t *uc = (ucontext_t *)context;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
#error "Liftoff's sampler supports x86_64 and aarch64"
#endif
}

int lo_interrupted_in_syscall(void *context) {
    ucontext_t *uc = (ucontext_t *)context;
    uintptr_t pc = lo_context_pc(context);
#if defined(__x86_64__)
    // `syscall` is 0F 05. A blocking call interrupted with SA_RESTART resumes at the instruction
    // again; one that returns EINTR resumes after it with RAX = -EINTR. Reads stay in the page
    // of the program counter, which is mapped code.
    uintptr_t offset = pc & 0xfff;
    if (offset <= 0xffe && *(const uint16_t *)pc == 0x050f) return 1;
    if (offset >= 2 && *(const uint16_t *)(pc - 2) == 0x050f && (long long)uc->uc_mcontext.gregs[REG_RAX] == -4) return 1;
    return 0;
#elif defined(__aarch64__)
    // `svc #0` is D4000001.
    uintptr_t offset = pc & 0xfff;
    if (offset <= 0xffc && *(const uint32_t *)pc == 0xd4000001u) return 1;
    if (offset >= 4 && *(const uint32_t *)(pc - 4) == 0xd4000001u && (long long)uc->uc_mcontext.regs[0] == -4) return 1;
    return 0;
#endif
}

int lo_interrupted_call_cut_short(void *context) {
    ucontext_t *uc = (ucontext_t *)context;
    uintptr_t pc = lo_context_pc(context);
    uintptr_t offset = pc & 0xfff;
#if defined(__x86_64__)
    return offset >= 2 && *(const uint16_t *)(pc - 2) == 0x050f && (long long)uc->uc_mcontext.gregs[REG_RAX] == -4;
#elif defined(__aarch64__)
    return offset >= 4 && *(const uint32_t *)(pc - 4) == 0xd4000001u && (long long)uc->uc_mcontext.regs[0] == -4;
#endif
}

uintptr_t lo_interrupted_call_word(void *context) {
#if defined(__x86_64__)
    return (uintptr_t)((ucontext_t *)context)->uc_mcontext.gregs[REG_RDI];
#else
    (void)context; // x0, the first argument, now holds the result
    return 0;
#endif
}

void lo_set_call_result(void *context, long result) {
    ucontext_t *uc = (ucontext_t *)context;
#if defined(__x86_64__)
    uc->uc_mcontext.gregs[REG_RAX] = (greg_t)result;
#elif defined(__aarch64__)
    uc->uc_mcontext.regs[0] = (uint64_t)result;
#endif
}

int lo_unwind_interrupted(void *context, uintptr_t *out, int *truncated) {
    *truncated = 0;
    if (!lo_unwind_enter_bounded()) return -1;
    void *frames[LO_BACKTRACE_CAPACITY];
    lo_t_sampling = 1;
    int count = unw_backtrace(frames, LO_BACKTRACE_CAPACITY);
    lo_t_sampling = 0;
    lo_unwind_exit();
    // The frames before the interrupted one are the handler's own and the signal trampoline.
    uintptr_t pc = lo_context_pc(context);
    int start = -1;
    for (int i = 0; i < count && i < LO_SKIP_SEARCH; i++) {
        if ((uintptr_t)frames[i] == pc) {
            start = i;
            break;
        }
    }
    if (start < 0) return 0;
    int depth = count - start;
    if (depth > LO_MAX_FRAMES || count == LO_BACKTRACE_CAPACITY) {
        *truncated = 1;
        if (depth > LO_MAX_FRAMES) depth = LO_MAX_FRAMES;
    }
    memcpy(out, frames + start, (size_t)depth * sizeof(uintptr_t));
    return depth;
}

int lo_unwind_current_for_measurement(int cold, uintptr_t *out) {
    void *frames[LO_MAX_FRAMES];
    sigset_t saved;
    lo_unwind_enter_blocking(&saved);
    if (cold) unw_flush_cache(unw_local_addr_space, 0, 0);
    int count = unw_backtrace(frames, LO_MAX_FRAMES);
    lo_unwind_exit_blocking(&saved);
    for (int i = 0; i < count; i++) out[i] = (uintptr_t)frames[i];
    return count;
}

void lo_unwind_warm(void) {
    void *frames[LO_BACKTRACE_CAPACITY];
    sigset_t saved;
    lo_unwind_enter_blocking(&saved);
    (void)unw_backtrace(frames, LO_BACKTRACE_CAPACITY);
    lo_unwind_exit_blocking(&saved);
}

void lo_unwind_warm_in_handler(void) {
    void *frames[LO_BACKTRACE_CAPACITY];
    if (!lo_unwind_enter_bounded()) return;
    (void)unw_backtrace(frames, LO_BACKTRACE_CAPACITY);
    lo_unwind_exit();
}
