internal import CPinStoreShims

/// Gives the memory a large list's parse freed back to the system.
///
/// Decoding a 100,000-entry list allocates several times the list's size in short-lived
/// objects (JSONDecoder's map, one string per field), all freed once the index is built.
/// glibc keeps freed heap pages resident for reuse, so without this a process that loaded a
/// large list once would carry about 45 MiB more for the rest of its life. `malloc_trim`
/// walks the heap once (milliseconds); it runs only after a list of many pins was installed,
/// which happens at most once per download.
enum FreedMemory {
    /// Lists below this many pins leave too little behind to be worth a heap walk.
    static let largeListPinCount = 10_000

    static func returnAfterLargeList(pinCount: Int) {
        guard pinCount >= largeListPinCount else { return }
        CPinStoreShims_malloc_trim()
    }
}
