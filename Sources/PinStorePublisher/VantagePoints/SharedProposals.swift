import Foundation
import PinStore

/// The vantage points' objects in a ``PublicationMedium``, each named after the SHA-256 of its
/// own bytes and written once:
///
/// - `proposal-<v>-<sha256>.json`: a ``Proposal`` for list version `v`;
/// - `signature-<v>-<sha256>.json`: one key's ``ProposalSignature`` of one proposal body;
/// - `list-<v>-<sha256>.json`: a finished list of version `v`, exactly the bytes served.
///
/// **Why names are hashes.** A writer of the medium cannot take a name an honest vantage point
/// will need: the name of an object is only known once the object exists, and every honest
/// object is unpredictable (a proposal carries a random nonce; signatures and finished lists
/// carry fresh ECDSA signatures). An object whose bytes do not hash to its name is ignored, so
/// junk can sit beside honest objects but never in their place; and a name found taken is read
/// back, never assumed to hold what this publisher meant to write.
///
/// **What is read.** Only the version a vantage point works on (one above its own list in
/// force), never more than ``maximumObjectsPerVersion`` names of a kind, each no larger than
/// its kind's bound, and only names of the exact form above (a version in decimal that fits
/// `Int64`, 64 lowercase hex digits). Versions are never taken from names: a name only
/// answers "is there an object for the version I work on".
package struct SharedProposals: Sendable {
    package enum Kind: String, Sendable, CaseIterable {
        case proposal, signature, list

        /// The largest object of the kind that is read: a list twice as large as a store
        /// accepts by default (`maximumListSize`, 1 MiB), a proposal as that list in Base64
        /// with approvals, a signature as a few hundred bytes.
        var maximumSize: Int {
            switch self {
            case .proposal: return 3 << 20
            case .signature: return 4 << 10
            case .list: return 2 << 20
            }
        }
    }

    /// How many names of one kind and version are read at most. Honest vantage points write a
    /// handful; more means a writer floods the medium (logged, and counted in the metrics).
    package static let maximumObjectsPerVersion = 256
    package let medium: any PublicationMedium

    package init(medium: any PublicationMedium) {
        self.medium = medium
    }

    /// What one look at a version found.
    package struct Read<Value: Sendable>: Sendable {
        /// The objects whose bytes hash to their names and parse, sorted by name.
        package var objects: [(name: String, value: Value)] = []
        /// Names that were skipped: the wrong form, the wrong hash, too large, unparsable.
        package var ignored: [(name: String, reason: String)] = []
        /// True when more names existed than were read.
        package var truncated = false
    }

    /// The name of an object of `kind` for `version` holding `bytes`.
    package static func name(_ kind: Kind, version: Int64, bytes: Data) -> String {
        "\(kind.rawValue)-\(version)-\(StateFile.hex(SHA256Digest.hash(bytes))).json"
    }

    /// What one look found besides the objects handed on.
    package struct Look: Sendable {
        /// Names that were skipped: the wrong form, the wrong hash, too large, unreadable.
        package var ignored: [(name: String, reason: String)] = []
        /// True when more names (or bytes) existed than were read.
        package var truncated = false
    }

    /// Hands each object of `kind` for `version` whose bytes hash to its name to `visit`, one
    /// at a time, in name order, until `visit` returns false or the bounds are reached.
    @discardableResult
    package func visit(_ kind: Kind, version: Int64, _ visit: (_ name: String, _ bytes: Data) -> Bool) -> Look {
        var look = Look()
        let prefix = "\(kind.rawValue)-\(version)-"
        let listed: (names: [String], truncated: Bool)
        do {
            listed = try medium.names(withPrefix: prefix, limit: Self.maximumObjectsPerVersion)
        } catch {
            look.ignored.append((prefix, error.reason))
            return look
        }
        look.truncated = listed.truncated
        // Memory holds one object at a time (and what `visit` keeps), and a look reads at most
        // `maximumObjectsPerVersion` objects of at most `kind.maximumSize`: junk costs a bounded
        // read, and no byte budget lets a few large junk objects hide the honest ones.
        for name in listed.names {
            let rest = name.dropFirst(prefix.count)
            guard rest.count == 64 + 5, rest.hasSuffix(".json"),
                  rest.dropLast(5).utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
                look.ignored.append((name, "not a name of the form \(prefix)<sha256>.json"))
                continue
            }
            let data: Data?
            do {
                data = try medium.read(name, maximumSize: kind.maximumSize)
            } catch {
                look.ignored.append((name, error.reason))
                continue
            }
            guard let data else { continue }
            guard Self.name(kind, version: version, bytes: data) == name else {
                look.ignored.append((name, "its bytes do not hash to its name"))
                continue
            }
            guard visit(name, data) else { break }
        }
        return look
    }

    /// The objects of `kind` for `version` whose bytes hash to their names (small kinds, and tests).
    package func objects(_ kind: Kind, version: Int64) -> Read<Data> {
        var read = Read<Data>()
        let look = visit(kind, version: version) { name, data in
            read.objects.append((name, data))
            return true
        }
        read.ignored = look.ignored
        read.truncated = look.truncated
        return read
    }

    /// Hands each proposal for `version` (naming that version in its body) to `visit`, one at a time.
    @discardableResult
    package func visitProposals(_ version: Int64, _ visit: (_ name: String, _ proposal: Proposal) -> Bool) -> Look {
        var ignored: [(name: String, reason: String)] = []
        var look = self.visit(.proposal, version: version) { name, data in
            do {
                let proposal = try Self.decoder.decode(Proposal.self, from: data)
                guard proposal.format == 2 else {
                    ignored.append((name, "format \(proposal.format) is not 2"))
                    return true
                }
                guard proposal.version == version else {
                    ignored.append((name, "it names version \(proposal.version)"))
                    return true
                }
                return visit(name, proposal)
            } catch {
                ignored.append((name, "not a proposal: \(error)"))
                return true
            }
        }
        look.ignored += ignored
        return look
    }

    /// The proposals for `version` (each naming that version in its body), all in memory: for
    /// tests and tools; the protocol visits them one at a time.
    package func proposals(_ version: Int64) -> Read<Proposal> {
        var read = Read<Proposal>()
        let look = visitProposals(version) { name, proposal in
            read.objects.append((name, proposal))
            return true
        }
        read.ignored = look.ignored
        read.truncated = look.truncated
        return read
    }

    /// The signatures of proposals for `version` (not yet verified).
    package func signatures(_ version: Int64) -> Read<ProposalSignature> {
        decoded(.signature, version: version, as: ProposalSignature.self) { $0.version == version ? nil : "it names version \($0.version)" }
    }

    /// Finished lists of `version` (not yet verified).
    package func lists(_ version: Int64) -> Read<Data> {
        objects(.list, version: version)
    }

    /// Writes `proposal`; its name, whether this call created it or it existed.
    @discardableResult
    package func create(_ proposal: Proposal) throws(PublisherError) -> String {
        try create(.proposal, version: proposal.version, bytes: try Self.encode(proposal))
    }

    /// Writes `signature`; its name.
    @discardableResult
    package func add(_ signature: ProposalSignature) throws(PublisherError) -> String {
        try create(.signature, version: signature.version, bytes: try Self.encode(signature))
    }

    /// Writes a finished list of `version`; its name.
    @discardableResult
    package func finish(_ version: Int64, list: Data) throws(PublisherError) -> String {
        try create(.list, version: version, bytes: list)
    }

    private func create(_ kind: Kind, version: Int64, bytes: Data) throws(PublisherError) -> String {
        let name = Self.name(kind, version: version, bytes: bytes)
        guard try !medium.createExclusively(name, contents: bytes) else { return name }
        // The name was taken: fine only when by these very bytes (a retry, another publisher
        // finishing the same list). Anything else took it first to hide ours.
        guard (try? medium.read(name, maximumSize: kind.maximumSize)) == bytes else {
            throw PublisherError(.proposal, "\(name) was taken by other bytes before this publisher could write it; it writes a new object next cycle.")
        }
        return name
    }

    private func decoded<T: Decodable & Sendable>(_ kind: Kind, version: Int64, as type: T.Type,
                                                   check: (T) -> String?) -> Read<T> {
        let raw = objects(kind, version: version)
        var read = Read<T>(objects: [], ignored: raw.ignored, truncated: raw.truncated)
        for (name, data) in raw.objects {
            do {
                let value = try Self.decoder.decode(T.self, from: data)
                if let problem = check(value) {
                    read.ignored.append((name, problem))
                } else {
                    read.objects.append((name, value))
                }
            } catch {
                read.ignored.append((name, "not a \(kind.rawValue): \(error)"))
            }
        }
        return read
    }

    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }

    static func encode<T: Encodable>(_ value: T) throws(PublisherError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        encoder.dateEncodingStrategy = .secondsSince1970
        do {
            return try encoder.encode(value)
        } catch {
            throw PublisherError(.proposal, "Could not encode \(T.self): \(error)")
        }
    }
}
