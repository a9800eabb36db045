import Foundation

/// The pins a store answers from, indexed by host name so a lookup costs the same with ten
/// entries or a hundred thousand. Immutable: an update builds a new index and swaps it in.
///
/// Kept small on purpose (a store may hold 100,000 pins): the index is the only copy of a
/// list's pins a store keeps, a name holding one pin (the common case) stores it inline, and
/// ``entries`` rebuilds the entries when someone asks for them.
final class PinIndex: Sendable {
    struct Pin: Sendable {
        let fingerprint: Digest32
        let expires: Int64
        /// The chain position of a certificate pin; for key pins ``keyDepthBase`` + depth, or
        /// ``caKeyDepth``. Encoded so that a key pin never passes the certificate checks
        /// (`depth == 0`, `depth < chain.count`) and the pin stays 48 bytes.
        let depth: Int

        /// Whether the pin is a key pin (SPKI SHA-256).
        var isKeyPin: Bool { depth >= PinIndex.keyDepthBase }

        /// The pin in the one pin model that static policies use too (the storage stays 48 bytes).
        var kind: PinIdentity.Kind {
            if depth == PinIndex.caKeyDepth { return .caKey }
            if depth >= PinIndex.keyDepthBase { return .key(depth: depth - PinIndex.keyDepthBase) }
            return .certificate(depth: depth)
        }
    }

    /// ``Pin/depth`` of a key pin at depth d is `keyDepthBase + d`.
    static let keyDepthBase = 1 << 20
    /// ``Pin/depth`` of a CA key pin (any certificate above the leaf).
    static let caKeyDepth = 1 << 21

    static func encodedDepth(_ entry: FingerprintEntry) -> Int {
        switch entry.kind {
        case .certificate: entry.depth
        case .publicKey: keyDepthBase + entry.depth
        case .caPublicKey: caKeyDepth
        }
    }

    /// Pins by lowercased exact name.
    let exact: PinNameTable
    /// Pins of `*.suffix` names, by lowercased suffix.
    let wildcard: PinNameTable
    /// Whether the index holds no pin at all (expired ones included).
    let isEmpty: Bool
    /// How many pins the index holds (expired ones included).
    var pinCount: Int { exact.pins.count + wildcard.pins.count }
    /// The latest `expires` of any pin (Unix seconds; `.min` when empty): the index has a
    /// valid pin at `t` exactly when `t < latestExpires`.
    let latestExpires: Int64

    static let empty = PinIndex(entries: [])

    init(entries: [FingerprintEntry]) {
        var exact: [(name: String, pin: Pin)] = []
        var wildcard: [(name: String, pin: Pin)] = []
        exact.reserveCapacity(entries.count)
        var latest = Int64.min
        for entry in entries {
            guard let fingerprint = Digest32(entry.fingerprint) else { continue }
            let pin = Pin(fingerprint: fingerprint, expires: entry.expires, depth: Self.encodedDepth(entry))
            latest = max(latest, entry.expires)
            let name = HostName.normalized(entry.name)
            if name.hasPrefix("*.") {
                wildcard.append((String(name.dropFirst(2)), pin))
            } else {
                exact.append((name, pin))
            }
        }
        self.exact = PinNameTable(exact)
        self.wildcard = PinNameTable(wildcard)
        self.isEmpty = self.exact.isEmpty && self.wildcard.isEmpty
        self.latestExpires = latest
    }

    /// Calls `body` with every pin whose name matches `host` (already normalized): the exact
    /// name, then a `*.` entry for the host's parent (one label, as certificate wildcards).
    /// Stops early when `body` returns true; returns whether it did.
    @inline(__always)
    @discardableResult
    func forEachPin(matching host: String, _ body: (Pin) -> Bool) -> Bool {
        var none: Void = ()
        return forEachPin(matching: host, updating: &none) { pin, _ in body(pin) }
    }

