// Swift async call stacks: a sample taken in an async function carries its awaiting callers.
//
// Swift runs an async function as a series of partial functions, each entered by a tail call, so
// the machine stack holds only the one running now, above the executor that resumed the task.
// Its callers wait in async contexts: a context's first word is its caller's context (0 for the
// task's first function), its second the address where the caller resumes, the entry of one of
// the caller's partial functions. The walk finds the innermost async frame's context just below
// its saved rbp (walk.c); its callers follow from there. A partial function that calls only
// synchronous code may set up no frame: then it is the frame the runtime's executor called, and
// its context is the r14 it runs with (the walk follows r14 through the call-frame rules). That
// context is likely, not sure, and is read with process_vm_readv until the chain proves itself.
//
// While the running task is current on this thread (its thread-local value is set only while it
// runs here), no other thread runs it, and the frames and contexts of its callers stay: the chain
// can be read directly. The chain must end, within a bounded number of steps, at a context inside
// the task's own allocation (where the runtime places a task's first context), or it is not used.
//
// A child task (async let, task group) continues into its parent: the parent's record follows
// the child's header in the runtime's layout, and the parent waits suspended in a known function
// with a known context. The parent outlives its child, so its header is read directly; it runs on
// another thread when it is not suspended, so the contexts it points to are read with
// process_vm_readv, which reports a bad address instead of faulting, and used only when the parent
// was suspended throughout. A chain read that way is kept per thread for the next samples, as long
// as the parent waits at the same point. A parent that runs beside its child (async let) is named
// by what the thread last read of it while it waited: the function that started the child stays.

#include "lo_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#define LO_MAX_ASYNC_HOPS 64
// A task's first context lies within its allocation, this close after its header.
#define LO_FIRST_CONTEXT_REACH 4096

static _Atomic int g_layout; // 1 when the runtime's layout is the one above
static pid_t g_pid;
// The executable range of libswift_Concurrency, whose executor calls a task's partial functions.
static uintptr_t g_runtime_low, g_runtime_high;

static int lo_find_runtime(struct dl_phdr_info *info, size_t size, void *unused) {
    (void)size;
    (void)unused;
    if (info->dlpi_name == NULL || strstr(info->dlpi_name, "libswift_Concurrency") == NULL) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || !(segment->p_flags & PF_X)) continue;
        g_runtime_low = info->dlpi_addr + segment->p_vaddr;
        g_runtime_high = g_runtime_low + segment->p_memsz;
        return 1;
    }
    return 0;
}

static void lo_map_chain_blocks(void);

int lo_async_in_runtime(uintptr_t address) { return address >= g_runtime_low && address < g_runtime_high; }

void lo_async_prepare(void) {
    g_pid = getpid();
    lo_map_chain_blocks();
    // The runtime may have been loaded since the last session.
    if (g_runtime_high == 0) dl_iterate_phdr(lo_find_runtime, NULL);
    // Without Swift's concurrency runtime (a C program, a shell) no task runs: two failed look-ups
    // through every object are not made. One loaded later is looked for again.
    if (g_runtime_high == 0 || atomic_load(&g_layout) != 0) return;
    const uint32_t *version = dlsym(RTLD_DEFAULT, "_swift_concurrency_debug_internal_layout_version");
    const size_t *size = dlsym(RTLD_DEFAULT, "_swift_concurrency_debug_asyncTaskSize");
    int known = version != NULL && *version == 1 && size != NULL && *size == LO_TASK_SIZE;
    atomic_store(&g_layout, known ? 1 : -1);
}

int lo_task_layout_known(void) {
    if (atomic_load(&g_layout) == 0) lo_async_prepare();
    return atomic_load(&g_layout) == 1;
}

// Reads `length` bytes at `address` of this process without faulting: 0 when they could not be read.
static int lo_safe_read(uintptr_t address, void *buffer, size_t length) {
    struct iovec local = {buffer, length};
    struct iovec remote = {(void *)address, length};
    return syscall(SYS_process_vm_readv, g_pid, &local, 1UL, &remote, 1UL, 0UL) == (long)length;
}

