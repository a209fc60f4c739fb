// A handler's answer: how many ticks it stands for, and which of them ran, waited for a core or
// waited for the disk.
//
// A signal that reaches a running thread late was waiting for a core: the thread was runnable but
// not running, preempted where the handler finds it. Such an answer is recorded as running for
// the ticks its CPU time since the previous check fills and runnable for the rest of the ticks it
// took (lo_running_ticks). Where the thread's schedstat can tell, an answer of a thread that did
// not use most of its time, late or not, is split by the time it waited on a run queue instead
// (lo_runnable_ticks): on a busy machine a thread may run just after each of the sampler's ticks.

#include "lo_internal.h"
#include "lo_thread_table.h"

#define LO_RQ_CARRY_TICKS 4 // run-queue wait kept for the answers that follow (lo_runnable_ticks)

// How many of an answer's ticks, found outside a system call, the thread ran. One that answers
// within lo_tick_runnable_ns was running when the signal came, and ran for all of them. One that
// answers later was preempted: the sample's instant says "runnable", but on a busy machine the
// sampler runs when the threads it samples do not, so the instants are not a fair draw, and
// counting them would report a thread that ran half the time as running a tenth of it. So a late
// answer ran for as many ticks as the CPU time it used since its previous check fills, and waited
// for a core in the rest. The carry keeps the CPU time each answer leaves over, and owes what a
// prompt answer counted beyond the CPU it used, within one tick either way, so the ticks counted
// running follow the CPU time the thread used.
static uint64_t lo_running_ticks(lo_thread *thread, int late, uint64_t ticks) {
    int64_t period = (int64_t)lo_tick_period_ns;
    int64_t used = thread->answer_cpu < (uint64_t)INT64_MAX / 2 ? (int64_t)thread->answer_cpu : INT64_MAX / 2;
    int64_t credit = thread->cpu_carry + used;
    uint64_t running;
    if (late) {
        running = credit > 0 ? (uint64_t)(credit / period) : 0;
        if (running > ticks) running = ticks;
    } else {
        running = ticks;
    }
    int64_t count = running < (uint64_t)(INT64_MAX / 2 / period) ? (int64_t)running : INT64_MAX / 2 / period;
    credit -= count * period;
    thread->cpu_carry = credit > period ? period : credit < -period ? -period : credit;
    return running;
}

// How many of an answer's ticks, found outside a system call, waited for a core, by the time the
// thread's schedstat says it spent on a run queue since the previous read; -1 when that is not
// known. Read when the answer came late, or the thread used a quarter of a tick less than the time
// before its signal: a thread that answers at once was running at the instant the signal came, but
// that instant is not a fair draw on a busy machine (the sampler's own wake-up makes the kernel
// choose who runs next, and a thread that runs a third of the time may run just after every tick),
// and a late answer's CPU time says how long it ran but not whether it slept. The answer has run,
// so its wait for the signal is in the count. A read costs about 9 µs (opening the file): a thread
// that used the time it had is not read, and the little it waited is in the next read's difference.
// The carry keeps what an answer leaves over, up to LO_RQ_CARRY_TICKS.
static int64_t lo_runnable_ticks(lo_thread *thread, uint64_t ticks) {
    uint64_t waited;
    if (lo_thread_run_delay(thread->tid, &waited) != 0) {
        thread->rq_known = 0;
        return -1;
    }
    int known = thread->rq_known && waited >= thread->rq_base;
    uint64_t delta = known ? waited - thread->rq_base : 0;
    thread->rq_base = waited;
    thread->rq_known = 1;
    if (!known) return -1;
    int64_t period = (int64_t)lo_tick_period_ns;
    int64_t credit = thread->rq_carry + (delta < (uint64_t)INT64_MAX / 4 ? (int64_t)delta : INT64_MAX / 4);
    uint64_t runnable = credit > 0 ? (uint64_t)(credit / period) : 0;
    if (runnable > ticks) runnable = ticks;
    credit -= (int64_t)runnable * period;
    thread->rq_carry = credit > LO_RQ_CARRY_TICKS * period ? LO_RQ_CARRY_TICKS * period : credit;
    return (int64_t)runnable;
}

// Records `ticks` of an answer from `time_ns` on, one period apart. Ticks before the job of the
// Swift task it was taken in began on the thread ran something else there (the sampler fell behind
// and the answer stands for ticks it missed, or the thread waited for a core): they are the
// thread's, with the stack the answer found, but not the task's.
static void lo_append_answer(const lo_slot *slot, uint64_t time_ns, uint64_t cpu, uint64_t ticks, uint16_t flags) {
    if (slot->task != 0 && slot->job_ns > time_ns) {
        uint64_t before = (slot->job_ns - time_ns + lo_tick_period_ns - 1) / lo_tick_period_ns;
        if (before > ticks) before = ticks;
        lo_store_append(slot->tid, time_ns, 0, cpu, before, flags, slot->frames, slot->depth, slot->async);
        if (before == ticks) return;
        time_ns += before * lo_tick_period_ns;
        ticks -= before;
        cpu = 0;
    }
    lo_store_append(slot->tid, time_ns, slot->task, cpu, ticks, flags, slot->frames, slot->depth, slot->async);
}