    /// ``forEachPin(matching:_:)`` for a `body` that records what it saw in `state`: the hot
    /// path's form. A closure that wrote to captured local variables instead paid a dynamic
    /// exclusivity check (swift_beginAccess) per write; an `inout` is checked at compile time.
    @inline(__always)
    @discardableResult
    func forEachPin<State>(matching host: String, updating state: inout State, _ body: (Pin, inout State) -> Bool) -> Bool {
        func lookUp(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
            if exact.firstPin(named: name, where: { body($0, &state) }) { return true }
            guard !wildcard.isEmpty, let dot = name.firstIndex(of: UInt8(ascii: ".")) else { return false }
            // "*.com"-style entries would need a parent with a dot of its own to be sane, but the
            // list decides what it pins; an empty parent never matches.
            let parent = UnsafeBufferPointer(rebasing: name[(dot + 1)...])
            return !parent.isEmpty && wildcard.firstPin(named: parent, where: { body($0, &state) })
        }
        // Native strings are contiguous UTF-8; a bridged one is copied once.
        return host.utf8.withContiguousStorageIfAvailable(lookUp) ?? Array(host.utf8).withUnsafeBufferPointer(lookUp)
    }

    /// The earliest `expires` later than `seconds` (Unix), or `.max` when no pin expires later.
    func nextExpiry(after seconds: Int64) -> Int64 {
        guard seconds < latestExpires else { return .max }
        var next = Int64.max
        for pin in exact.pins where pin.expires > seconds && pin.expires < next { next = pin.expires }
        for pin in wildcard.pins where pin.expires > seconds && pin.expires < next { next = pin.expires }
        return next
    }

    /// Pins valid at `seconds` (Unix), for the `pinstore_valid_pins` gauge.
    func validPinCount(at seconds: Int64) -> Int {
        guard seconds < latestExpires else { return 0 }
        return exact.pins.count { seconds < $0.expires } + wildcard.pins.count { seconds < $0.expires }
    }

    /// The pins as entries (names normalized, wildcards as `*.suffix`), sorted by name.
    var entries: [FingerprintEntry] {
        func entries(_ table: PinNameTable, prefix: String) -> [FingerprintEntry] {
            table.names.flatMap { name, pins in
                pins.map { pin in
                    let (depth, kind): (Int, FingerprintEntry.Kind) = pin.depth == PinIndex.caKeyDepth ? (0, .caPublicKey)
                        : pin.isKeyPin ? (pin.depth - PinIndex.keyDepthBase, .publicKey) : (pin.depth, .certificate)
                    return FingerprintEntry(name: prefix + name, fingerprint: pin.fingerprint.data, expires: pin.expires, depth: depth, kind: kind)
                }
            }
        }
        return (entries(exact, prefix: "") + entries(wildcard, prefix: "*."))
            .sorted { ($0.name, $0.kind.rawValue, $0.depth, $0.expires) < ($1.name, $1.kind.rawValue, $1.depth, $1.expires) }
    }
}

/// Pins by name, in four flat arrays: a store may hold 100,000 pins, and a `[String: [Pin]]`
/// costs a heap allocation per name (most names are longer than a small string) and a bucket
/// of the full value size per slot, about three times what is kept here. (Written by hand for
/// that reason only: it is an open-addressing table of indices with a seeded hash, built once
/// and never changed.)
struct PinNameTable: Sendable {
    /// Where one name's bytes and pins are.
    struct Slot: Sendable {
        let nameStart: UInt32
        let nameCount: UInt32
        let pinStart: UInt32
        let pinCount: UInt32
    }

    /// Every name's UTF-8, back to back.
    private let nameBytes: [UInt8]
    /// One slot per distinct name.
    private let slots: [Slot]
    /// Every pin, grouped by name in the order the list gave them.
    let pins: [PinIndex.Pin]
    /// Open addressing over `slots`: a slot index, or -1 for empty; the count is a power of two
    /// at least twice the number of names, so probes stay short.
    private let buckets: [Int32]
    /// This table's random hash key (``hash(_:seed:)``).
    private let seed: UInt64

