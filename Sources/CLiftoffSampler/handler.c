// The SIGPROF handler, and its side of stack requests from other threads (capture.c asks).
//
// The handler stays installed for the life of the process: a SIGPROF still in flight after
// `stop` must meet a handler, since the default action would end the process.

#include "lo_internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_installed;
static _Atomic int g_active;     // handlers capture only while set
static __thread int t_warming __attribute__((tls_model("initial-exec")));
static _Atomic int g_verify; // walk each stack both ways and compare (tests)

// The first stack on which the two walks disagreed, while verifying.
static _Atomic int g_mismatch_state; // 0 none, 1 being written, 2 written
static int g_mismatch_depth[2];
static uintptr_t g_mismatch_frames[2][LO_MAX_FRAMES];

// Each request has a sequence number; a handler answers into the buffer of the request it saw
// and marks that number done, so a late answer to an abandoned request can never be taken for
// the answer to the next one.
static _Atomic pid_t g_request_tid;
static _Atomic uint64_t g_request_seq;
static _Atomic uint64_t g_request_done;
static int g_request_count[2];
static uintptr_t g_request_frames[2][LO_MAX_FRAMES];

// A stack request's signal is queued with this value (SI_QUEUE), the sampler's with its tag in
// si_errno (LO_SAMPLER_SIGNAL_TAG) and its sending time: a handler knows which sent the signal it runs for. A request answered by a
// handler that ran for the sampler's signal may still get its own signal afterwards; that one is
// no sample, and its slot is marked so the sampler thread does not count it.
#define LO_REQUEST_SIGNAL_TAG 0x4c4f5251 /* "LORQ" */

static int lo_sent_by_request(const siginfo_t *info) {
    return info != NULL && info->si_code == SI_QUEUE && info->si_errno != LO_SAMPLER_SIGNAL_TAG &&
           info->si_value.sival_int == LO_REQUEST_SIGNAL_TAG;
}

// The program's own SIGPROF handler, where the agent keeps the sampler's in its place (a program
// with its own profiler). Signals that neither the sampler thread nor a stack request sent (an
// ITIMER_PROF tick, a kill) go to it; the sampler's own never do, so the program's profiler counts
// no tick it did not ask for. Written with the signal blocked on the writing thread only, so a
// handler on another thread may read a torn action: the chained pointer is published last.
static struct sigaction g_chained;
static _Atomic int g_chain_set;
static _Atomic uint64_t g_chained_count;

static int lo_sent_by_sampler(const siginfo_t *info) {
    return info != NULL && info->si_code == SI_QUEUE && info->si_errno == LO_SAMPLER_SIGNAL_TAG && info->si_pid == getpid();
}

// ---- Retakes: a sample taken where the thread is, not where it next enters the kernel ------
//
// The sampler thread's signal reaches a thread running on another CPU by an interrupt between
// processors, which takes microseconds (tens in a virtual machine). Meanwhile the thread's next
// system call sees the signal pending and takes it on its way out: a thread that makes a system
// call every few microseconds answers nearly every signal there, and a loop that spends 30 % of its
// time in clock_gettime was found there in 97 % of its samples. So a handler for the sampler's
// signal that finds its thread just back from a completed system call takes no sample: it arms a
// timer on this CPU, aimed at this thread, and the sample is taken when that fires, LO_RETAKE_DELAY_NS
// and a random part of LO_RETAKE_JITTER_NS later, by an interrupt of the thread itself wherever it
// then is (as perf's timer does). The answer keeps the first handler's time, so that how late it
// came still says whether the thread waited for a core. A thread that was in a long system call is
// found there again. A thread preempted since the signal was sent is retaken too, wherever the
// signal found it (lo_retakes).
//
// One kernel timer per thread, made on its first retake (timer_create, a system call, is safe in a
// handler), kept in a table the sampler thread reaps when the thread has ended.
#define LO_RETAKE_SIGNAL_TAG 0x4c4f5254 /* "LORT" */
#define LO_RETAKE_DELAY_NS 50000
#define LO_RETAKE_JITTER_NS 50000
#define LO_RETAKE_TIMERS 1024

