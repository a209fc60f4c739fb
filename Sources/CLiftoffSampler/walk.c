// The handler's stack walk.
//
// From the interrupted registers, each frame's caller is found with the rule of its code (cfi.c):
// the canonical frame address (CFA) from rsp, rbp or rbx, the return address below it, the caller's
// rbp and rbx where the rule says they were saved, or else unchanged. Where Swift keeps frame pointers that rule is
// a frame-pointer step; where the C library does not, it is what finds the caller. A frame in code
// without call-frame information is stepped through its frame pointer, as libunwind does (a first
// frame there is read for its prologue and epilogue). Code outside every known object (generated
// code), or a rule the walk cannot follow (a CFA computed from memory), sends the whole sample to
// libunwind.
//
// Every read is bounds-checked against the thread's stack: from the interrupted stack pointer (less
// the red zone below it) up to
// the top of the stack, which for a thread glibc created is its thread pointer (glibc keeps the
// thread's descriptor at the top of its stack block) and for the main thread the top of [stack],
// found from the auxiliary vector before sampling. A stack that fits neither goes to libunwind. Each CFA
// must lie above the previous one, so a walk always ends.

#include "lo_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <ucontext.h>

#define LO_MAX_THREAD_STACK (64ull << 20)
#define LO_MAX_MAIN_STACK (1ull << 30)
#define LO_RED_ZONE 128

static uintptr_t g_main_stack_low, g_main_stack_high;

void lo_walk_prepare(void) {
    lo_cfi_touch_cache();
    if (g_main_stack_high != 0) return;
    // The kernel copies the program's file name (AT_EXECFN) first, to the top of [stack], just
    // below one null pointer: the page boundary above its end is where [stack] ends. No file is
    // read for it.
    const char *file_name = (const char *)getauxval(AT_EXECFN);
    if (file_name == NULL) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t high = ((uintptr_t)file_name + strlen(file_name) + 1 + sizeof(void *) + page - 1) & ~(page - 1);
    if (high == 0) return;
    struct rlimit limit;
    uint64_t size = LO_MAX_MAIN_STACK;
    if (getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < size) size = limit.rlim_cur;
    g_main_stack_low = high - size;
    g_main_stack_high = high;
}

#if defined(__x86_64__)

static uintptr_t lo_thread_pointer(void) {
    uintptr_t pointer;
    __asm__("mov %%fs:0, %0" : "=r"(pointer));
    return pointer;
}

// The top of the stack `sp` lies in, or 0 when it is not known.
static uintptr_t lo_stack_top(uintptr_t sp) {
    if (sp >= g_main_stack_low && sp < g_main_stack_high) return g_main_stack_high;
    uintptr_t top = lo_thread_pointer();
    if (top > sp && top - sp <= LO_MAX_THREAD_STACK) return top;
    return 0;
}

typedef struct lo_bounds {
    uintptr_t low, high;
} lo_bounds;

static int lo_load(const lo_bounds *bounds, uintptr_t address, uintptr_t *value) {
    if (address < bounds->low || address > bounds->high - 8 || (address & 7) != 0) return 0;
    *value = *(const uintptr_t *)address;
    return 1;
}

// The rule for `address`: 1 when its code has call-frame information (the rule's kind is NONE
// when the walk cannot follow it), 0 when it has none.
__thread int lo_t_walk_uncached __attribute__((tls_model("initial-exec")));

static int lo_rule_for(uintptr_t address, lo_rule *rule) {
    if (!lo_t_walk_uncached && lo_cfi_cached(address, rule)) return 1;
    const lo_object *object = lo_object_for(address);
    if (object == NULL || !lo_cfi_find(object, address, rule)) return 0;
    lo_cfi_remember(address, rule);
    return 1;
}

// The rule of a frame whose code has no call-frame information, from the code itself. A caller's
// frame is past its prologue (it made a call), so its rbp is its frame pointer. A first frame may be
// at the function's first instruction (endbr64 or push %rbp: the return address is at rsp), between
// the push and `mov %rsp,%rbp`, at a `ret`, or at a tail call's `jmp` right after `pop %rbp`; anywhere
// else the frame is set up. The bytes read lie in the object's executable range; code outside every
// known object is left to libunwind.
static int lo_guess_rule(uintptr_t pc, int exact, lo_rule *rule) {
    const lo_object *object = lo_object_for(pc);
    if (object == NULL) return 0;
    rule->kind = LO_RULE_FRAME;
    rule->ra_offset = -8;
    rule->cfa_reg = LO_CFA_RBP;
    rule->cfa_offset = 16;
    rule->fp_offset = -16;
    rule->bx_offset = 0;
    rule->async = 0;
    // Where such code saved r14, if it did, is not known: taken as unchanged, which is safe, as a
    // context found in r14 is read without trusting it.
    rule->r14_offset = 0;
    if (!exact) return 1;
    const uint8_t *code = (const uint8_t *)pc;
    int after = pc + 4 <= object->end, before = pc > object->start;
    int entry = (after && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa) ||
                (after && code[0] == 0x55);
    int pushed = after && before && code[-1] == 0x55 && code[0] == 0x48 && code[1] == 0x89 && code[2] == 0xe5;
    int returns = after && code[0] == 0xc3;
    int tail_call = after && before && code[-1] == 0x5d && code[0] == 0xe9;
    if (entry || returns || tail_call || pushed) {
        rule->cfa_reg = LO_CFA_RSP;
        rule->cfa_offset = pushed ? 16 : 8;
        rule->fp_offset = 0;
    }
    return 1;
}

