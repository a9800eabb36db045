// Starting a child process without Foundation's `Process`.
//
// On Linux, `Process.run()` copies each `/proc/self/fd` entry's 256-byte `d_name` whole, which
// reads past glibc's buffer once about 1,360 descriptors are open and crashed our test suite
// (swift-corelibs-foundation#5472, Swift 6.3.1). swift-subprocess, the library for the job,
// needs tools 6.2 and would raise every user's minimum (README: tools 6.1). This is posix_spawn
// and waitpid, in C because their types differ between Glibc and Darwin.
#ifndef CPINSTORE_SPAWN_H
#define CPINSTORE_SPAWN_H
#include <sys/types.h>

/// Starts the program at `path` with `argv` (NULL-terminated, `argv[0]` included) and the
/// inherited environment. Standard input is `inputDescriptor` when it is 0 or more, else a new
/// pipe whose writing end is returned in `*inputWrite`, else (both absent) /dev/null. Standard
/// output and error are new pipes whose reading ends are returned in `*outputRead` and
/// `*errorRead`, or /dev/null where the pointer is NULL. The ends returned are close-on-exec, and
/// the child keeps no other descriptor of ours. Returns the pid, or -1 with `errno` set and
/// nothing left open.
pid_t CPinStoreSpawn_start(const char *path, char *const argv[], int inputDescriptor,
                           int *inputWrite, int *outputRead, int *errorRead);

/// Waits for `pid` to end, retrying on EINTR. Returns 0 and sets `*exitStatus` when it exited
/// (`*signalNumber` is then -1), or `*signalNumber` when a signal ended it (`*exitStatus` is then
/// -1); returns -1 with `errno` set when it cannot be waited for.
int CPinStoreSpawn_wait(pid_t pid, int *exitStatus, int *signalNumber);

#endif