typedef struct lo_retake_timer {
    _Atomic pid_t tid; // 0: free; -1: being written
    int timer;
} lo_retake_timer;

static lo_retake_timer g_retake_timers[LO_RETAKE_TIMERS];
static _Atomic uint32_t g_retake_generation = 1; // a new one after fork: timers are not inherited
static __thread uint32_t t_retake_generation __attribute__((tls_model("initial-exec")));
static __thread int t_retake_timer __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_retake_first_ns __attribute__((tls_model("initial-exec")));   // 0: none outstanding
static __thread uint64_t t_retake_handler_ns __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_retake_random __attribute__((tls_model("initial-exec"))); // xorshift64 state
static __thread int t_signals_itself __attribute__((tls_model("initial-exec")));

// Whether the thread waited since the sampler's signal was sent, for a core or in a call: its CPU
// time fell behind the clock by more than LO_WAITED_NS since (lo_retakes says what follows).
#define LO_WAITED_NS 5000
static int lo_waited_since_sent(const siginfo_t *info, uint64_t now_ns) {
    uint64_t behind_then = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
    uint64_t cpu_now = lo_thread_cpu_ns();
    if (cpu_now == 0 || now_ns < cpu_now) return 0;
    uint64_t behind_now = now_ns - cpu_now;
    return behind_now > behind_then && behind_now - behind_then > LO_WAITED_NS;
}

static int lo_sent_by_retake(const siginfo_t *info) {
    return info != NULL && info->si_code == SI_TIMER && info->si_value.sival_int == LO_RETAKE_SIGNAL_TAG;
}

// Whether the interrupted thread just came back from a system call that completed (not one cut
// short, which it waits in: lo_interrupted_in_syscall).
static int lo_returned_from_call(void *context) {
    if (lo_interrupted_in_syscall(context)) return 0;
    uintptr_t pc = lo_context_pc(context);
    uintptr_t offset = pc & 0xfff;
#if defined(__x86_64__)
    return offset >= 2 && *(const uint16_t *)(pc - 2) == 0x050f;
#elif defined(__aarch64__)
    return offset >= 4 && *(const uint32_t *)(pc - 4) == 0xd4000001u;
#else
    return 0;
#endif
}

// Arms the calling thread's retake timer (made on first use); 0 when there is none to arm.
static int lo_retake_arm(void) {
    uint32_t generation = atomic_load_explicit(&g_retake_generation, memory_order_relaxed);
    if (t_retake_generation == generation + 0x80000000u) return 0; // no timer to be had
    if (t_retake_generation != generation) {
        int entry = -1;
        for (int i = 0; i < LO_RETAKE_TIMERS; i++) {
            pid_t expected = 0;
            if (atomic_compare_exchange_strong(&g_retake_timers[i].tid, &expected, -1)) {
                entry = i;
                break;
            }
        }
        struct sigevent event;
        memset(&event, 0, sizeof event);
        event.sigev_notify = SIGEV_THREAD_ID;
        event.sigev_signo = SIGPROF;
        event.sigev_value.sival_int = LO_RETAKE_SIGNAL_TAG;
        event._sigev_un._tid = lo_current_tid();
        int timer = -1;
        if (entry < 0 || syscall(SYS_timer_create, CLOCK_MONOTONIC, &event, &timer) != 0) {
            if (entry >= 0) atomic_store(&g_retake_timers[entry].tid, 0);
            t_retake_generation = generation + 0x80000000u;
            return 0;
        }
        g_retake_timers[entry].timer = timer;
        atomic_store_explicit(&g_retake_timers[entry].tid, lo_current_tid(), memory_order_release);
        t_retake_timer = timer;
        t_retake_generation = generation;
    }
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    // A fixed delay would find a tight loop at the same point of its period every time (its
    // phase after the call it came back from): each retake is put off by a random part more, up to
    // LO_RETAKE_JITTER_NS, far longer than a loop's period, so where it lands is uniform.
    uint64_t random = t_retake_random != 0 ? t_retake_random : (lo_monotonic_ns() ^ ((uint64_t)lo_current_tid() << 32)) | 1;
    random ^= random << 13;
    random ^= random >> 7;
    random ^= random << 17;
    t_retake_random = random;
    spec.it_value.tv_nsec = LO_RETAKE_DELAY_NS + (long)(random % LO_RETAKE_JITTER_NS);
    if (syscall(SYS_timer_settime, t_retake_timer, 0, &spec, NULL) != 0) return 0;
    return 1;
}

