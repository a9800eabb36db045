// Test-only helpers that Swift cannot reach directly.
#ifndef CPINSTORE_TEST_SUPPORT_H
#define CPINSTORE_TEST_SUPPORT_H
#include <stddef.h>

/// Bytes of heap currently allocated by malloc (glibc `mallinfo2().uordblks`); 0 where unknown.
size_t CPinStoreTestSupport_heapInUse(void);

/// A TCP socket listening on 127.0.0.1 at a port the kernel picks, that nobody ever accepts
/// from: connections complete (the backlog) and hang. Returns the descriptor and sets `*port`,
/// or -1. Written in C because the socket structures differ between Glibc and Darwin
/// (`sin_len`, `SOCK_STREAM`'s type) and C spells them the same on both.
int CPinStoreTestSupport_silentListener(int *port);

/// A TCP socket bound to 127.0.0.1 at a port the kernel picks, never listening: connections to
/// the port are refused, and no other process can take it while the descriptor is open.
/// Returns the descriptor and sets `*port`, or -1.
int CPinStoreTestSupport_closedPort(int *port);

/// Closes a descriptor from `CPinStoreTestSupport_silentListener` or `_closedPort`.
void CPinStoreTestSupport_close(int descriptor);

/// Raises this process's soft limit on open descriptors to `wanted` (up to the hard limit) when
/// it is lower. Returns 1 when `wanted` descriptors may now be open, 0 otherwise. In C because
/// `RLIMIT_NOFILE`'s type differs between Glibc and Darwin.
int CPinStoreTestSupport_allowDescriptors(int wanted);

#endif
