#ifndef LO_AGENT_H
#define LO_AGENT_H

/*
 * libLiftoffAgent.so: Liftoff's sampler for programs that do not link Liftoff, injected with
 * LD_PRELOAD by `liftoff profile` and `liftoff record`. When LIFTOFF_AGENT_OUT names a folder,
 * its constructor starts sampling every thread before `main`; the recording is written to
 * FOLDER/PID-IMAGE.rec when the program exits (return from main, exit(), _exit(), SIGTERM,
 * SIGINT, SIGHUP, or a fatal signal, which is then handed to the program's own handler or the
 * default action) or replaces itself with exec. `liftoff` turns the recordings into one profile,
 * symbolizing them offline.
 *
 * Every program the recorded one runs is recorded too: after exec, the same process goes on
 * as IMAGE + 1; a child process (fork, with or without exec, vfork, posix_spawn, system) gets
 * its own recordings, a fork() child's from the fork. LIFTOFF_AGENT_CHILDREN=0 follows exec
 * only, and takes the agent out of the children's LD_PRELOAD. LIFTOFF_AGENT_RATE sets the rate,
 * LIFTOFF_LAUNCH_NS the spawn time of the first program; the agent hands LIFTOFF_AGENT_IMAGE
 * (PID:START:IMAGE, whose program a new one is and when its process started) on to the
 * programs it runs, and keeps itself in their LD_PRELOAD.
 *
 * File layout (little-endian 64-bit words): "LOAGENT1", the format version (4), the pid, the
 * parent's pid, the image number, flags (1 ended by a signal, whose number is in bits 8-15;
 * 2 ended by exec; 4 the program installed its own SIGPROF handler; 8 its main thread started
 * with SIGPROF blocked; 16 the samples are the program's own sampler's, the program linking Liftoff), the process start, the pre-main time, the main-entry time and the end
 * time (CLOCK_MONOTONIC ns), the rate in Hz, then nine counters (signals sent, captured,
 * dropped, failed, skipped, truncated, waiting, unanswered, threads seen) and the number of the
 * program's own SIGPROF signals handed to its handler; then strings and tables, each string a
 * word of its length followed by its bytes padded to whole words: the command line
 * (NUL-separated), the thread names (a count, then tid and name each), the loaded objects (a
 * count, then load bias, segment count, the executable segments' start and end, and the path
 * each), the sample store (a word count, then the words, as lo_sampler.h lays them out), and
 * the Swift tasks' events (a count, then five words each: kind | how created << 8 | thread << 32,
 * task, creator, time, end); and (format 4) the process's counters (a word count, 16, then two
 * lo_process_counters of eight words: time, CPU, run-queue wait, bytes read from storage, bytes
 * read, major faults, minor faults, which were read), as the agent started and as it wrote;
 * and (format 5) the loader's timeline Liftoff's audit library handed over (a string of its
 * lines, lo_audit.h; empty when it did not run); and (format 6) the thread rules' findings with
 * LIFTOFF_AGENT_RULES=1 (a string of lines, rules.c: rule, count, thread, time, the stack's
 * addresses in hex and the operation, tab-separated; "dropped N" when more sites were found
 * than kept; empty without the rules); and (format 7) what the program wrote to standard output
 * and error (a count, then for each write, the oldest first: its time, thread | descriptor << 32,
 * and a string of its first bytes; output.h), then the path of the program an exec went on as
 * (a string, empty unless the recording ended by exec).
 */

#define LO_AGENT_MAGIC 0x31544E4547414F4CULL /* "LOAGENT1" */
#define LO_AGENT_FORMAT 7

/* Where Liftoff's audit library (libLiftoffAudit.so) hands over its records of the loader's
   timeline once every initializer ran (la_preinit): the recording carries them, and the audit
   library writes no file of its own. Found by its name in the agent's symbol table. */
typedef struct lo_agent_loader_records {
    const char *volatile text;
    volatile uint64_t length;
} lo_agent_loader_records_t;
extern lo_agent_loader_records_t lo_agent_loader_records;

/* Writes the recording now (once per program), stopping the sampler: what exit calls. */
void lo_agent_write(void);

/* Stops the agent for good, writing nothing: Liftoff's own sampler calls it in a program that
   links Liftoff, which records itself. */
void lo_agent_stand_down(void);

/* The same, keeping `program` (the program's own sampler, lo_sampler_this_source of its copy):
   when the program ends by a signal before writing its profile, the agent writes that sampler's
   samples as the program's recording (flag 16), so a crash loses nothing it sampled. Returns 1
   when it keeps it, 0 when the agent does not record this process. */
struct lo_sampler_source;
int lo_agent_stand_down_to(const struct lo_sampler_source *program);

#endif