void lo_handler_reap_retake_timers(pid_t pid) {
    for (int i = 0; i < LO_RETAKE_TIMERS; i++) {
        pid_t tid = atomic_load_explicit(&g_retake_timers[i].tid, memory_order_acquire);
        if (tid <= 0 || syscall(SYS_tgkill, pid, tid, 0) == 0 || errno != ESRCH) continue;
        syscall(SYS_timer_delete, g_retake_timers[i].timer);
        atomic_store(&g_retake_timers[i].tid, 0);
    }
}

void lo_sampler_chain_signal(const struct sigaction *action, struct sigaction *previous) {
    if (previous) {
        if (atomic_load(&g_chain_set)) *previous = g_chained;
        else {
            memset(previous, 0, sizeof *previous);
            previous->sa_handler = SIG_DFL;
        }
    }
    if (action == NULL) return;
    atomic_store(&g_chain_set, 0);
    g_chained = *action;
    atomic_store(&g_chain_set, 1);
}

uint64_t lo_sampler_chained_signals(void) { return atomic_load(&g_chained_count); }

// Runs the program's handler for a signal the sampler did not send; 1 when it was the program's.
static int lo_pass_on(int signal_number, siginfo_t *info, void *context) {
    if (!atomic_load(&g_chain_set) || lo_sent_by_sampler(info) || lo_sent_by_request(info) || lo_sent_by_retake(info)) return 0;
    struct sigaction chained = g_chained;
    atomic_fetch_add(&g_chained_count, 1);
    if (chained.sa_flags & SA_SIGINFO) {
        if (chained.sa_sigaction) chained.sa_sigaction(signal_number, info, context);
    } else if (chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN && chained.sa_handler != NULL) {
        chained.sa_handler(signal_number);
    }
    // SIG_DFL would end the process for a tick it asked for no handler of: as without the agent,
    // had it kept the default, but no program sets a profiling timer without a handler.
    return 1;
}

// A signal that lands in a timed wait (nanosleep, usleep, poll with a timeout, a futex wait with
// one) cuts it short: the kernel returns EINTR once a handler has run, whatever SA_RESTART says, and
// a program that does not retry (usleep's callers rarely do) would sleep less because it was
// sampled. So the handler resumes such a wait itself with restart_syscall(2), which continues it to
// its original deadline, and hands the program the result the wait would have had. A wait with no
// restart state (epoll_wait, select, an absolute sleep) makes restart_syscall return EINTR at once,
// as the program would have seen anyway; so does one whose state another handler's return cleared.
//
// SIGPROF stays blocked while the handler waits, so no handler nests in it. Stack requests for the
// thread meanwhile are answered from g_resumed, where the handler leaves the stack it found (the
// one the thread waits in) for as long as it waits.
#define LO_MAX_RESUMED 64

typedef struct lo_resumed {
    _Atomic pid_t tid;           // 0: free; -1: being written
    _Atomic uint32_t generation; // changes with every claim, so a reader can tell a reused entry
    int depth;
    uintptr_t wait_word;         // a futex wait's word (the call's first argument), or 0
    uint64_t task;               // the Swift task the thread waits in, or 0
    uint32_t async;              // where the async callers are in `frames` (as a sample's)
    uintptr_t frames[LO_MAX_FRAMES];
} lo_resumed;

static lo_resumed g_resumed[LO_MAX_RESUMED];

