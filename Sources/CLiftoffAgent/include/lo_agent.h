#ifndef LO_AGENT_H
#define LO_AGENT_H

/*
 * libLiftoffAgent.so: Liftoff's sampler for programs that do not link Liftoff, injected with
 * LD_PRELOAD by `liftoff profile` and `liftoff record`. Its constructor starts sampling every
 * thread before `main` when LIFTOFF_AGENT_OUT names a file; the recording is written there
 * when the program exits (return from main, exit(), SIGTERM, SIGINT, SIGHUP, or a fatal signal,
 * which is then re-raised to the program's own handler or the default action). `liftoff`
 * turns the recording into a profile, symbolizing it offline.
 *
 * File layout (little-endian 64-bit words): "LOAGENT1", the format version (2), the pid,
 * the process start, the pre-main time, the main-entry time and the end time (CLOCK_MONOTONIC
 * ns), the rate in Hz, then nine counters (signals sent, captured, dropped, failed, skipped,
 * truncated, waiting, unanswered, threads seen); then strings and tables, each string a word
 * of its length followed by its bytes padded to whole words: the command line (NUL-separated),
 * the thread names (a count, then tid and name each), the loaded objects (a count, then base,
 * segment count, the segments' start and end, and the path each), the sample store (a
 * word count, then the words, as lo_sampler.h lays them out), and the Swift tasks' events (a
 * count, then five words each: kind | how created << 8 | thread << 32, task, creator, time, end).
 */

#define LO_AGENT_MAGIC 0x31544E4547414F4CULL /* "LOAGENT1" */
#define LO_AGENT_FORMAT 2

/* Writes the recording now (once per process); what exit and the signal handlers call. */
void lo_agent_write(void);

/* Stops the agent for good, writing nothing: Liftoff's own sampler calls it in a program that
   links Liftoff, which records itself. */
void lo_agent_stand_down(void);

#endif
