// Test-only helpers that Swift cannot reach directly.
#ifndef CPINSTORE_TEST_SUPPORT_H
#define CPINSTORE_TEST_SUPPORT_H
#include <stddef.h>

/// Bytes of heap currently allocated by malloc (glibc `mallinfo2().uordblks`); 0 where unknown.
size_t CPinStoreTestSupport_heapInUse(void);

#endif
