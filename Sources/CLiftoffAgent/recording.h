// The agent's state and its recording (recording.c): below every other file of the agent.

#ifndef LO_AGENT_RECORDING_H
#define LO_AGENT_RECORDING_H

#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "lo_sampler.h"

// The environment the agent keeps for the programs a profiled program starts (see lo_agent.h).
#define LO_ENV_OUT "LIFTOFF_AGENT_OUT"
#define LO_ENV_RATE "LIFTOFF_AGENT_RATE"
#define LO_ENV_CHILDREN "LIFTOFF_AGENT_CHILDREN"
#define LO_ENV_IMAGE "LIFTOFF_AGENT_IMAGE"
// The pid of the process liftoff started (the launch), which its own later programs (exec) find.
#define LO_ENV_ROOT "LIFTOFF_AGENT_ROOT"
#define LO_ENV_LAUNCH "LIFTOFF_LAUNCH_NS"
// Set to 1 in the environment of a program Liftoff runs for itself: the agent does not follow it.
#define LO_ENV_EXCLUDE "LIFTOFF_AGENT_EXCLUDE"
// Set by an exec that held SIGPROF blocked for the agent (agent_exec.c); the next agent releases it.
#define LO_ENV_HELD "LIFTOFF_AGENT_SIGPROF_HELD"

typedef struct lo_agent_state {
    pid_t pid;                 // the process recorded; 0 when the agent does not record here
    pid_t parent;
    uint32_t image;            // how many execs of this process came before this program
    uint32_t rate_hz;
    int follows_children;
    int is_root;               // the process liftoff started: its start is sampled from the first moment
    uint64_t process_start_ns; // the spawn (or fork) of the process, else the agent's load
    uint64_t premain_ns;
    uint64_t main_entry_ns;
    lo_process_counters premain_counters; // when the agent started, before `main` (or at the fork)
    char directory[PATH_MAX];  // where recordings go
    char path[PATH_MAX];       // DIRECTORY/PID-IMAGE.rec
    char temporary[PATH_MAX];  // the same, .tmp
    char library[PATH_MAX];    // this library's own path, for LD_PRELOAD
    // The program's arguments, NUL-separated, as its constructor was given them (0 bytes: read
    // /proc/self/cmdline at the end, as for a fork() child, which may have renamed itself).
    char command[8192];
    size_t command_length;
} lo_agent_state;

extern lo_agent_state lo_agent;

// The fork() child's pid and when it was forked (0 in any other process), for its first exec.
extern pid_t lo_agent_forked_pid;
extern uint64_t lo_agent_fork_ns;

// Recording flags (header word 5).
#define LO_AGENT_ENDED_BY_SIGNAL 1u      // bits 8-15: the signal
#define LO_AGENT_ENDED_BY_EXEC 2u        // the process went on as another program
#define LO_AGENT_PROGRAM_SIGPROF 4u      // the program installed its own SIGPROF handler
#define LO_AGENT_PROGRAM_BLOCKS_SIGPROF 8u // the program's main thread blocks SIGPROF
#define LO_AGENT_RECORDED_BY_PROGRAM 16u   // the samples are the program's own sampler's (it links Liftoff)

// Whether this process records now (it is the one the agent started in, and has not stood down).
int lo_agent_records(void);
// Sets lo_agent.path and .temporary for the current image: 0 when the folder's path is too long.
int lo_agent_set_paths(void);
// Starts the sampler on every thread at lo_agent.rate_hz: 0 when it cannot start. In the process
// liftoff started, the first tick comes at once and this returns once the sampler thread runs, so
// the launch is seen from its first moment even when that thread waits for a core; in any other
// (a child, most of which exec or end within a fraction of a millisecond), the first tick comes
// a period later and nothing waits.
int lo_agent_start_sampling(void);
// Sets the paths, starts sampling and opens a new recording (a fork child's, the next image's);
// on failure the process is not recorded (lo_agent.pid = 0): 0.
int lo_agent_begin(void);
// Claims the one write of this recording: 0 when it is written, being written, or not recorded.
int lo_agent_claim_write(void);
// The program an exec is about to run (its path as given), written into the recording.
void lo_agent_set_exec_target(const char *path);
// Whether this process's recording would hold nothing of its own: no sample, no Swift task
// event, no thread-rule finding, no write to standard output or error.
int lo_agent_recording_is_empty(void);
// Sets or clears one of the recording's program flags.
void lo_agent_set_program_flag(uint32_t flag, int on);

// Writes the recording after stopping the sampler (not in a signal handler): exit, exec.
void lo_agent_write_stopped(uint32_t flags);
// Writes what can be written from a signal handler, with async-signal-safe calls only.
void lo_agent_write_halted(uint32_t flags);
// In a signal handler: waits (a few seconds at most) for a recording another thread is writing.
void lo_agent_wait_for_writer(void);
// Keeps the sampler of a program that records itself (the agent stood down for it), whose
// recording the agent writes if the program ends by a signal before writing its own profile.
void lo_agent_hand_over(const lo_sampler_source *program);
/* For a program that records itself: the audit library's records of its loader, which no
   recording of the agent's carries then, in DIRECTORY/PID-IMAGE.loader (as the audit library
   writes them without the agent), where liftoff takes them into the program's own profile. */
void lo_agent_write_loader_records(void);
// Whether a program that records itself runs here and its recording was not written yet.
int lo_agent_program_records(void);
// In a signal handler: halts the program's own sampler and writes what it kept, once, unless the
// program wrote its profile already (its store is empty then).
void lo_agent_write_program(uint32_t flags);
// After an exec that failed: sampling goes on, into the next image's recording.
void lo_agent_resume(void);
// The signals that end a process, whose handlers write the recording first.
#define LO_AGENT_EXIT_SIGNAL_COUNT 10
extern const int lo_agent_exit_signals[LO_AGENT_EXIT_SIGNAL_COUNT];
// Blocks the exit signals on the calling thread while a recording is written, so that one of
// them (SIGTERM) cannot end the process halfway through; `previous_mask` gets the mask before.
void lo_agent_block_exit_signals(sigset_t *previous_mask);
// Whether the agent keeps SIGPROF's handler (set once sampling started, until it stands down).
extern int lo_agent_owns_sigprof;
// Set when the process crashed: what its crash handler runs is not followed.
extern atomic_int lo_agent_crashed;
// Decimal digits of `value` into `out` (at least 21 bytes), NUL-terminated: the length.
size_t lo_agent_format_u64(char *out, uint64_t value);

#endif
