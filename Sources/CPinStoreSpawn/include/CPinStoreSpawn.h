// Starting a child process without Foundation's `Process`.
//
// On Linux, `Process.run()` copies each `/proc/self/fd` entry's 256-byte `d_name` whole, which
// reads past glibc's buffer once about 1,360 descriptors are open and crashed our test suite
// (swift-corelibs-foundation#5472, Swift 6.3.1). swift-subprocess, the library for the job,
// needs tools 6.2 and would raise every user's minimum (README: tools 6.1). This is posix_spawn
// and waitid/waitpid, in C because their types differ between Glibc and Darwin.
#ifndef CPINSTORE_SPAWN_H
#define CPINSTORE_SPAWN_H
#include <sys/types.h>

/// Starts the program at `path` with `argv` (NULL-terminated, `argv[0]` included) and the
/// inherited environment, every signal at its default action and none blocked (a Swift
/// concurrency thread blocks several; an ignored SIGPIPE would pass down).
///
/// Standard input is `inputDescriptor` when it is 0 or more, else a new pipe whose writing end
/// is returned in `*inputWrite`, else (both absent) /dev/null. Standard output and error are new
/// pipes whose reading ends are returned in `*outputRead` and `*errorRead`, or /dev/null where
/// the pointer is NULL. The ends returned are close-on-exec. The child keeps no other
/// descriptor: on Apple platforms and glibc 2.34 or later every other one is closed; on other C
/// libraries only those opened close-on-exec (as Foundation, NIO and this package open theirs).
///
/// With `ownProcessGroup` the child leads a new process group, so `kill(-pid, ...)` reaches
/// what it started too (`sh -c "a | b"`).
///
/// Returns the pid, or -1 with `errno` set and nothing left open.
pid_t CPinStoreSpawn_start(const char *path, char *const argv[], int inputDescriptor,
                           int *inputWrite, int *outputRead, int *errorRead, int ownProcessGroup);

/// Waits for `pid` to end, retrying on EINTR. Returns 0 and sets `*exitStatus` when it exited
/// (`*signalNumber` is then -1), or `*signalNumber` when a signal ended it (`*exitStatus` is then
/// -1); returns -1 with `errno` set when it cannot be waited for.
///
/// With `reap` 0 the child is left a zombie (`waitid` with `WNOWAIT`): its pid cannot be reused,
/// so signalling it stays safe until ``CPinStoreSpawn_reap`` is called.
int CPinStoreSpawn_wait(pid_t pid, int *exitStatus, int *signalNumber, int reap);

/// Reaps `pid` after ``CPinStoreSpawn_wait`` saw it end without reaping it.
void CPinStoreSpawn_reap(pid_t pid);

#endif
