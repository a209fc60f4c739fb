// The signals that end a recorded process, and SIGPROF shared with its own profiler (agent_signals.c).

#ifndef LO_AGENT_SIGNALS_H
#define LO_AGENT_SIGNALS_H

// Installs the handlers that write the recording when a signal ends the process.
void lo_agent_install_exit_signals(void);
// Gives the stop signals back to the program's handlers (the agent stood down); the crash signals
// stay hooked, only to mark the crash.
void lo_agent_restore_stop_signals(void);

#endif