void lo_threads_answer(const lo_slot *slot) {
    long found = lo_threads_find(slot->tid);
    uint64_t cpu = 0;
    if (slot->flags & LO_SLOT_REQUEST) {
        // A stack request's signal: it answers the sampler only when the sampler's own signal was
        // outstanding when the handler ran (and so merged into it); otherwise it is no sample (a
        // request answered earlier by the sampler's signal still gets its own signal later).
        if (found < 0 || !lo_thread_table[found].pending || slot->time_ns < lo_thread_table[found].sent_ns) return;
        // A handler that began between the clock read and the send may have run before the
        // sampler's signal arrived: that signal then comes on its own, and is not a second sample.
        if (slot->time_ns < lo_thread_table[found].sent_after_ns) lo_thread_table[found].maybe_stray = 1;
    } else if (found >= 0 && !lo_thread_table[found].pending && lo_thread_table[found].maybe_stray) {
        lo_thread_table[found].maybe_stray = 0;
        return;
    }
    uint16_t flags = (uint16_t)(slot->flags & ~LO_SLOT_REQUEST);
    uint64_t time_ns = slot->time_ns, ticks = 1, running = 0, disk_ticks = 0;
    if (found >= 0) {
        lo_thread *thread = &lo_thread_table[found];
        // An answer stands for the ticks from the one that sent the signal to now: the ticks in
        // between were not recorded while it was pending. A running thread answers within
        // microseconds; one that answers late was preempted, waiting for a core where the handler
        // found it. One found in a system call waited there (the signal woke it, and on a busy
        // machine it may wait for a core to answer).
        if (thread->pending && lo_tick_current >= thread->sent_tick) {
            uint64_t since_send = lo_tick_current - thread->sent_tick;
            ticks = since_send + 1;
            int late = !(flags & LO_SAMPLE_IN_SYSCALL) && slot->time_ns > thread->sent_ns &&
                       slot->time_ns - thread->sent_ns >= lo_tick_runnable_ns;
            if (thread->sent_in_disk && !(flags & LO_SAMPLE_IN_SYSCALL)) {
                // Sent while it waited for the disk: the ticks its CPU time does not fill waited there.
                late = 1;
                disk_ticks = UINT64_MAX;
            }
            if (ticks > 1 || late) time_ns = thread->sent_ns;
            if (thread->missed_ticks > 0) {
                uint64_t back = thread->missed_ticks * lo_tick_period_ns;
                ticks += thread->missed_ticks;
                time_ns = thread->sent_ns > back ? thread->sent_ns - back : 0;
            }
            // The ticks are taken one period apart, and none after the handler ran: a sampler late
            // for the tick that sent the signal may take the next on time, before the answer came.
            uint64_t spread = (ticks - 1) * lo_tick_period_ns;
            if (time_ns + spread > slot->time_ns) time_ns = slot->time_ns > spread ? slot->time_ns - spread : 0;
            if (disk_ticks == 0) disk_ticks = thread->disk_ticks;
            if (!(flags & LO_SAMPLE_IN_SYSCALL) && disk_ticks == 0) {
                int64_t runnable = late || thread->partly_idle ? lo_runnable_ticks(thread, ticks) : -1;
                running = runnable >= 0 ? ticks - (uint64_t)runnable : lo_running_ticks(thread, late, ticks);
            } else if (!(flags & LO_SAMPLE_IN_SYSCALL)) {
                // Seen waiting for the disk: it ran for the ticks its CPU time fills; of the rest, as
                // many as its run-queue wait fills waited for a core, and the others for the disk
                // (the read also keeps that wait from being counted again at the next answer).
                running = lo_running_ticks(thread, late, ticks);
                int64_t runnable = lo_runnable_ticks(thread, ticks - running);
                if (runnable >= 0) disk_ticks = ticks - running - (uint64_t)runnable;
            }
        } else {
            disk_ticks = thread->disk_ticks;
        }
        thread->missed_ticks = 0;
        thread->sent_in_disk = 0;
        thread->disk_ticks = 0;
        thread->pending = 0;
        thread->resumed_recorded = 0;
        thread->last_tick = lo_tick_current;
        thread->has_stack = slot->depth > 0;
        thread->stack_waits = (flags & LO_SAMPLE_IN_SYSCALL) != 0;
        // In the handler the thread had switched in once more than out (it was running).
        thread->wait_mode = slot->switches != 0 ? LO_WAIT_SETTLING : LO_WAIT_TOLERANT;
        thread->expect_ins = slot->switches + 1;
        // The handler's time is not the thread's own work.
        thread->base_cpu = thread->base_cpu + slot->handler_ns < thread->base_cpu ? UINT64_MAX
                                                                                  : thread->base_cpu + slot->handler_ns;
        cpu = thread->answer_cpu;
        thread->answer_cpu = 0;
        // Threads often name themselves just after they start: read the name again.
        if (thread->names_read < 3) lo_thread_read_name(thread);
    }
    if (slot->depth == 0) return;
    if (flags & LO_SAMPLE_IN_SYSCALL || running >= ticks) {
        lo_append_answer(slot, time_ns, cpu, ticks, flags);
        return;
    }
    // The ticks it ran, those the sampler saw it in a disk wait waited for the disk, the rest waited
    // for a core, at one stack.
    if (running > 0) {
        lo_append_answer(slot, time_ns, cpu, running, flags);
        cpu = 0;
    }
    uint64_t disk = disk_ticks < ticks - running ? disk_ticks : ticks - running;
    if (disk > 0) {
        lo_append_answer(slot, time_ns + running * lo_tick_period_ns, cpu, disk, flags | LO_SAMPLE_DISK);
        cpu = 0;
    }
    if (ticks - running - disk == 0) return;
    lo_append_answer(slot, time_ns + (running + disk) * lo_tick_period_ns, cpu, ticks - running - disk,
                     flags | LO_SAMPLE_RUNNABLE);
}
