import Foundation

/// The JSON of a fingerprint list as served (static or challenge mode), parsed strictly but
/// not yet verified.
struct FingerprintListDocument: Sendable {
    /// An entry plus the per-entry signature it carried (static mode).
    struct SignedEntry: Sendable {
        let entry: FingerprintEntry
        /// The `signature` field as served: nil when absent.
        let signature: String?
    }

    let entries: [SignedEntry]
    /// The body's `timestamp` (Unix seconds), if present: covered by a signature in challenge
    /// mode, and in static mode only by a whole-list signature.
    let timestamp: Int64?
    /// Whether the body has a `listSignature` member (see ``WholeListSignature``).
    let hasListSignature: Bool
    /// Whether the body has a `listSignatures` member (further whole-list signatures).
    let hasExtraListSignatures: Bool
    /// The whole list's `version`, if present: monotonic, a lower one is a rollback. Covered
    /// by the whole-list signature (static) or the response signature (challenge) only.
    let version: Int64?
    /// The whole list's `expires` (Unix seconds), if present: past it the list is no longer
    /// fresh. Covered like ``version``.
    let expires: Int64?
    /// The `certificateTransparency` section as written (``CTLogList``), read once verified.
    let certificateTransparency: CTLogList.Wire?
    /// The `revocations` section as written (``ListRevocations``), read once verified.
    let revocations: [ListRevocations.Wire]?
    /// The `crl` section as written (``CRLHostList``), read once verified.
    let crl: CRLHostList.Wire?

    /// The latest `expires` any list may carry: 9999-12-31T23:59:59Z. Anything later is a bug
    /// on the server (milliseconds instead of seconds, usually) and is refused.
    static let latestExpires: Int64 = 253_402_300_799

    /// Parses `body`. Throws ``PinStoreError/Code/invalidListData`` saying what is wrong.
    init(body: Data) throws(PinStoreError) {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: body)
        } catch let error as DecodingError {
            throw PinStoreError(.invalidListData, "The fingerprint list is not in the expected format: \(Self.describe(error))")
        } catch {
            throw PinStoreError(.invalidListData, "The fingerprint list is not valid JSON.")
        }
        // Lists can be large (100,000 entries): nothing per entry is allocated that the entry
        // does not keep, so parsing leaves little behind (a message is only built on error).
        struct EntryKey: Hashable { let name: String; let fingerprint: Data; let depth: Int; let kind: FingerprintEntry.Kind }
        var seen = Set<EntryKey>(minimumCapacity: wire.fingerprints.count)
        var entries: [SignedEntry] = []
        entries.reserveCapacity(wire.fingerprints.count)
        for (index, item) in wire.fingerprints.enumerated() {
            var position: String { "entry \(index + 1) (\"\(item.name)\")" }
            if let problem = HostName.listEntryProblem(item.name) {
                throw PinStoreError(.invalidListData, "\(position): \(problem).")
            }
            guard let fingerprint = Base64.decodeStrict(item.fingerprint) else {
                throw PinStoreError(.invalidListData, "\(position): the fingerprint is not valid Base64.")
            }
            guard fingerprint.count == SHA256Digest.byteCount else {
                throw PinStoreError(.invalidListData, "\(position): the fingerprint is \(fingerprint.count) bytes; a SHA-256 fingerprint is 32.")
            }
            guard item.expires >= 0, item.expires <= Self.latestExpires else {
                throw PinStoreError(.invalidListData, "\(position): expires \(item.expires) is not a Unix time in seconds between 1970 and 9999.")
            }
            let depth = item.depth ?? 0
            guard (0...16).contains(depth) else {
                throw PinStoreError(.invalidListData, "\(position): depth \(depth) is not a chain position (0 = leaf ... 16).")
            }
            let kind: FingerprintEntry.Kind
            switch item.pin {
            case nil: kind = .certificate
            case let value?:
                guard let known = FingerprintEntry.Kind(rawValue: value), known != .certificate else {
                    throw PinStoreError(.invalidListData, "\(position): pin \(String(reflecting: value)) is neither \"spki\" nor \"ca-spki\".")
                }
                kind = known
            }
            let key = EntryKey(name: HostName.normalized(item.name), fingerprint: fingerprint, depth: depth, kind: kind)
            guard seen.insert(key).inserted else {
                throw PinStoreError(.invalidListData, "\(position): the same name and fingerprint appear twice; the list is ambiguous about their expiry.")
            }
            entries.append(SignedEntry(
                entry: FingerprintEntry(name: item.name, fingerprint: fingerprint, expires: item.expires, depth: depth, kind: kind),
                signature: item.signature))
        }
        if let timestamp = wire.timestamp, timestamp < 0 {
            throw PinStoreError(.invalidListData, "The timestamp \(timestamp) is negative.")
        }
        self.entries = entries
        self.timestamp = wire.timestamp
        if let version = wire.version, version < 0 {
            throw PinStoreError(.invalidListData, "The list's version \(version) is negative.")
        }
        if let expires = wire.expires, !(0...Self.latestExpires).contains(expires) {
            throw PinStoreError(.invalidListData, "The list's expires \(expires) is not a Unix time in seconds between 1970 and 9999.")
        }
        self.hasListSignature = wire.listSignature != nil
        self.hasExtraListSignatures = wire.listSignatures != nil
        self.version = wire.version
        self.expires = wire.expires
        self.certificateTransparency = wire.certificateTransparency
        self.revocations = wire.revocations
        self.crl = wire.crl
    }

    private struct Wire: Decodable {
        struct Item: Decodable {
            let name: String
            let fingerprint: String
            let expires: Int64
            let signature: String?
            let depth: Int?
            /// Absent (a certificate pin), `"spki"` or `"ca-spki"`: see ``FingerprintEntry/Kind``.
            let pin: String?
        }
        let fingerprints: [Item]
        let timestamp: Int64?
        let listSignature: String?
        let listSignatures: [KeyDocument.EnvelopeWire.Signature]?
        let version: Int64?
        let expires: Int64?
        let certificateTransparency: CTLogList.Wire?
        let revocations: [ListRevocations.Wire]?
        let crl: CRLHostList.Wire?
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let components = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return components.isEmpty ? "the top level" : components
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context)) has no \"\(key.stringValue)\" field."
        case .typeMismatch(_, let context):
            return "\(path(context)) has the wrong type (\(context.debugDescription))."
        case .valueNotFound(_, let context):
            return "\(path(context)) is null."
        case .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
