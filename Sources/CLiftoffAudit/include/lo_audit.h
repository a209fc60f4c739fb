// libLiftoffAudit.so: the loader's timeline, object by object, through glibc's audit interface
// (LD_AUDIT, rtld-audit(7)). `liftoff profile` and `record` set it beside the agent's LD_PRELOAD.
//
// Once every initializer ran (la_preinit) it hands its records to the agent
// (lo_agent_loader_records, which the agent's recording carries), or, without the agent, writes
// them to DIRECTORY/PID-IMAGE.loader (DIRECTORY from LIFTOFF_AGENT_OUT, IMAGE as the agent numbers
// the programs of a process): one record a line, fields separated by tabs, times in
// CLOCK_MONOTONIC nanoseconds:
//
//   L  start_ns                  the loader's first moment the audit library sees
//   O  index  search_ns  mapped_ns  base  size  relative  relocations  plt  path
//                                an object mapped (search_ns 0: not searched by name)
//   R  relocated_ns              every object mapped and relocated (la_activity: consistent)
//   I  index  offset  start_ns  end_ns  cpu_ns  major_faults  bytes_read
//                                an initializer of object `index` at `offset` from its base ran,
//                                and what the thread used meanwhile
//   P  initialized_ns            every initializer ran; main follows (la_preinit)
//   T                            records were left out: the buffer was full
//
// Paths have tabs and line breaks replaced. The library uses no other library, not even the C
// library (see system.h), starts no thread and allocates nothing.
#ifndef LO_AUDIT_H
#define LO_AUDIT_H

#define LO_AUDIT_SUFFIX ".loader"

#endif
