import Foundation

/// Host names as PinStore compares them: ASCII-lowercased, without a trailing dot, and only
/// when they are names at all.
///
/// Every entry point goes through here: ``PinStore/validate(commonName:fingerprint:)`` and its
/// siblings (via ``lookupKey(_:)``), list entries and fallback data (via
/// ``listEntryProblem(_:)``), ``PinStore/Configuration/expectedCommonNames`` and the host name
/// the normal trust evaluation checks the certificate against (``ChainValidator``). A name
/// with a NUL or another control character, a space, or an empty label (`.api.example.com`,
/// `api..example.com`, `""`) is refused everywhere: OpenSSL reads a leading dot as "any
/// subdomain of", and a NUL can make two layers see two different names.
package enum HostName {
    /// The name used to look pins up, or nil when `name` is not a usable host name (see the type's
    /// documentation). Lowercases ASCII and drops one trailing dot. One pass over the bytes; the
    /// common case (already lowercase, no trailing dot) returns `name` itself without copying.
    @inline(__always)
    package static func lookupKey(_ name: String) -> String? {
        // Native strings are contiguous UTF-8: scanning the buffer costs a few cycles a byte,
        // which keeps `validate` as fast as it was before names were checked.
        let scan = name.utf8.withContiguousStorageIfAvailable(scanBytes) ?? scanBytes(Array(name.utf8))
        switch scan {
        case .invalid: return nil
        case .clean: return name
        case .needsNormalizing: return normalized(name)
        }
    }

    enum Scan { case invalid, clean, needsNormalizing }

    @inline(__always)
    static func scanBytes<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> Scan {
        // "" has no label at all.
        guard let last = bytes.last else { return .invalid }
        let dot = UInt8(ascii: ".")
        // Flags gathered without branches (this runs for every `validate`): bit 0 refuses the
        // name, bit 1 sends it to `normalized` (an uppercase letter, or a colon: perhaps an
        // IPv6 address, which `normalized` puts in its canonical form).
        var flags: UInt8 = 0
        // Starting as if after a dot makes a leading dot an empty label (a lone "." too).
        var previousWasDot: UInt8 = 1
        for byte in bytes {
            let isDot: UInt8 = byte == dot ? 1 : 0
            let control: UInt8 = byte <= 0x20 || byte == 0x7f ? 1 : 0
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
    package static func normalized(_ name: String) -> String {
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
    package static func listEntryProblem(_ name: String) -> String? {
        guard let key = lookupKey(name) else {
            return "the name is empty, has an empty label (a leading dot or \"..\"), or contains spaces or control characters"
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
    package static let commonPublicSuffixes: Set<String> = [
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
