import Foundation

/// A host name as PinStore compares it, made once where a name enters the library (a URL's
/// host, the name a TLS connection was opened for, a certificate name, a list entry, a policy
/// domain, an expected name).
///
/// ```swift
/// let host = try HostName("API.Example.com.")   // "api.example.com"
/// let idn = try HostName("bücher.example")      // "xn--bcher-kva.example", as URL and the transports write it
/// let v6 = try HostName("[0:0::1]")             // "::1"
/// ```
///
/// The form is ASCII-lowercased, without a trailing dot, an IPv6 address in its canonical
/// text form without brackets, and an internationalized name in its `xn--` (IDNA) form,
/// converted by Foundation's `URL`, the routine the transports use to put the name on the
/// wire: a name written in Unicode therefore matches the connections made to it. A name that
/// can never be a host is unrepresentable: empty, an empty label (`.api.example.com`,
/// `api..example.com`), a space, a NUL or another control character, or Unicode that has no
/// IDNA form. OpenSSL reads a leading dot as "any subdomain of", and a NUL can make two layers
/// see two different names: both are refused everywhere.
public struct HostName: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The normalized name: what pins, policies and the expected hosts are compared against.
    public let text: String

    /// Normalizes `name`.
    ///
    /// - Throws: ``PinStoreError/Code/invalidHostName`` when `name` can never be a host name
    ///   (see the type's documentation).
    public init(_ name: String) throws(PinStoreError) {
        // Most names arrive in their final form: one pass decides them.
        if Self.isAlreadyNormalized(name) {
            self.text = name
            return
        }
        guard let key = Self.lookupKey(name), Self.hasHostCharacters(key) else {
            throw PinStoreError(.invalidHostName, Self.problem(name))
        }
        self.text = key
    }

    /// Whether a lookup key is written only with what a host name or pattern holds (letters,
    /// digits, `-`, `_`, `.` and `*`), or is an IP address: a name with a port, a scheme or a
    /// path (`api.example.com:443`, `https://api.example.com`) can never match a connection,
    /// and a policy or list entry written so would leave its host unpinned without a word.
    static func hasHostCharacters(_ key: String) -> Bool {
        // Over the contiguous bytes (every native string has them): every `matchPins` makes a
        // HostName, and the view's iterator costs several times the byte loop.
        let plain = key.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(isHostByte) } ?? key.utf8.allSatisfy(isHostByte)
        return plain || IPAddressText.isAddress(key)
    }

    /// Whether `name` is already what ``init(_:)`` makes of it: only lowercase ASCII letters,
    /// digits, `-`, `_` and `*`, and dots between non-empty labels, with no trailing dot. Every
    /// name it accepts, the full path (``lookupKey(_:)`` then ``hasHostCharacters(_:)``) accepts
    /// unchanged; anything else goes that way. Every `matchPins` and every pooled re-check makes
    /// a HostName, so this reads eight bytes at a time (``isAlreadyNormalized(bytes:)``).
    @inline(__always)
    static func isAlreadyNormalized(_ name: String) -> Bool {
        name.utf8.withContiguousStorageIfAvailable(isAlreadyNormalized(bytes:)) ?? false
    }

    /// ``isAlreadyNormalized(_:)`` over UTF-8 bytes, in two passes that each cost a few
    /// instructions a byte (one pass tracking both took 9): every byte against a table of the
    /// bytes a normalized name keeps, then the dots a machine word at a time for an empty label.
    static func isAlreadyNormalized(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let last = bytes.last, last != UInt8(ascii: ".") else { return false }
        let foreign = foreignBytes.withUnsafeBufferPointer { foreign in
            var found: UInt8 = 0
            for byte in bytes { found |= foreign[Int(byte)] }
            return found
        }
        return foreign == 0 && !hasEmptyLabel(bytes)
    }

    /// For ``isAlreadyNormalized(bytes:)``, by byte: 0 for a byte a normalized name keeps as it
    /// is (lowercase ASCII letters, digits, `-`, `_`, `*`, `.`), 1 for any other.
    private static let foreignBytes: [UInt8] = (0...255).map { (byte: Int) -> UInt8 in
        switch UInt8(byte) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "*"), UInt8(ascii: "."): 0
        default: 1
        }
    }

    /// Whether ASCII `bytes` (not empty, not ending in a dot) start with a dot or hold two
    /// dots in a row: eight bytes a step, each byte a lane of a word (byte i in bits 8i to
    /// 8i+7), the lanes tested at once.
    @inline(__always)
    private static func hasEmptyLabel(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let low: UInt64 = 0x7F7F_7F7F_7F7F_7F7F, high: UInt64 = 0x8080_8080_8080_8080
        /// Bit 7 of each lane that holds a dot (exact: no sum carries out of its lane).
        @inline(__always) func dots(_ word: UInt64) -> UInt64 {
            let difference = word ^ 0x2E2E_2E2E_2E2E_2E2E
            return ~(((difference & low) &+ low) | difference) & high
        }
        /// Bit 7 of each lane holding a dot right after a dot; `before`: the dots of the
        /// previous eight bytes, whose top lane carries in.
        @inline(__always) func doubled(_ dots: UInt64, after before: UInt64) -> UInt64 {
            dots & ((dots << 8) | (before >> 56))
        }
        let raw = UnsafeRawBufferPointer(bytes)
        guard raw.count >= 8 else {
            // Shorter than a word: its bytes, the lanes past them zero (never a dot).
            var word: UInt64 = 0
            for index in 0..<raw.count { word |= UInt64(raw[index]) << UInt64(index * 8) }
            // Starting as if after a dot makes a leading dot an empty label too.
            return doubled(dots(word), after: high) != 0
        }
        var found: UInt64 = 0
        var before = high
        var offset = 0
        while offset + 8 <= raw.count {
            let word = dots(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            found |= doubled(word, after: before)
            before = word
            offset += 8
        }
        if offset < raw.count {
            // The last one to seven bytes: the word that ends the name, overlapping the one
            // before (a pair judged twice is judged alike). Its first byte follows byte
            // count - 9, so that byte's dot carries in.
            let start = raw.count - 8
            let word = dots(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: start, as: UInt64.self)))
            found |= doubled(word, after: raw[start - 1] == UInt8(ascii: ".") ? high : 0)
        }
        return found != 0
    }

    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "*"): true
        default: false
        }
    }

    /// A name already normalized by ``lookupKey(_:)``.
    package init(normalized text: String) {
        self.text = text
    }

    /// Whether the name is an IPv4 or IPv6 address.
    public var isIPAddress: Bool { IPAddressText.isAddress(text) }

    public var description: String { text }

    public static func < (lhs: HostName, rhs: HostName) -> Bool { lhs.text < rhs.text }

    /// Why `name` is not a host name, for errors.
    static func problem(_ name: String) -> String {
        if name.utf8.contains(where: { $0 >= 0x80 }), idnaASCII(name) == nil {
            return "\(String(reflecting: name)) is not a host name: its Unicode has no IDNA (xn--) form."
        }
        if let key = lookupKey(name), !hasHostCharacters(key) {
            return "\(String(reflecting: name)) is not a host name: it has characters no host name has. "
                + "Write the host alone, without a scheme, port or path (\"api.example.com\", not \"https://api.example.com:443/\")."
        }
        return "\(String(reflecting: name)) is not a host name: it is empty, has an empty label (a leading dot or \"..\"), "
            + "or contains a space or a control character."
    }

    /// The name used to look pins up, or nil when `name` is not a usable host name (see the type's
    /// documentation). Lowercases ASCII and drops one trailing dot. One pass over the bytes; the
    /// common case (already lowercase, no trailing dot) returns `name` itself without copying.
    @inline(__always)
    static func lookupKey(_ name: String) -> String? {
        // Native strings are contiguous UTF-8: scanning the buffer costs a few cycles a byte,
        // which keeps `matchPins` as fast as it was before names were checked.
        let scan = name.utf8.withContiguousStorageIfAvailable(scanBytes) ?? scanBytes(Array(name.utf8))
        switch scan {
        case .clean: return name
        case .needsNormalizing: return normalized(name)
        case .invalid:
            guard name.utf8.contains(where: { $0 >= 0x80 }) else { return nil }
            // An internationalized name: its IDNA form, judged again (it must be a clean name).
            guard let ascii = idnaASCII(name), !ascii.utf8.contains(where: { $0 >= 0x80 }) else { return nil }
            switch ascii.utf8.withContiguousStorageIfAvailable(scanBytes) ?? scanBytes(Array(ascii.utf8)) {
            case .invalid: return nil
            case .clean: return ascii
            case .needsNormalizing: return normalized(ascii)
            }
        }
    }

    /// The `xn--` form of an internationalized name, as Foundation's `URL` writes the host of
    /// `https://<name>/` (the transports send that form: URLSession and AsyncHTTPClient both
    /// take the host from a `URL`). nil when the name cannot be a URL host. Written with URL
    /// rather than a Punycode routine of our own so that a name is converted exactly as the
    /// connection to it will be.
    static func idnaASCII(_ name: String) -> String? {
        // Characters that would make `name` more than a host inside the URL.
        guard !name.contains(where: { "/?#@:[]%\\ ".contains($0) }), !name.isEmpty,
              let host = URL(string: "https://" + name + "/")?.host, !host.isEmpty else { return nil }
        return host.lowercased()
    }

    enum Scan { case invalid, clean, needsNormalizing }

    @inline(__always)
    static func scanBytes<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> Scan {
        // "" has no label at all.
        guard let last = bytes.last else { return .invalid }
        let dot = UInt8(ascii: ".")
        // Flags gathered without branches (this runs for every `matchPins`): bit 0 refuses the
        // name, bit 1 sends it to `normalized` (an uppercase letter, or a colon: perhaps an
        // IPv6 address, which `normalized` puts in its canonical form).
        var flags: UInt8 = 0
        // Starting as if after a dot makes a leading dot an empty label (a lone "." too).
        var previousWasDot: UInt8 = 1
        for byte in bytes {
            let isDot: UInt8 = byte == dot ? 1 : 0
            // A control character, a space, DEL, or a non-ASCII byte: the name is refused here,
            // and `lookupKey` then tries an internationalized name's `xn--` form (one compare
            // for both, so `matchPins` pays nothing for IDN support).
            let control: UInt8 = byte <= 0x20 || byte >= 0x7f ? 1 : 0
            let upperOrColon: UInt8 = byte &- UInt8(ascii: "A") < 26 || byte == UInt8(ascii: ":") ? 2 : 0
            flags |= (isDot & previousWasDot) | control | upperOrColon
            previousWasDot = isDot
        }
        if flags & 1 != 0 { return .invalid }
        return flags & 2 != 0 || last == dot ? .needsNormalizing : .clean
    }

    /// ASCII lowercase, no trailing dot, and an IPv6 address (bracketed or not) in its one
    /// canonical text form (`0:0::1` and `[::1]` become `::1`), so every table keyed by host
    /// (list pins, `domainsConfig`, expected hosts) finds an address however it is written, as
    /// the leaf rule and static policies do. Does not judge the name; use ``lookupKey(_:)``
    /// where a malformed name must be refused.
    @inline(__always)
    static func normalized(_ name: String) -> String {
        // An internationalized name in its `xn--` form (lookupKey converts it without coming back here).
        if name.utf8.contains(where: { $0 >= 0x80 }) { return lookupKey(name) ?? name }
        var needsWork = false
        var colon = false
        for byte in name.utf8 {
            needsWork = needsWork || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            colon = colon || byte == UInt8(ascii: ":")
        }
        if !needsWork, !colon, name.utf8.last != UInt8(ascii: ".") { return name }
        var result = needsWork ? String(decoding: name.utf8.map { ($0 >= 65 && $0 <= 90) ? $0 + 32 : $0 }, as: UTF8.self) : name
        if result.utf8.last == UInt8(ascii: ".") { result.removeLast() }
        return colon ? canonicalIPv6(result) : result
    }

    /// `name` as inet_ntop writes it when it is an IPv6 address (with or without brackets);
    /// otherwise `name` unchanged.
    static func canonicalIPv6(_ name: String) -> String {
        let bare = name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
        return IPAddressText.isAddress(bare) ? IPAddressText.canonical(bare) : name
    }

    /// Why `name` cannot be the name of a list entry, or nil when it can. Beyond
    /// ``lookupKey(_:)``: a wildcard must sit on a registrable domain, never directly on a
    /// top-level domain (`*.com`, `*.test`) or on a common public suffix (`*.co.uk`), where it
    /// would pin every site under that suffix.
    static func listEntryProblem(_ name: String) -> String? {
        guard let key = lookupKey(name) else {
            return "the name is empty, has an empty label (a leading dot or \"..\"), or contains spaces or control characters"
        }
        guard hasHostCharacters(key) else {
            return "the name has characters no host name has (a scheme, a port or a path?)"
        }
        guard key.hasPrefix("*.") else { return nil }
        let suffix = key.dropFirst(2)
        if !suffix.contains(".") || commonPublicSuffixes.contains(String(suffix)) {
            return "a wildcard directly on the public suffix \"\(suffix)\" would cover every site under it"
        }
        return nil
    }

    /// Multi-label public suffixes common enough to be worth refusing wildcards on. This is a
    /// small built-in list, not the Public Suffix List: it stops the obvious mistakes
    /// (`*.co.uk`), not every one. Single-label suffixes (`*.com`, `*.io`) are refused by
    /// rule, without a list.
    static let commonPublicSuffixes: Set<String> = [
        "co.uk", "org.uk", "ac.uk", "gov.uk", "me.uk", "ltd.uk", "plc.uk", "net.uk", "nhs.uk",
        "com.au", "net.au", "org.au", "edu.au", "gov.au",
        "co.nz", "org.nz", "net.nz", "govt.nz",
        "co.jp", "ne.jp", "or.jp", "ac.jp", "go.jp",
        "co.kr", "or.kr", "ne.kr",
        "com.br", "net.br", "org.br", "gov.br",
        "com.cn", "net.cn", "org.cn", "gov.cn",
        "com.hk", "com.tw", "com.sg", "com.my",
        "co.in", "net.in", "org.in", "gov.in",
        "co.za", "org.za", "gov.za",
        "com.mx", "com.ar", "com.co", "com.tr", "com.ua", "com.pl", "co.il",
        "github.io", "herokuapp.com", "appspot.com", "cloudfront.net", "azurewebsites.net",
        "blogspot.com", "netlify.app", "vercel.app", "pages.dev", "workers.dev",
    ]
}
