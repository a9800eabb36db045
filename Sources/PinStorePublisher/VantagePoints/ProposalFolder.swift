import Foundation
import PinStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The folder vantage points share. Three kinds of file, each written once and never changed:
///
/// - `proposal-<v>.json`: a ``Proposal`` for list version `v`;
/// - `signature-<v>-<keyid>.json`: one key's ``ProposalSignature`` of it;
/// - `list-<v>.json`: the finished list of version `v`, exactly the bytes every publisher serves.
///
/// **Why two publishers can never publish two different lists for one version.** A proposal
/// and a finished list are created *exclusively*: written whole to a temporary file, fsynced,
/// then `link(2)`ed to their final name, which fails when the name exists. So the name appears
/// once, complete, and the first writer wins; a loser reads the winner's file. A publisher
/// puts into its output folder only the bytes of `list-<v>.json` (after checking them as a
/// store would), never a list it finished itself but failed to link. Signatures cover the
/// proposal's body hash, so a signature can only complete the proposal it was made for. A
/// crash leaves at most a temporary file (never a half-written name); a publisher that dies
/// after linking `list-<v>.json` but before copying it copies it on its next cycle, as every
/// other publisher does. A proposal that does not gather `threshold` signatures within the
/// proposal timeout is abandoned: the next proposal takes the following version, and a late
/// `list-<v>.json` for an abandoned version is never served once a higher one was (versions
/// only rise in every output folder).
///
/// The folder needs `link(2)` with create-exclusive semantics: local file systems and NFS v3+
/// have it.
package struct ProposalFolder: Sendable {
    package let url: URL

    package init(url: URL) {
        self.url = url
    }

    func proposalURL(_ version: Int64) -> URL { url.appendingPathComponent("proposal-\(version).json") }
    func listURL(_ version: Int64) -> URL { url.appendingPathComponent("list-\(version).json") }
    func signatureURL(_ version: Int64, keyID: String) -> URL { url.appendingPathComponent("signature-\(version)-\(keyID.prefix(16)).json") }

    /// The highest version with a finished list, nil when none.
    package func latestListVersion() -> Int64? {
        versions(prefix: "list-").max()
    }

    /// The highest version with a proposal, nil when none.
    package func latestProposalVersion() -> Int64? {
        versions(prefix: "proposal-").max()
    }

    private func versions(prefix: String) -> [Int64] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return names.compactMap { name in
            guard name.hasPrefix(prefix), name.hasSuffix(".json") else { return nil }
            return Int64(name.dropFirst(prefix.count).dropLast(5))
        }
    }

    /// The finished list of `version`, if any.
    package func list(_ version: Int64) -> Data? {
        try? Data(contentsOf: listURL(version))
    }

    /// The proposal for `version`: nil when there is none; a ``PublisherError/Code/proposal``
    /// error when the file is not a proposal.
    package func proposal(_ version: Int64) throws(PublisherError) -> Proposal? {
        guard let data = try? Data(contentsOf: proposalURL(version)) else { return nil }
        do {
            let proposal = try Self.decoder.decode(Proposal.self, from: data)
            guard proposal.version == version, proposal.format == 1 else {
                throw PublisherError(.proposal, "\(proposalURL(version).lastPathComponent) names version \(proposal.version) (format \(proposal.format)); ignoring it.")
            }
            return proposal
        } catch let error as PublisherError {
            throw error
        } catch {
            throw PublisherError(.proposal, "\(proposalURL(version).lastPathComponent) is not a proposal (\(error)); ignoring it.")
        }
    }

    /// Creates the proposal for its version; false when one exists already (the other wins).
    package func create(_ proposal: Proposal) throws(PublisherError) -> Bool {
        try createExclusively(try Self.encode(proposal), at: proposalURL(proposal.version))
    }

    /// Adds (or replaces) one key's signature of a proposal.
    package func add(_ signature: ProposalSignature) throws(PublisherError) {
        do {
            try ensureFolder()
            try PersistentListFile.writeAtomically(try Self.encode(signature), to: signatureURL(signature.version, keyID: signature.keyID),
                                                   permissions: 0o644)
        } catch let error as PublisherError {
            throw error
        } catch let error as PinStoreError {
            throw PublisherError(.proposal, "The signature could not be written to the proposals folder: \(error.reason)")
        } catch {
            throw PublisherError(.proposal, "The signature could not be written to the proposals folder.")
        }
    }

    /// The signatures of `version` (unverified; files that do not parse are skipped).
    package func signatures(_ version: Int64) -> [ProposalSignature] {
        let prefix = "signature-\(version)-"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".json") }.sorted().compactMap { name in
            guard let data = try? Data(contentsOf: url.appendingPathComponent(name)) else { return nil }
            return try? Self.decoder.decode(ProposalSignature.self, from: data)
        }.filter { $0.version == version }
    }

    /// Creates `list-<version>.json`; false when another publisher finished it first.
    package func finish(_ version: Int64, list: Data) throws(PublisherError) -> Bool {
        try createExclusively(list, at: listURL(version))
    }

    private func ensureFolder() throws(PublisherError) {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        } catch {
            throw PublisherError(.proposal, "The proposals folder \(url.path) cannot be created: \(error.localizedDescription)")
        }
    }

    /// Writes `data` whole to a temporary file, then links it to `target`: the name appears
    /// complete, and only for the first writer.
    private func createExclusively(_ data: Data, at target: URL) throws(PublisherError) -> Bool {
        try ensureFolder()
        let temporary = url.appendingPathComponent(".\(target.lastPathComponent).\(UInt64.random(in: 0...UInt64.max)).tmp")
        do {
            try PersistentListFile.writeAtomically(data, to: temporary, permissions: 0o644)
        } catch {
            throw PublisherError(.proposal, "\(target.lastPathComponent) could not be written: \(error.reason)")
        }
        defer { unlink(temporary.path) }
        guard link(temporary.path, target.path) == 0 else {
            let code = errno
            if code == EEXIST { return false }
            throw PublisherError(.proposal, "\(target.lastPathComponent) could not be created: \(String(cString: strerror(code)))")
        }
        let directory = open(url.path, O_RDONLY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
        return true
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