static int lo_resumed_claim(pid_t tid, const uintptr_t *frames, int depth, uintptr_t wait_word, uint64_t task,
                            uint32_t async) {
    for (int i = 0; i < LO_MAX_RESUMED; i++) {
        pid_t expected = 0;
        if (!atomic_compare_exchange_strong(&g_resumed[i].tid, &expected, -1)) continue;
        atomic_fetch_add(&g_resumed[i].generation, 1);
        g_resumed[i].depth = depth;
        g_resumed[i].wait_word = wait_word;
        g_resumed[i].task = task;
        g_resumed[i].async = async;
        memcpy(g_resumed[i].frames, frames, (size_t)depth * sizeof(uintptr_t));
        atomic_store_explicit(&g_resumed[i].tid, tid, memory_order_release);
        return i;
    }
    return -1;
}

// The stack thread `tid` waits in while a handler resumes its wait: the frame count, or -1.
static int lo_resumed_stack(pid_t tid, uintptr_t *buffer, int capacity, uint64_t *task, uint32_t *async) {
    for (int i = 0; i < LO_MAX_RESUMED; i++) {
        if (atomic_load_explicit(&g_resumed[i].tid, memory_order_acquire) != tid) continue;
        uint32_t generation = atomic_load(&g_resumed[i].generation);
        int depth = g_resumed[i].depth < capacity ? g_resumed[i].depth : capacity;
        if (buffer) memcpy(buffer, g_resumed[i].frames, (size_t)depth * sizeof(uintptr_t));
        uint64_t waiting_task = g_resumed[i].task;
        uint32_t waiting_async = g_resumed[i].async;
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load(&g_resumed[i].tid) == tid && atomic_load(&g_resumed[i].generation) == generation) {
            if (task) *task = waiting_task;
            if (async) *async = waiting_async;
            return depth;
        }
    }
    return -1;
}

static _Atomic int g_waits_released; // the process crashes: no wait is resumed any more

static void lo_resume_wait(void *context, const uintptr_t *frames, int depth, uint64_t task, uint32_t async) {
    if (!lo_interrupted_call_cut_short(context) || atomic_load(&g_waits_released)) return;
    // Claimed even with no stack (a signal handled after sampling stopped): a crash that comes
    // meanwhile must find every resumed wait to end it (lo_sampler_release_waits).
    int entry = lo_resumed_claim(lo_current_tid(), frames, depth, lo_interrupted_call_word(context), task, async);
    // Claimed, then checked again: lo_sampler_release_waits sets the flag, then looks for claims.
    if (atomic_load(&g_waits_released)) {
        if (entry >= 0) atomic_store(&g_resumed[entry].tid, 0);
        return;
    }
    long result = syscall(SYS_restart_syscall);
    if (result == -1) result = -(long)errno;
    if (entry >= 0) atomic_store(&g_resumed[entry].tid, 0);
    lo_set_call_result(context, result);
}

#ifndef RUSAGE_THREAD
#define RUSAGE_THREAD 1 // Linux's value; the C library declares it only with _GNU_SOURCE
#endif

// Context switches out of the calling thread so far (voluntary and not): with the count of
// switches in that the sampler thread reads, it tells whether the thread ran again after this.
static uint64_t lo_own_switches(void) {
    struct rusage usage;
    if (syscall(SYS_getrusage, RUSAGE_THREAD, &usage) != 0) return 0;
    return (uint64_t)usage.ru_nvcsw + (uint64_t)usage.ru_nivcsw;
}

