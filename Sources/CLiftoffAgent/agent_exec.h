// Following the programs a recorded program runs (agent_exec.c).

#ifndef LO_AGENT_EXEC_H
#define LO_AGENT_EXEC_H

// Looks up the exec functions the agent wraps, before any vfork child needs them.
void lo_agent_find_exec(void);

#endif
