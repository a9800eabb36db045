import Foundation

/// The entries a store answers from, indexed by host name so a lookup costs the same with ten
/// entries or a hundred thousand. Immutable: an update builds a new index and swaps it in.
final class PinIndex: Sendable {
    struct Pin: Sendable {
        let fingerprint: Digest32
        let expires: Int64
        let depth: Int
    }

    /// Pins by lowercased exact name.
    let exact: [String: [Pin]]
    /// Pins of `*.suffix` names, by lowercased suffix.
    let wildcard: [String: [Pin]]
    /// Whether the index holds no entry at all (expired ones included).
    let isEmpty: Bool

    static let empty = PinIndex(entries: [])

    init(entries: [FingerprintEntry]) {
        var exact: [String: [Pin]] = [:]
        var wildcard: [String: [Pin]] = [:]
        for entry in entries {
            guard let fingerprint = Digest32(entry.fingerprint) else { continue }
            let pin = Pin(fingerprint: fingerprint, expires: entry.expires, depth: entry.depth)
            let name = HostName.normalized(entry.name)
            if name.hasPrefix("*.") {
                wildcard[String(name.dropFirst(2)), default: []].append(pin)
            } else {
                exact[name, default: []].append(pin)
            }
        }
        self.exact = exact
        self.wildcard = wildcard
        self.isEmpty = entries.isEmpty
    }

    /// Calls `body` with every pin whose name matches `host` (already normalized): the exact
    /// name, then a `*.` entry for the host's parent (one label, as certificate wildcards).
    /// Stops early when `body` returns true.
    @inline(__always)
    func forEachPin(matching host: String, _ body: (Pin) -> Bool) {
        if let pins = exact[host] {
            for pin in pins where body(pin) { return }
        }
        guard !wildcard.isEmpty, let dot = host.utf8.firstIndex(of: UInt8(ascii: ".")) else { return }
        let parent = String(host[host.index(after: dot)...])
        // "*.com"-style entries would need a parent with a dot of its own to be sane, but the
        // list decides what it pins; an empty parent never matches.
        guard !parent.isEmpty, let pins = wildcard[parent] else { return }
        for pin in pins where body(pin) { return }
    }
}

/// Host-name normalization shared by the index and lookups: ASCII lowercase, no trailing dot.
enum HostName {
    @inline(__always)
    static func normalized(_ name: String) -> String {
        var needsWork = false
        for byte in name.utf8 where (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) {
            needsWork = true
            break
        }
        if !needsWork, name.utf8.last != UInt8(ascii: ".") { return name }
        var result = needsWork ? String(decoding: name.utf8.map { ($0 >= 65 && $0 <= 90) ? $0 + 32 : $0 }, as: UTF8.self) : name
        if result.utf8.last == UInt8(ascii: ".") { result.removeLast() }
        return result
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

    /// Equality without an early exit: the time does not depend on where the digests differ.
    @inline(__always)
    func constantTimeEquals(_ other: Digest32) -> Bool {
        ((w0 ^ other.w0) | (w1 ^ other.w1) | (w2 ^ other.w2) | (w3 ^ other.w3)) == 0
    }
}