// Whether the sampler's signal is answered by a retake rather than where it found the thread:
// - a thread cut short in a blocking call is found in it (it waits there);
// - a thread back from a completed call that it slept in (a voluntary switch) since the signal
//   was sent is found at the call's end: that is where it was;
// - a thread back from any other call is retaken: it may have entered the call after the signal
//   was sent, before the signal reached its CPU, or been preempted in it;
// - a thread found in its own code after it waited for a core since the signal was sent is
//   retaken: where the scheduler preempts a thread is not a fair sample of where it runs (on a busy
//   machine a loop in clock_gettime half its time was found there in 24-69 % of its answers).
static __thread uint64_t t_voluntary_switches __attribute__((tls_model("initial-exec")));
static int lo_retakes(const siginfo_t *info, void *context, uint64_t now_ns) {
    if (lo_interrupted_in_syscall(context)) return 0;
    int waited = lo_waited_since_sent(info, now_ns);
    if (!lo_returned_from_call(context)) return waited;
    if (!waited) return 1;
    struct rusage usage;
    if (syscall(SYS_getrusage, RUSAGE_THREAD, &usage) != 0) return 1;
    uint64_t voluntary = (uint64_t)usage.ru_nvcsw;
    int slept = voluntary != t_voluntary_switches;
    t_voluntary_switches = voluntary;
    return !slept;
}

static void lo_note_mismatch(const uintptr_t *walked, int walked_depth, const uintptr_t *reference, int reference_depth) {
    LO_COUNT(walk_mismatches, 1);
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_mismatch_state, &expected, 1)) return;
    g_mismatch_depth[0] = walked_depth;
    g_mismatch_depth[1] = reference_depth;
    memcpy(g_mismatch_frames[0], walked, (size_t)walked_depth * sizeof(uintptr_t));
    memcpy(g_mismatch_frames[1], reference, (size_t)reference_depth * sizeof(uintptr_t));
    atomic_store(&g_mismatch_state, 2);
}

// Whether every return address of a stack (all but the first, an exact pc) lies in the code of a
// loaded object.
static int lo_all_in_code(const uintptr_t *frames, int depth) {
    for (int i = 1; i < depth; i++) {
        if (lo_object_for(frames[i] - 1) == NULL) return 0;
    }
    return 1;
}

// The interrupted stack: by the handler's own walk, or by libunwind where the walk cannot go.
static int lo_unwind_stack(void *context, uintptr_t *frames, int *truncated, lo_async_frame *async) {
    // While a dlclose is under way, or before the snapshot was rebuilt after one, the snapshot may
    // list an unmapped object: no stack (the sample counts as skipped).
    *truncated = 0;
    async->at = -1;
    if (!lo_snapshot_usable()) return -1;
    int guessed = 0;
    int depth = lo_walk_interrupted(context, frames, truncated, &guessed, async);
    if (depth >= 0) {
        LO_COUNT(walked, 1);
        if (guessed) LO_COUNT(walk_guessed, 1);
        if (atomic_load_explicit(&g_verify, memory_order_relaxed)) {
            uintptr_t reference[LO_MAX_FRAMES];
            int reference_truncated = 0;
            int reference_depth = lo_unwind_interrupted(context, reference, &reference_truncated);
            // A reference that leaves the code of every loaded object (libunwind stepping a frameless
            // function by a stale frame pointer, into the heap) is no reference: not compared.
            if (reference_depth >= 0 && !lo_all_in_code(reference, reference_depth)) reference_depth = -1;
            if (reference_depth >= 0) {
                LO_COUNT(walk_checked, 1);
                if (reference_depth != depth || memcmp(reference, frames, (size_t)depth * sizeof(uintptr_t)) != 0) {
                    // libunwind steps a first frame without call-frame information by its frame
                    // pointer even in its prologue or epilogue, where that skips the caller (and,
                    // from an async function, the executor's frame too): the same stack with
                    // frames missing after the first.
                    int missing = depth - reference_depth;
                    size_t compared = reference_depth >= 1 ? (size_t)(reference_depth - 1) : 0;
                    if (missing == 0 && *truncated && reference_truncated && reference_depth >= 2) {
                        // Both cut at the capacity: libunwind's holds as many frames, one later.
                        missing = 1;
                        compared = (size_t)(reference_depth - 2);
                    }
                    int skipped_caller = guessed && missing >= 1 && reference_depth >= 1 && frames[0] == reference[0] &&
                                         memcmp(frames + 1 + missing, reference + 1, compared * sizeof(uintptr_t)) == 0;
                    if (skipped_caller) LO_COUNT(walk_callers_recovered, 1);
                    else lo_note_mismatch(frames, depth, reference, reference_depth);
                }
            }
        }
        return depth;
    }
    LO_COUNT(walk_fallbacks, 1);
    async->at = -1;
    return lo_unwind_interrupted(context, frames, truncated);
}

