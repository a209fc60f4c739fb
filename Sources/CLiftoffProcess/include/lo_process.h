// Starting and watching the programs `liftoff` runs: what Swift cannot call directly (fork and
// exec in one step, variadic syscall(2)). The command line's alone; the sampler does not use it.

#ifndef LO_PROCESS_H
#define LO_PROCESS_H

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

/* Makes this process the subreaper of its descendants (PR_SET_CHILD_SUBREAPER): orphans of the
   programs it runs become its children, so it can find and end them. 0, or -1 with errno. */
int lo_become_subreaper(void);

#ifdef __cplusplus
}
#endif

#endif