int lo_walk_interrupted(void *context, uintptr_t *out, int *truncated, int *guessed, lo_async_frame *async) {
    *truncated = 0;
    *guessed = 0;
    async->at = -1;
    async->context = 0;
    async->verified = 0;
    ucontext_t *uc = (ucontext_t *)context;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    uintptr_t bx = (uintptr_t)uc->uc_mcontext.gregs[REG_RBX];
    // r14 as each frame ran with it, while it can be followed: a Swift async function keeps its
    // async context there.
    uintptr_t r14 = (uintptr_t)uc->uc_mcontext.gregs[REG_R14];
    int r14_known = 1;
    int r14_guess = 0; // async->at came from r14 and may yet be replaced
    uintptr_t top = lo_stack_top(sp);
    if (top == 0) return -1;
    // An epilogue's rule may still name a slot just popped, below the stack pointer: the red zone,
    // which the kernel leaves intact when it delivers a signal.
    lo_bounds bounds = {sp - LO_RED_ZONE, top};
    int depth = 0, exact = 1;
    for (;;) {
        if (pc == 0) break;
        if (depth == LO_MAX_FRAMES) {
            *truncated = 1;
            break;
        }
        out[depth++] = pc;
        // A return address follows its call: the call's own rule is the one of the byte before.
        lo_rule rule;
        if (!lo_rule_for(exact ? pc : pc - 1, &rule)) {
            // No call-frame information (Swift emits none for some small functions): the
            // frame-pointer chain, but at a first frame only once its prologue set it up.
            if (!lo_guess_rule(pc, exact, &rule)) return -1;
            *guessed = 1;
        }
        if (rule.kind == LO_RULE_NONE) return -1;
        if (rule.kind == LO_RULE_OUTERMOST) break;
        if (rule.kind == LO_RULE_SIGNAL) {
            // A signal frame: the interrupted registers are in the ucontext at the stack pointer.
            const ucontext_t *inner = (const ucontext_t *)sp;
            uintptr_t next_pc, next_sp, next_fp, next_bx;
            uintptr_t gregs = (uintptr_t)&inner->uc_mcontext.gregs[0];
            if (!lo_load(&bounds, gregs + REG_RIP * 8, &next_pc) || !lo_load(&bounds, gregs + REG_RSP * 8, &next_sp) ||
                !lo_load(&bounds, gregs + REG_RBP * 8, &next_fp) || !lo_load(&bounds, gregs + REG_RBX * 8, &next_bx) ||
                next_sp <= sp || next_sp >= bounds.high) {
                break;
            }
            r14_known = lo_load(&bounds, gregs + REG_R14 * 8, &r14);
            pc = next_pc;
            sp = next_sp;
            fp = next_fp;
            bx = next_bx;
            exact = 1;
            continue;
        }
        uintptr_t base = rule.cfa_reg == LO_CFA_RBP ? fp : rule.cfa_reg == LO_CFA_RBX ? bx : sp;
        uintptr_t cfa = base + (uintptr_t)(intptr_t)rule.cfa_offset;
        uintptr_t ra;
        if (cfa <= sp || cfa > bounds.high || !lo_load(&bounds, cfa + (uintptr_t)(intptr_t)rule.ra_offset, &ra)) break;
        // The innermost Swift async frame: where its awaiting callers are found (async.c). One that
        // set up its frame keeps its context below the saved rbp; one that did not (a partial
        // function that only calls synchronous code) is the frame the runtime's executor called,
        // and still has its context in r14. The runtime also calls synchronous code of the
        // program (the closure of `TaskLocal.withValue`): a frame called from the runtime is taken
        // only until one further out proves to be async, or one further out is also called from
        // the runtime (the partial function that called `withValue`, which the executor called).
        uintptr_t context;
        if (async->at < 0 || r14_guess) {
            if (rule.async && lo_load(&bounds, cfa - 24, &context)) {
                async->at = depth - 1;
                async->context = context;
                async->verified = 1;
                r14_guess = 0;
            } else if (r14_known && r14 != 0 && lo_async_in_runtime(ra - 1) && !lo_async_in_runtime(pc)) {
                async->at = depth - 1;
                async->context = r14;
                r14_guess = 1;
            }
        }
        if (rule.fp_offset != 0) {
            // Swift's async frames mark a saved rbp with bit 60; an address never has it.
            if (!lo_load(&bounds, cfa + (uintptr_t)(intptr_t)rule.fp_offset, &fp)) break;
            fp &= ~(1ull << 60);
        }
        if (rule.bx_offset != 0 && !lo_load(&bounds, cfa + (uintptr_t)(intptr_t)rule.bx_offset, &bx)) break;
        if (rule.r14_offset == LO_R14_LOST) {
            r14_known = 0;
        } else if (rule.r14_offset != 0) {
            r14_known = lo_load(&bounds, cfa + (uintptr_t)(intptr_t)rule.r14_offset, &r14);
        }
        sp = cfa;
        pc = ra;
        exact = 0;
    }
    return depth;
}

#else

int lo_walk_interrupted(void *context, uintptr_t *out, int *truncated, int *guessed, lo_async_frame *async) {
    (void)context;
    (void)out;
    async->at = -1;
    async->context = 0;
    *truncated = 0;
    *guessed = 0;
    return -1; // libunwind walks every stack on this architecture
}

#endif