// Puts the awaiting callers of the innermost async frame (`async`) of the running `task` after
// that frame, before the executor's frames (which are cut first when there is no room). Returns
// the new depth; sets *placed to the first inserted frame's index plus one (0 when the stack has
// no async frame) and *count to the number inserted.
static int lo_add_async_callers(uintptr_t task, const lo_async_frame *async, uintptr_t *frames, int depth,
                                int *truncated, uint32_t *placed, uint32_t *count) {
    *placed = 0;
    *count = 0;
    if (task == 0 || async->at < 0 || async->at >= depth) return depth;
    uintptr_t callers[LO_MAX_FRAMES];
    int found = lo_async_callers(task, async->context, async->verified, callers, LO_MAX_FRAMES - 1 - async->at);
    int first = async->at + 1;
    int executor = depth - first;
    if (first + found + executor > LO_MAX_FRAMES) {
        executor = LO_MAX_FRAMES - first - found;
        *truncated = 1;
    }
    memmove(frames + first + found, frames + first, (size_t)executor * sizeof(uintptr_t));
    memcpy(frames + first, callers, (size_t)found * sizeof(uintptr_t));
    *placed = (uint32_t)first + 1;
    *count = (uint32_t)found;
    return first + found + executor;
}

static void lo_handler(int signal_number, siginfo_t *info, void *context) {
    if (lo_pass_on(signal_number, info, context)) return;
    int saved_errno = errno;
    uint64_t time_ns = lo_monotonic_ns();
    lo_readers_enter();
    uint64_t request = atomic_load(&g_request_seq);
    int truncated = 0, depth = 0;
    uint64_t sampled_task = 0;
    uint32_t sampled_async = 0;
    uintptr_t frames[LO_MAX_FRAMES];
    int for_request = atomic_load(&g_request_tid) == lo_current_tid() && atomic_load(&g_request_done) != request;
    int sampling = atomic_load(&g_active) && lo_ring_ready();
    int request_signal = lo_sent_by_request(info);
    int retake_signal = lo_sent_by_retake(info);
    if (retake_signal && t_retake_first_ns == 0) {
        // A retake whose sample another signal's handler took already.
    } else if (t_warming) {
        // The warm-up signal interrupts Liftoff's own code, which holds no loader lock.
        if (lo_snapshot_usable()) lo_unwind_warm_in_handler();
    } else if (for_request || sampling) {
        uintptr_t running = sampling ? lo_handler_current_task() : 0;
        if (sampling && !for_request && !request_signal && !retake_signal && !t_signals_itself && lo_sent_by_sampler(info) &&
            lo_retakes(info, context, time_ns) && lo_retake_arm()) {
            t_retake_first_ns = time_ns;
            t_retake_handler_ns = lo_monotonic_ns() - time_ns;
            LO_COUNT(retaken, 1);
            goto done;
        }
        // A retake's signal is taken wherever it finds the thread: its timer interrupts the thread
        // on its own CPU, or, when the thread waited for a core meanwhile, the thread answers where
        // it was preempted, in its own code or (at the end of the call) in a system call.
        uint64_t task = lo_task_identity(running);
        sampled_task = task;
        lo_async_frame async;
        depth = lo_unwind_stack(context, frames, &truncated, &async);
        if (for_request) {
            int slot = (int)(request & 1);
            int count = depth < 0 ? 0 : depth;
            memcpy(g_request_frames[slot], frames, (size_t)count * sizeof(uintptr_t));
            g_request_count[slot] = count;
            atomic_store(&g_request_done, request);
        }
        // A request's signal may also stand for the sampler's (standard signals merge while
        // pending, keeping the first one's origin): the ring gets the stack too, marked, and the
        // sampler thread keeps it only when it was waiting for an answer from this thread.
        if (!sampling) goto done;
        uint32_t async_placed = 0, async_count = 0;
        if (depth > 0) depth = lo_add_async_callers(running, &async, frames, depth, &truncated, &async_placed, &async_count);
        sampled_async = async_placed | async_count << 16;
        if (depth < 0) {
            LO_COUNT(skipped, 1);
            depth = 0;
        } else if (depth == 0) {
            LO_COUNT(failed, 1);
        }
        int waits = lo_interrupted_in_syscall(context);
        uint16_t flags = (uint16_t)((truncated ? LO_SAMPLE_TRUNCATED : 0) | (waits ? LO_SAMPLE_IN_SYSCALL : 0) |
                                    (request_signal ? LO_SLOT_REQUEST : 0));
        uint64_t switches = waits ? lo_own_switches() : 0;
        // How long this handler ran (the thread was on a CPU all along): the sampler thread takes
        // it off what the thread used, so being sampled does not count as running (a first unwind
        // through new code can take hundreds of microseconds). An empty answer still tells the
        // sampler thread that the signal was handled.
        uint64_t handler_ns = lo_monotonic_ns() - time_ns;
        if (t_retake_first_ns != 0) {
            // The answer to the signal whose handler armed the retake: from that handler's time on.
            if (retake_signal) time_ns = t_retake_first_ns;
            handler_ns += t_retake_handler_ns;
            t_retake_first_ns = 0;
        }
        lo_ring_publish(lo_current_tid(), time_ns, task, handler_ns, switches, task != 0 ? lo_t_job_ns : 0, frames, depth, flags,
                        async_placed | async_count << 16);
    }
done:
    lo_readers_exit();
    // Outside the count of running handlers: the wait may last long after sampling stopped.
    if (!t_warming) lo_resume_wait(context, frames, depth < 0 ? 0 : depth, sampled_task, sampled_async);
    errno = saved_errno;
}

