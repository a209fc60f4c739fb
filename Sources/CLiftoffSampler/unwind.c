// libunwind calls, and the exclusion between unwinds in handlers and outside them.
//
// An unwind outside a handler (warming a thread, `lo_capture_current_stack` without a session) goes through the
// C library's dl_iterate_phdr and so takes libunwind's lock and then the loader's. A thread
// interrupted while holding the loader's lock (inside dlopen or dlclose) would wait in its
// handler for libunwind's lock: a deadlock. So while such an unwind runs, handlers do not
// enter libunwind: one that cannot enter within LO_UNWIND_WAIT_NS gives up and counts the
// sample as skipped, and the interrupted thread resumes and releases what it holds. Handlers
// among themselves run concurrently: they never take the loader's lock (see snapshot.c).

// libunwind is linked into a program that links Liftoff, and its symbols, weak here, resolve when
// the program loads. The injected agent does not link it, so that a process pays nothing for it
// (libunwind and liblzma mapped and relocated, a warm-up unwind per thread): a handler whose walk
// needs libunwind then keeps the interrupted program counter alone and asks for it, and the
// sampler thread loads it (lo_unwind_load_if_wanted). Handlers step that copy from the signal's
// context (unw_init_local2, unw_step), which uses no thread-local storage: a library loaded later
// gets its thread-local storage from malloc on first use, which a handler must not call.

#include "lo_internal.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <ucontext.h>

extern int unw_backtrace(void **, int) __attribute__((weak));
extern void unw_flush_cache(unw_addr_space_t, unw_word_t, unw_word_t) __attribute__((weak));
extern unw_addr_space_t unw_local_addr_space __attribute__((weak));

// libunwind's stepping functions as the sampler thread loaded them.
typedef struct lo_loaded_unwind {
    int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
} lo_loaded_unwind;
static lo_loaded_unwind g_loaded;
enum { LO_UNWIND_ABSENT, LO_UNWIND_LOADED, LO_UNWIND_UNAVAILABLE };
static _Atomic int g_load_state;
static _Atomic int g_load_wanted;

int lo_unwind_linked(void) { return unw_backtrace != NULL; }

static void lo_note_unwinder(void *function);

__attribute__((noinline)) int lo_unwind_backtrace(void **frames, int limit) {
    if (!lo_unwind_linked() || limit < 1) return 0;
    lo_note_unwinder((void *)unw_backtrace);
    void *found[LO_MAX_FRAMES + 2];
    int count = unw_backtrace(found, limit + 1 < LO_MAX_FRAMES + 2 ? limit + 1 : LO_MAX_FRAMES + 2);
    // The first is this function's own frame.
    if (count <= 1) return 0;
    memcpy(frames, found + 1, (size_t)(count - 1) * sizeof(void *));
    return count - 1;
}

// ---- where libunwind's code lies --------------------------------------------------------
//
// libunwind checks an address it is unsure of by writing a byte from it to a pipe it made, in the
// process's descriptor table, and remakes the pipe (closing its old numbers first) wherever a read
// from it fails. Made from a handler, the pipe took numbers among the program's; a program that
// closes numbers and dup2s over them lost files to it. The pipe libunwind asks for is a stand-in
// instead (unwind_pipe.c), known by the address of its caller: libunwind's code, noted here.

static _Atomic uintptr_t g_unwinder_start, g_unwinder_end;

typedef struct lo_code_search {
    uintptr_t address, start, end;
} lo_code_search;

static int lo_find_code(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    lo_code_search *search = data;
    uintptr_t start = UINTPTR_MAX, end = 0;
    int holds = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type != PT_LOAD || !(header->p_flags & PF_X)) continue;
        uintptr_t low = info->dlpi_addr + header->p_vaddr, high = low + header->p_memsz;
        if (low < start) start = low;
        if (high > end) end = high;
        holds |= search->address >= low && search->address < high;
    }
    if (!holds) return 0;
    search->start = start;
    search->end = end;
    return 1;
}

// Outside handlers (dl_iterate_phdr takes the loader's lock): notes the code of the object that
// holds `function`, libunwind's.
static void lo_note_unwinder(void *function) {
    if (function == NULL || atomic_load_explicit(&g_unwinder_end, memory_order_acquire) != 0) return;
    lo_code_search search = {.address = (uintptr_t)function};
    if (!dl_iterate_phdr(lo_find_code, &search)) return;
    atomic_store_explicit(&g_unwinder_start, search.start, memory_order_relaxed);
    atomic_store_explicit(&g_unwinder_end, search.end, memory_order_release);
}

