// What the program writes to standard output and error, and which thread wrote it (output.c):
// below every other file of the agent, recording.c included.

#ifndef LO_AGENT_OUTPUT_H
#define LO_AGENT_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

// The latest writes kept, and how much of each.
#define LO_OUTPUT_RECORDS 512
#define LO_OUTPUT_TEXT 120

typedef struct lo_output_copy {
    uint64_t time_ns; // CLOCK_MONOTONIC, when the call was made
    uint32_t tid;
    uint16_t fd;      // 1 or 2
    uint16_t length;
    char text[LO_OUTPUT_TEXT];
} lo_output_copy;

// Starts noting what the program writes to its standard output and error.
void lo_agent_output_begin(void);
// In a fork child: forgets the parent's writes.
void lo_agent_output_after_fork(void);
// How many writes were noted since the agent began in this process (without copying them).
size_t lo_agent_output_count(void);
// The writes kept, oldest first, copied out of the ring (async-signal-safe): their count.
size_t lo_agent_output_snapshot(const lo_output_copy **out);

#endif