static void lo_install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = lo_handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGPROF, &action, NULL) == 0) g_installed = 1;
    lo_handler_resolve_task_getter();
}

int lo_sampler_owns_action(const struct sigaction *action) {
    return action != NULL && (action->sa_flags & SA_SIGINFO) && action->sa_sigaction == lo_handler;
}

void lo_handler_install_once(void) { pthread_once(&g_once, lo_install); }
int lo_handler_installed(void) { return g_installed; }
void lo_handler_set_active(int active) { atomic_store(&g_active, active); }

void lo_handler_set_verify(int verify) {
    atomic_store(&g_verify, verify);
    if (verify) atomic_store(&g_mismatch_state, 0);
}

void lo_handler_after_fork(void) {
    atomic_store(&g_active, 0);
    lo_readers_after_fork();
    atomic_store(&g_request_tid, 0);
    atomic_store(&g_request_done, atomic_load(&g_request_seq));
    for (int i = 0; i < LO_MAX_RESUMED; i++) atomic_store(&g_resumed[i].tid, 0);
    atomic_store(&g_waits_released, 0);
    // The parent's timers are not the child's.
    for (int i = 0; i < LO_RETAKE_TIMERS; i++) atomic_store(&g_retake_timers[i].tid, 0);
    atomic_fetch_add(&g_retake_generation, 1);
    t_retake_first_ns = 0;
}

int lo_walk_context(void *context, uintptr_t *frames) {
    // Counted as a handler, so the snapshot it walks through stays while it does.
    lo_readers_enter();
    int truncated = 0, guessed = 0;
    // Sampling stops by clearing g_active and then waiting for handlers: the snapshot stays while
    // g_active is seen set after counting in.
    lo_async_frame async;
    int depth = atomic_load(&g_active) && lo_snapshot_usable()
                    ? lo_walk_interrupted(context, frames, &truncated, &guessed, &async)
                    : -1;
    lo_readers_exit();
    if (depth >= 0) LO_COUNT(walk_captures, 1);
    return depth;
}