    var isEmpty: Bool { slots.isEmpty }

    init(_ named: [(name: String, pin: PinIndex.Pin)]) {
        // From Swift's own per-process random seed (mixed with the count, so two tables of one
        // process differ): as random as `Hasher`, and repeatable under
        // SWIFT_DETERMINISTIC_HASHING=1 like it, which keeps benchmark runs comparable.
        var seeding = Hasher()
        seeding.combine(named.count)
        let seed = UInt64(truncatingIfNeeded: seeding.finalize())
        self.seed = seed
        guard !named.isEmpty, named.count < Int(Int32.max) else {
            (nameBytes, slots, pins, buckets) = ([], [], [], [])
            return
        }
        var bucketCount = 8
        while bucketCount < named.count * 2 { bucketCount <<= 1 }
        var buckets = [Int32](repeating: -1, count: bucketCount)
        var nameBytes: [UInt8] = []
        var firstEntry: [Int] = []          // per slot: the entry that named it
        var slotOfEntry = [Int32](repeating: 0, count: named.count)
        var pinCounts: [UInt32] = []
        for (index, item) in named.enumerated() {
            var name = item.name
            let slot: Int32 = name.withUTF8 { bytes in
                var bucket = Self.hash(bytes, seed: seed) & (bucketCount - 1)
                while buckets[bucket] >= 0 {
                    let existing = Int(buckets[bucket])
                    let other = named[firstEntry[existing]].name
                    if other.utf8.elementsEqual(bytes) { return Int32(existing) }
                    bucket = (bucket + 1) & (bucketCount - 1)
                }
                buckets[bucket] = Int32(firstEntry.count)
                firstEntry.append(index)
                pinCounts.append(0)
                return buckets[bucket]
            }
            slotOfEntry[index] = slot
            pinCounts[Int(slot)] += 1
        }
        // Lay the pins out name by name (a counting sort keeps the list's order within a name).
        var slots: [Slot] = []
        slots.reserveCapacity(firstEntry.count)
        var nextPin: [Int] = []
        nextPin.reserveCapacity(firstEntry.count)
        var pinStart = 0
        for (slot, entry) in firstEntry.enumerated() {
            let start = nameBytes.count
            nameBytes.append(contentsOf: named[entry].name.utf8)
            slots.append(Slot(nameStart: UInt32(start), nameCount: UInt32(nameBytes.count - start),
                              pinStart: UInt32(pinStart), pinCount: pinCounts[slot]))
            nextPin.append(pinStart)
            pinStart += Int(pinCounts[slot])
        }
        var pins = [PinIndex.Pin](repeating: named[0].pin, count: named.count)
        for (index, item) in named.enumerated() {
            let slot = Int(slotOfEntry[index])
            pins[nextPin[slot]] = item.pin
            nextPin[slot] += 1
        }
        // Byte arrays grow by doubling: give back the slack.
        self.nameBytes = Array(nameBytes)
        self.slots = slots
        self.pins = pins
        self.buckets = buckets
    }

