// Thread rules in a program that does not link Liftoff (rules.c): below every other file of the
// agent, recording.c included.

#ifndef LO_AGENT_RULES_H
#define LO_AGENT_RULES_H

#include <stddef.h>

// Room for the findings' lines in a recording.
#define LO_RULES_SITES_TEXT 65536

// With LIFTOFF_AGENT_RULES=1, arms the blocking-call checks and keeps what they find.
void lo_agent_rules_begin(void);
// Stops the checks (before the recording is written, or when the agent stands down).
void lo_agent_rules_end(void);
// In a fork child: forgets the parent's findings (the checks go on as the parent's did).
void lo_agent_rules_after_fork(void);
// Whether the rules found anything (a site, or sites dropped) in this process.
int lo_agent_rules_found(void);
// The findings as lines for the recording (format 6); async-signal-safe. Returns the length.
size_t lo_agent_violations_text(char *buffer, size_t capacity);

#endif
