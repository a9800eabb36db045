import Foundation
internal import COpenSSL

/// A certificate's serial number as its DER INTEGER says: the sign and the magnitude, without
/// leading zero bytes (OpenSSL refuses a non-minimal INTEGER, so two certificates with the same
/// serial always compare equal here). Written as `openssl x509 -serial` prints it: uppercase
/// hex, a leading `-` for a negative serial (not allowed by RFC 5280, but parsed by OpenSSL).
package struct CertificateSerial: Sendable, Hashable, CustomStringConvertible {
    let negative: Bool
    /// Big-endian, no leading zero byte; empty for zero.
    let magnitude: [UInt8]

    /// The most octets read: RFC 5280 allows 20; a few CAs wrote more, and no real one 64.
    static let maximumOctets = 64

    /// Reads the hex form (`0A1B2C`, any case, an even or odd number of digits, an optional
    /// leading `-`; `:` separators as `openssl x509 -text` prints them are accepted).
    package init(hex text: String) throws(PinStoreError) {
        var digits = Substring(text)
        let negative = digits.first == "-"
        if negative { digits = digits.dropFirst() }
        // Capped before any work: a serial a list names is read once per store load, and a
        // megabyte of leading zeros must not stall it.
        guard digits.utf8.count <= 4 * Self.maximumOctets else {
            throw PinStoreError(.invalidListData, "serial \(String(reflecting: String(text.prefix(40))))... has \(digits.utf8.count) characters; at most \(4 * Self.maximumOctets) are read.")
        }
        let nibbles: [UInt8] = digits.utf8.compactMap { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            case UInt8(ascii: ":"): nil
            default: 0xFF
            }
        }
        guard !nibbles.isEmpty, !nibbles.contains(0xFF) else {
            throw PinStoreError(.invalidListData, "serial \(String(reflecting: text)) is not a hexadecimal serial number (as `openssl x509 -serial` prints it).")
        }
        // One pass, two nibbles an octet; an odd count has a leading zero nibble.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(nibbles.count / 2 + 1)
        var index = 0
        if nibbles.count % 2 == 1 {
            bytes.append(nibbles[0])
            index = 1
        }
        while index < nibbles.count {
            bytes.append(nibbles[index] << 4 | nibbles[index + 1])
            index += 2
        }
        let magnitude = Array(bytes.drop { $0 == 0 })
        guard magnitude.count <= Self.maximumOctets else {
            throw PinStoreError(.invalidListData, "serial \(String(reflecting: text)) is \(magnitude.count) octets; at most \(Self.maximumOctets) are read.")
        }
        self.negative = negative && !magnitude.isEmpty
        self.magnitude = magnitude
    }

    /// The serial of the DER certificate `der`; nil when it does not parse.
    init?(certificate der: Data) {
        guard let handle = try? X509Handle(der: der), let serial = handle.serialNumber else { return nil }
        self = serial
    }

    /// Serials by certificate digest: parsing a certificate costs about a hundred times the rest
    /// of the pin check, and a list that revokes serials of a busy CA would otherwise make every
    /// connection under that CA parse its leaf again (as ``ValidatedChain``'s key cache; emptied
    /// when it reaches ``cacheLimit``).
    private static let cache = Locked<[Digest32: CertificateSerial]>([:])
    private static let cacheLimit = 4_096

    /// The serial of the certificate `der`, whose SHA-256 is `fingerprint`: from the cache, else
    /// read (nil when `der` is not a certificate).
    static func of(certificate der: Data, fingerprint: Digest32) -> CertificateSerial? {
        if let serial = cache.withLock({ $0[fingerprint] }) { return serial }
        guard let serial = CertificateSerial(certificate: der) else { return nil }
        cache.withLock { cache in
            if cache.count >= cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[fingerprint] = serial
        }
        return serial
    }

    init(negative: Bool, magnitude: some Sequence<UInt8>) {
        let trimmed = Array(magnitude.drop { $0 == 0 })
        self.negative = negative && !trimmed.isEmpty
        self.magnitude = trimmed
    }

    /// Uppercase hex, as `openssl x509 -serial` prints it (`00` for zero).
    package var description: String {
        let hex = magnitude.isEmpty ? "00" : magnitude.map { String(format: "%02X", $0) }.joined()
        return negative ? "-" + hex : hex
    }
}

extension X509Handle {
    /// The serial number, read by OpenSSL (its INTEGER's content octets are the magnitude; the
    /// sign is in the string's type).
    var serialNumber: CertificateSerial? {
        guard let integer = X509_get0_serialNumber(pointer) else { return nil }
        let length = Int(ASN1_STRING_length(integer))
        guard length >= 0, let bytes = ASN1_STRING_get0_data(integer) else { return nil }
        let negative = ASN1_STRING_type(integer) & V_ASN1_NEG != 0
        return CertificateSerial(negative: negative, magnitude: UnsafeBufferPointer(start: bytes, count: length))
    }
}