// Follows the chain from `context` (the awaiting callers' resume addresses into `out`), directly
// or through safe reads. Returns the number written, or -1 when the chain does not end inside
// `task`'s allocation within bounds.
static int lo_follow(uintptr_t task, uintptr_t context, int safe, uintptr_t *out, int capacity) {
    int count = 0;
    for (int hop = 0; hop < LO_MAX_ASYNC_HOPS; hop++) {
        if (context == 0 || (context & 7) != 0) return -1;
        uintptr_t words[2];
        if (safe) {
            if (!lo_safe_read(context, words, sizeof words)) return -1;
        } else {
            words[0] = ((const uintptr_t *)context)[0];
            words[1] = ((const uintptr_t *)context)[1];
        }
        // The first function's context: its resume address is the runtime's task completion.
        if (words[0] == 0) return context > task && context - task < LO_FIRST_CONTEXT_REACH ? count : -1;
        if (count < capacity) out[count++] = words[1];
        context = words[0];
    }
    return -1;
}

// A chain read through process_vm_readv (a system call a step), kept per thread for the next
// sample: the callers of a running function stay while it runs, and a suspended parent's while it
// waits at the same point. Each generation of parents has its own: a task nested in several
// (a test runner's task groups, a server's services) reads each parent's chain once, not every
// sample (one shared entry made every sample miss at every generation: 120 system calls, 200 µs).
#define LO_CACHED_CALLERS 64
#define LO_CACHED_PARENTS 16
typedef struct lo_chain_cache {
    uintptr_t key[3];
    int count; // -1: the chain was not usable
    uintptr_t callers[LO_CACHED_CALLERS];
} lo_chain_cache;
// A thread's caches live in a block of a pool mapped once (static TLS is scarce: a loader that
// runs an audit library sets the initial threads' TLS up before it loads the agent, and leaves
// room for a few hundred bytes of it). A thread takes a block at its first sample; with every
// block taken, a thread reads the chains at each sample.
#define LO_CHAIN_BLOCKS 1024
typedef struct lo_chain_block {
    lo_chain_cache own;
    lo_chain_cache parents[LO_CACHED_PARENTS];
} lo_chain_block;
static _Atomic(lo_chain_block *) g_chain_blocks;
static atomic_uint g_chain_blocks_taken;
static __thread lo_chain_block *t_chains __attribute__((tls_model("initial-exec")));

static void lo_map_chain_blocks(void) {
    if (atomic_load(&g_chain_blocks) != NULL) return;
    void *pool = mmap(NULL, sizeof(lo_chain_block) * LO_CHAIN_BLOCKS, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pool == MAP_FAILED) return;
    lo_chain_block *expected = NULL;
    if (!atomic_compare_exchange_strong(&g_chain_blocks, &expected, (lo_chain_block *)pool)) {
        munmap(pool, sizeof(lo_chain_block) * LO_CHAIN_BLOCKS);
    }
}

// In a handler: this thread's block, taken now if it has none; NULL when none is left.
static lo_chain_block *lo_thread_chains(void) {
    if (t_chains) return t_chains;
    lo_chain_block *pool = atomic_load_explicit(&g_chain_blocks, memory_order_acquire);
    if (!pool || atomic_load_explicit(&g_chain_blocks_taken, memory_order_relaxed) >= LO_CHAIN_BLOCKS) return NULL;
    unsigned slot = atomic_fetch_add_explicit(&g_chain_blocks_taken, 1, memory_order_relaxed);
    if (slot >= LO_CHAIN_BLOCKS) return NULL;
    t_chains = &pool[slot];
    return t_chains;
}

static int lo_cached(const lo_chain_cache *cache, uintptr_t a, uintptr_t b, uintptr_t c) {
    return cache->key[0] == a && cache->key[1] == b && cache->key[2] == c;
}

static void lo_remember_chain(lo_chain_cache *cache, uintptr_t a, uintptr_t b, uintptr_t c, const uintptr_t *callers, int count) {
    cache->key[0] = a;
    cache->key[1] = b;
    cache->key[2] = c;
    cache->count = count > LO_CACHED_CALLERS ? LO_CACHED_CALLERS : count;
    for (int i = 0; i < cache->count; i++) cache->callers[i] = callers[i];
}

