// Starting and watching the programs `liftoff` runs: what Swift cannot call directly (fork and
// exec in one step, variadic syscall(2)). The command line's alone; the sampler does not use it.

#ifndef LO_PROCESS_H
#define LO_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A descriptor that becomes readable when process `pid` exits (pidfd_open(2)), close-on-exec;
   -1 with errno set when the kernel lacks it. */
int lo_pidfd_open(int pid);

/* Starts argv[0] (found on PATH) with `envp`: standard input from /dev/null, output and error
   on `out_fd` and `err_fd`, in a process group of its own, with default signal handling, no
   other descriptor of this process, and killed (SIGKILL) if the calling thread ends first, so
   it never outlives its runner. Returns the pid, or -1 with errno set (exec's own error). */
int lo_spawn(char *const argv[], char *const envp[], int out_fd, int err_fd);

/* Page faults that read from storage, as the kernel records them for a program and every
   thread and process it starts (see faults.c). */
typedef struct lo_faults lo_faults;

/* Starts recording the major page faults of process `pid` (and what it starts) with the mapping,
   exec, fork and exit records that place them, one ring per CPU, user mode only. NULL with errno
   set when the kernel refuses (perf_event_paranoid, a seccomp policy, no perf events). */
lo_faults *lo_faults_open(int pid);

/* Moves whole records (struct perf_event_header first, each ring's in its order) into `out`, at
   most `capacity` bytes, and frees their room in the rings; the bytes copied. Records of
   different CPUs are not merged: each carries its time. */
size_t lo_faults_read(lo_faults *faults, void *out, size_t capacity);

/* Stops recording and frees everything. NULL is allowed. */
void lo_faults_close(lo_faults *faults);

/* As lo_spawn, with the page faults of the program and what it starts recorded from before its
   exec (the child waits until they are): *faults is the recording, or NULL with *faults_errno
   saying why the kernel refused (the program runs all the same). The child's wait at its gate
   is no part of the launch: it starts at `spawn_ns` (CLOCK_MONOTONIC, taken before the call)
   plus that wait, which *started_ns is set to and the child writes over the digits of
   envp[stamp_index] (`NAME=digits`, holding spawn_ns; -1 for none) before its exec. */
int lo_spawn_recording_faults(char *const argv[], char *const envp[], int out_fd, int err_fd, lo_faults **faults,
                              int *faults_errno, int stamp_index, uint64_t spawn_ns, uint64_t *started_ns);

/* Makes this process the subreaper of its descendants (PR_SET_CHILD_SUBREAPER): orphans of the
   programs it runs become its children, so it can find and end them. 0, or -1 with errno. */
int lo_become_subreaper(void);

#ifdef __cplusplus
}
#endif

#endif
