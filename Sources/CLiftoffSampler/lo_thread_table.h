// The thread table threads.c keeps and answers.c reads when a handler's answer comes: shared by
// those two files only (the sampler thread alone touches it).

#ifndef LO_THREAD_TABLE_H
#define LO_THREAD_TABLE_H

#include "lo_internal.h"

#define LO_NAME_BYTES 16

// How a thread waiting since its last sample is known to still wait.
enum {
    LO_WAIT_TOLERANT = 0, // no switch count: a CPU advance within LO_IDLE_CPU_NS is not a run
    LO_WAIT_SETTLING = 1, // the next check compares switches in with `expect_ins`
    LO_WAIT_SETTLED = 2,  // any CPU advance past `wait_cpu` is a run
};

typedef struct lo_thread {
    pid_t tid;
    uint32_t generation;
    uint8_t pending, has_stack, stack_waits, checked, gone, names_read, maybe_stray, wait_mode, ran_now;
    uint8_t resumed_recorded; // its resumed wait's stack is in the store: later ticks repeat it
    uint8_t sent_in_disk;     // it was in a disk wait (state D) when its signal was sent
    uint32_t idle_streak;
    uint64_t sent_ns, sent_after_ns, sent_tick, base_cpu, answer_cpu, read_cpu, last_tick;
    uint64_t expect_ins, wait_cpu;
    uint64_t missed_ticks; // ticks the sampler fell behind on while the thread ran (lo_check)
    uint64_t disk_ticks;   // ticks its signal was pending while it waited for the disk (state D)
    int64_t cpu_carry;     // CPU time not yet counted in running ticks, or owed (lo_running_ticks)
    uint64_t base_ns;      // when `base_cpu` was read: the start of the window of its next signal
    uint64_t rq_base;      // its run-queue wait (schedstat) at the last read, when `rq_known`
    int64_t rq_carry;      // run-queue wait not yet counted in runnable ticks (lo_runnable_ticks)
    uint8_t rq_known;
    uint8_t partly_idle;   // it used a quarter tick less than the time since its previous check when signalled
    char name[LO_NAME_BYTES];
} lo_thread;

// The table, in no order, and its lookup by thread id (-1 when the thread is not in it).
extern lo_thread *lo_thread_table;
long lo_threads_find(pid_t tid);
// Reads the thread's name from /proc again (threads often name themselves just after they start).
void lo_thread_read_name(lo_thread *thread);

// The tick period, how late an answer may come and still have been running, and the current tick.
extern uint64_t lo_tick_period_ns, lo_tick_runnable_ns, lo_tick_current;

#endif