int lo_walk_current_stack(int method, int cold, uintptr_t *buffer, int capacity) {
    if (buffer == NULL || capacity <= 0) return 0;
    uintptr_t frames[LO_MAX_FRAMES];
    int depth;
    if (method == LO_WALK_LIBUNWIND) {
        depth = lo_unwind_current_for_measurement(cold, frames);
    } else {
        ucontext_t context;
        if (getcontext(&context) != 0) return 0;
        lo_t_walk_uncached = cold;
        depth = lo_walk_context(&context, frames);
        lo_t_walk_uncached = 0;
    }
    if (depth < 0) depth = 0;
    if (depth > capacity) depth = capacity;
    memcpy(buffer, frames, (size_t)depth * sizeof(uintptr_t));
    return depth;
}

int lo_sampler_walk_mismatch(uintptr_t *walked, int *walked_depth, uintptr_t *reference, int *reference_depth) {
    if (atomic_load(&g_mismatch_state) != 2) return 0;
    *walked_depth = g_mismatch_depth[0];
    *reference_depth = g_mismatch_depth[1];
    memcpy(walked, g_mismatch_frames[0], (size_t)g_mismatch_depth[0] * sizeof(uintptr_t));
    memcpy(reference, g_mismatch_frames[1], (size_t)g_mismatch_depth[1] * sizeof(uintptr_t));
    return 1;
}
void lo_warm_current_thread(void) {
    if (!lo_unwind_linked()) return;
    lo_unwind_warm();
    t_warming = 1;
    syscall(SYS_tgkill, getpid(), lo_current_tid(), SIGPROF);
    t_warming = 0;
}

void lo_signal_current_thread(void) {
    // Taken where it is sent: the signal comes back with the system call on purpose.
    t_signals_itself = 1;
    syscall(SYS_tgkill, getpid(), lo_current_tid(), SIGPROF);
    t_signals_itself = 0;
}

// For a process about to crash: no wait is resumed from now on.
void lo_handler_stop_resuming(void) { atomic_store(&g_waits_released, 1); }

// Wakes the futex waits that handlers resumed (FUTEX_WAKE on the call's word wakes its waiters,
// and nobody when the call was another); the number of threads still in a resumed wait.
int lo_handler_wake_resumed(void) {
    int waiting = 0;
    for (int i = 0; i < LO_MAX_RESUMED; i++) {
        if (atomic_load(&g_resumed[i].tid) <= 0) continue;
        waiting++;
        uintptr_t word = g_resumed[i].wait_word;
        if (word == 0) continue;
        syscall(SYS_futex, (void *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
        syscall(SYS_futex, (void *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    }
    return waiting;
}

int lo_handler_resumed_stack(pid_t tid, uintptr_t *buffer, int capacity, uint64_t *task, uint32_t *async) {
    return lo_resumed_stack(tid, buffer, capacity, task, async);
}

int lo_handler_ask(pid_t tid, uintptr_t *buffer, int capacity, int timeout_ms) {
    uint64_t request = atomic_fetch_add(&g_request_seq, 1) + 1;
    atomic_store(&g_request_tid, tid);
    int result = -1;
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = SIGPROF;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    info.si_value.sival_int = LO_REQUEST_SIGNAL_TAG;
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, SIGPROF, &info) == 0) {
        uint64_t deadline = lo_monotonic_ns() + (uint64_t)timeout_ms * 1000000ull;
        while (atomic_load(&g_request_done) != request && lo_monotonic_ns() < deadline) {
            struct timespec pause = {0, 100000};
            nanosleep(&pause, NULL);
            // The signal may have found it already in a resumed wait, or landed after another one.
            if (atomic_load(&g_request_done) != request && (result = lo_resumed_stack(tid, buffer, capacity, NULL, NULL)) >= 0) break;
        }
        if (result < 0 && atomic_load(&g_request_done) == request) {
            int slot = (int)(request & 1);
            result = g_request_count[slot] < capacity ? g_request_count[slot] : capacity;
            memcpy(buffer, g_request_frames[slot], (size_t)result * sizeof(uintptr_t));
        }
    }
    atomic_store(&g_request_tid, 0);
    return result;
}