    /// A hash of `bytes` under this table's random `seed`: eight bytes per multiply.
    ///
    /// Not Swift's `Hasher` (SipHash-1-3, about 275 instructions for a 28-byte name, a tenth of
    /// a `matchPins`). Flooding is not a worry this hash has to carry alone: the table is built
    /// once from names the team signed or configured and never grows, so a peer only looks
    /// names up (its probes stop at the first empty bucket, and the buckets are at most half
    /// full); and the seed comes from the process's random hashing seed, so even the list's
    /// author cannot aim names at one bucket of a running store.
    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>, seed: UInt64) -> Int {
        // Multiply-fold: the high and low halves of a 128-bit product, xored (as in wyhash).
        @inline(__always) func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
            let (high, low) = a.multipliedFullWidth(by: b)
            return high ^ low
        }
        // Odd constants with mixed bits (the fractional parts of the golden ratio and of pi).
        let k0: UInt64 = 0x9E37_79B9_7F4A_7C15, k1: UInt64 = 0x243F_6A88_85A3_08D3
        var state = seed ^ k1 ^ UInt64(truncatingIfNeeded: bytes.count)
        let raw = UnsafeRawBufferPointer(bytes)
        var offset = 0
        while offset + 8 <= raw.count {
            state = fold(state ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self), k0 ^ seed)
            offset += 8
        }
        // The last zero to seven bytes, little end first (the length went into the start).
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < raw.count {
            tail |= UInt64(raw[offset]) << shift
            shift += 8
            offset += 1
        }
        return Int(truncatingIfNeeded: fold(fold(state ^ tail, k0 ^ seed), k1))
    }

    /// The slot of `name`, if the table has it.
    @inline(__always)
    private func slot(named name: UnsafeBufferPointer<UInt8>) -> Slot? {
        guard let query = name.baseAddress, !slots.isEmpty else { return nil }
        let mask = buckets.count &- 1
        var bucket = Self.hash(name, seed: seed) & mask
        return nameBytes.withUnsafeBufferPointer { all -> Slot? in
            guard let names = all.baseAddress else { return nil }
            return buckets.withUnsafeBufferPointer { buckets in
                slots.withUnsafeBufferPointer { slots in
                    while true {
                        let index = Int(buckets[bucket])
                        guard index >= 0 else { return nil }
                        let slot = slots[index]
                        // Every stored name lies inside `names` (the table built both).
                        if Int(slot.nameCount) == name.count, memcmp(names + Int(slot.nameStart), query, name.count) == 0 {
                            return slot
                        }
                        bucket = (bucket &+ 1) & mask
                    }
                }
            }
        }
    }

    /// Calls `body` with each pin of `name` until it returns true; returns whether it did.
    @inline(__always)
    func firstPin(named name: UnsafeBufferPointer<UInt8>, where body: (PinIndex.Pin) -> Bool) -> Bool {
        guard let slot = slot(named: name) else { return false }
        return pins.withUnsafeBufferPointer { pins in
            for index in Int(slot.pinStart)..<Int(slot.pinStart) + Int(slot.pinCount) where body(pins[index]) { return true }
            return false
        }
    }

    /// The pins of `name`, if any.
    subscript(name: String) -> ArraySlice<PinIndex.Pin>? {
        var name = name
        guard let slot = name.withUTF8({ slot(named: $0) }) else { return nil }
        return pins[Int(slot.pinStart)..<Int(slot.pinStart + slot.pinCount)]
    }

    /// Every name with its pins (for the rare paths that must look at all of them).
    var names: [(name: String, pins: ArraySlice<PinIndex.Pin>)] {
        slots.map { slot in
            (String(decoding: nameBytes[Int(slot.nameStart)..<Int(slot.nameStart + slot.nameCount)], as: UTF8.self),
             pins[Int(slot.pinStart)..<Int(slot.pinStart + slot.pinCount)])
        }
    }
}

/// A SHA-256 digest held as four machine words, so the hot path compares pins without
/// touching `Data` and in constant time (every word is always compared).
struct Digest32: Sendable, Hashable {
    let w0, w1, w2, w3: UInt64

    /// nil unless `data` is exactly 32 bytes.
    @inline(__always)
    init?(_ data: Data) {
        guard data.count == 32 else { return nil }
        (w0, w1, w2, w3) = data.withUnsafeBytes { raw in
            (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
             raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        }
    }

    /// The 32 bytes again.
    var data: Data {
        var data = Data(capacity: 32)
        for word in [w0, w1, w2, w3] { withUnsafeBytes(of: word) { data.append(contentsOf: $0) } }
        return data
    }

    /// Equality without an early exit: the time does not depend on where the digests differ.
    @inline(__always)
    func constantTimeEquals(_ other: Digest32) -> Bool {
        ((w0 ^ other.w0) | (w1 ^ other.w1) | (w2 ^ other.w2) | (w3 ^ other.w3)) == 0
    }
}
