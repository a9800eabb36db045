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

    /// Whether a key pin matches `keys` (SPKI SHA-256 of the validated chain, leaf first).
    static func keyPin(_ pin: Pin, matches keys: [Digest32]) -> Bool {
        if pin.depth == caKeyDepth { return keys.dropFirst().contains { $0.constantTimeEquals(pin.fingerprint) } }
        let depth = pin.depth - keyDepthBase
        return depth >= 0 && depth < keys.count && keys[depth].constantTimeEquals(pin.fingerprint)
    }

    /// The pins of one name: inline when there is one, so most names cost no array.
    enum Pins: Sendable {
        case one(Pin)
        case many([Pin])

        func appending(_ pin: Pin) -> Pins {
            switch self {
            case .one(let first): .many([first, pin])
            case .many(let pins): .many(pins + [pin])
            }
        }

        /// Calls `body` with each pin until it returns true; returns whether it did.
        @inline(__always)
        func first(where body: (Pin) -> Bool) -> Bool {
            switch self {
            case .one(let pin): return body(pin)
            case .many(let pins):
                for pin in pins where body(pin) { return true }
                return false
            }
        }

        var all: [Pin] {
            switch self {
            case .one(let pin): [pin]
            case .many(let pins): pins
            }
        }
    }

    /// Pins by lowercased exact name.
    let exact: [String: Pins]
    /// Pins of `*.suffix` names, by lowercased suffix.
    let wildcard: [String: Pins]
    /// Whether the index holds no pin at all (expired ones included).
    let isEmpty: Bool
    /// The latest `expires` of any pin (Unix seconds; `.min` when empty): the index has a
    /// valid pin at `t` exactly when `t < latestExpires`.
    let latestExpires: Int64

    static let empty = PinIndex(entries: [])

    init(entries: [FingerprintEntry]) {
        // Sized up front: a growing table would leave its smaller copies behind as garbage.
        var exact: [String: Pins] = Dictionary(minimumCapacity: entries.count)
        var wildcard: [String: Pins] = [:]
        var latest = Int64.min
        for entry in entries {
            guard let fingerprint = Digest32(entry.fingerprint) else { continue }
            let pin = Pin(fingerprint: fingerprint, expires: entry.expires, depth: Self.encodedDepth(entry))
            latest = max(latest, entry.expires)
            let name = HostName.normalized(entry.name)
            if name.hasPrefix("*.") {
                let suffix = String(name.dropFirst(2))
                wildcard[suffix] = wildcard[suffix].map { $0.appending(pin) } ?? .one(pin)
            } else {
                exact[name] = exact[name].map { $0.appending(pin) } ?? .one(pin)
            }
        }
        self.exact = exact
        self.wildcard = wildcard
        self.isEmpty = exact.isEmpty && wildcard.isEmpty
        self.latestExpires = latest
    }

    /// Calls `body` with every pin whose name matches `host` (already normalized): the exact
    /// name, then a `*.` entry for the host's parent (one label, as certificate wildcards).
    /// Stops early when `body` returns true; returns whether it did.
    @inline(__always)
    @discardableResult
    func forEachPin(matching host: String, _ body: (Pin) -> Bool) -> Bool {
        if let pins = exact[host], pins.first(where: body) { return true }
        guard !wildcard.isEmpty, let dot = host.utf8.firstIndex(of: UInt8(ascii: ".")) else { return false }
        let parent = String(host[host.index(after: dot)...])
        // "*.com"-style entries would need a parent with a dot of its own to be sane, but the
        // list decides what it pins; an empty parent never matches.
        guard !parent.isEmpty, let pins = wildcard[parent] else { return false }
        return pins.first(where: body)
    }

    /// Pins valid at `seconds` (Unix), for the `pinstore_valid_pins` gauge.
    func validPinCount(at seconds: Int64) -> Int {
        guard seconds < latestExpires else { return 0 }
        var count = 0
        for pins in exact.values { for pin in pins.all where seconds < pin.expires { count += 1 } }
        for pins in wildcard.values { for pin in pins.all where seconds < pin.expires { count += 1 } }
        return count
    }

    /// The pins as entries (names normalized, wildcards as `*.suffix`), sorted by name.
    var entries: [FingerprintEntry] {
        func entries(_ table: [String: Pins], prefix: String) -> [FingerprintEntry] {
            table.flatMap { name, pins in
                pins.all.map { pin in
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