int lo_called_by_unwinder(const void *return_address) {
    uintptr_t end = atomic_load_explicit(&g_unwinder_end, memory_order_acquire);
    uintptr_t address = (uintptr_t)return_address;
    return end != 0 && address >= atomic_load_explicit(&g_unwinder_start, memory_order_relaxed) && address < end;
}

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

#define LO_SYMBOL_NAME_(name) #name
#define LO_SYMBOL_NAME(name) LO_SYMBOL_NAME_(name)

void lo_unwind_load_if_wanted(int own_files) {
    if (!atomic_load(&g_load_wanted) || atomic_load(&g_load_state) != LO_UNWIND_ABSENT || lo_unwind_linked()) return;
    void *library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    lo_loaded_unwind loaded = {0};
    if (library != NULL) {
        loaded.init_local2 = (int (*)(unw_cursor_t *, unw_context_t *, int))dlsym(library, LO_SYMBOL_NAME(unw_init_local2));
        loaded.step = (int (*)(unw_cursor_t *))dlsym(library, LO_SYMBOL_NAME(unw_step));
        loaded.get_reg = (int (*)(unw_cursor_t *, unw_regnum_t, unw_word_t *))dlsym(library, LO_SYMBOL_NAME(unw_get_reg));
    }
    if (loaded.init_local2 == NULL || loaded.step == NULL || loaded.get_reg == NULL) {
        atomic_store(&g_load_state, LO_UNWIND_UNAVAILABLE);
        return;
    }
    g_loaded = loaded;
    lo_note_unwinder((void *)loaded.step);
    // libunwind's global state includes a pipe it checks addresses through when it steps a frame
    // by its frame pointer, and it reopens that pipe (closing the old numbers) wherever the pipe
    // is not valid. Made by a thread with a descriptor table of its own, the pipe would be
    // invalid in the program's threads, whose handlers would then close the program's files at
    // those numbers. So such a thread leaves the setup to the first handler that steps, in the
    // program's table; otherwise one unwind of this thread, outside any handler, does it.
    if (own_files) {
        atomic_store_explicit(&g_load_state, LO_UNWIND_LOADED, memory_order_release);
        return;
    }
    sigset_t saved;
    lo_unwind_enter_blocking(&saved);
    ucontext_t context;
    unw_cursor_t cursor;
    if (getcontext(&context) == 0 && loaded.init_local2(&cursor, (unw_context_t *)&context, 0) == 0) {
        for (int i = 0; i < 4 && loaded.step(&cursor) > 0; i++) {
        }
    }
    lo_unwind_exit_blocking(&saved);
    atomic_store_explicit(&g_load_state, LO_UNWIND_LOADED, memory_order_release);
}

// Without a linked libunwind: steps the copy the sampler thread loaded, from the signal's context.
static int lo_unwind_interrupted_loaded(void *context, uintptr_t *out, int *truncated) {
    if (atomic_load_explicit(&g_load_state, memory_order_acquire) != LO_UNWIND_LOADED) {
        atomic_store(&g_load_wanted, 1);
        out[0] = lo_context_pc(context);
        *truncated = 1;
        return 1;
    }
    if (!lo_unwind_enter_bounded()) return -1;
    unw_cursor_t cursor;
    int depth = 0;
    lo_t_sampling = 1;
    if (g_loaded.init_local2(&cursor, (unw_context_t *)context, UNW_INIT_SIGNAL_FRAME) == 0) {
        do {
            unw_word_t ip = 0;
            if (g_loaded.get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
            if (depth == LO_MAX_FRAMES) {
                *truncated = 1;
                break;
            }
            out[depth++] = (uintptr_t)ip;
        } while (g_loaded.step(&cursor) > 0);
    }
    lo_t_sampling = 0;
    lo_unwind_exit();
    return depth;
}

int lo_unwind_interrupted(void *context, uintptr_t *out, int *truncated) {
    *truncated = 0;
    if (!lo_unwind_linked()) return lo_unwind_interrupted_loaded(context, out, truncated);
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
    if (!lo_unwind_linked()) return 0;
    lo_note_unwinder((void *)unw_backtrace);
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
    if (!lo_unwind_linked()) return;
    lo_note_unwinder((void *)unw_backtrace);
    void *frames[LO_BACKTRACE_CAPACITY];
    sigset_t saved;
    lo_unwind_enter_blocking(&saved);
    (void)unw_backtrace(frames, LO_BACKTRACE_CAPACITY);
    lo_unwind_exit_blocking(&saved);
}

void lo_unwind_warm_in_handler(void) {
    if (!lo_unwind_linked()) return;
    void *frames[LO_BACKTRACE_CAPACITY];
    if (!lo_unwind_enter_bounded()) return;
    (void)unw_backtrace(frames, LO_BACKTRACE_CAPACITY);
    lo_unwind_exit();
}