int lo_async_callers(uintptr_t task, uintptr_t context, int verified, uintptr_t *out, int capacity) {
    if (task == 0 || capacity <= 0) return 0;
    lo_chain_block *chains = lo_thread_chains();
    // Without a block of its own, a thread's chains are read each time: an emptied scratch cache.
    lo_chain_cache scratch;
    scratch.key[0] = scratch.key[1] = scratch.key[2] = 0;
    scratch.count = -1;
    lo_chain_cache *own = chains ? &chains->own : &scratch;
    int count;
    if (verified) {
        count = lo_follow(task, context, 0, out, capacity);
    } else if (lo_cached(own, task, context, 0)) {
        count = own->count < capacity ? own->count : capacity;
        for (int i = 0; i < count; i++) out[i] = own->callers[i];
    } else {
        // A context found in r14 is a likely one, not a sure one: read it without trusting it.
        count = lo_follow(task, context, 1, out, capacity);
        lo_remember_chain(own, task, context, 0, out, count);
    }
    if (count < 0) return 0;
    if (atomic_load_explicit(&g_layout, memory_order_relaxed) != 1) return count;
    // Into the parents of a child task, each suspended where it awaits its children.
    uint32_t flags = *(const uint32_t *)(task + LO_TASK_FLAGS);
    // A child's parent outlives it, so the parent's header may be read directly; the contexts it
    // points to change while the parent runs, and are read safely.
    // Only while there is room for them: a stack already full reads no further parent.
    for (int generation = 0; generation < LO_MAX_ASYNC_HOPS && (flags & LO_TASK_FLAG_CHILD) && count < capacity;
         generation++) {
        uintptr_t parent = *(const uintptr_t *)(task + LO_TASK_SIZE);
        if (parent == 0 || (parent & 15) != 0) break;
        const volatile uint32_t *status = (const volatile uint32_t *)(parent + LO_TASK_STATUS);
        lo_chain_cache *cache = &scratch;
        if (chains) cache = &chains->parents[generation < LO_CACHED_PARENTS ? generation : LO_CACHED_PARENTS - 1];
        else scratch.key[0] = scratch.key[1] = scratch.key[2] = 0;
        const uintptr_t *chain;
        int found;
        if (*status & LO_TASK_STATUS_RUNNING) {
            // A parent that runs on beside its child (async let) cannot be read now; the function
            // that started the child, and its callers, stay while the child lives (a structured
            // child ends before its scope does), so what this thread last read of it still names
            // them, at the point where it awaited then.
            if (cache->key[0] != parent || cache->count < 0) break;
            chain = cache->callers;
            found = cache->count;
            if (count < capacity) out[count++] = cache->key[2];
            for (int i = 0; i < found && count < capacity; i++) out[count++] = chain[i];
            task = parent;
            flags = *(const uint32_t *)(parent + LO_TASK_FLAGS);
            continue;
        }
        uintptr_t function = *(const volatile uintptr_t *)(parent + LO_TASK_RESUME_FUNCTION);
        uintptr_t resume_context = *(const volatile uintptr_t *)(parent + LO_TASK_RESUME_CONTEXT);
        uintptr_t read[LO_CACHED_CALLERS];
        if (lo_cached(cache, parent, resume_context, function)) {
            chain = cache->callers;
            found = cache->count;
        } else {
            found = lo_follow(parent, resume_context, 1, read, LO_CACHED_CALLERS);
            // Still suspended where it was read, so the chain read is the one it waits in.
            if (found >= 0 && (*status & LO_TASK_STATUS_RUNNING)) found = -1;
            lo_remember_chain(cache, parent, resume_context, function, read, found);
            chain = read;
        }
        if (found < 0) break;
        if (count < capacity) out[count++] = function;
        for (int i = 0; i < found && count < capacity; i++) out[count++] = chain[i];
        task = parent;
        flags = *(const uint32_t *)(parent + LO_TASK_FLAGS);
    }
    return count;
}
