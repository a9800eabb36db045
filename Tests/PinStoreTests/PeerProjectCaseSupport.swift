import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Keys, chains and stores shared by the ported peer-project cases (OkHttp's
/// `CertificatePinnerTest`, Android's `XmlConfigTests`, TrustKit's configuration and validator
/// tests, Apple's documented `NSPinnedDomains` examples). Facts and vectors: /work/research-24.md
/// (issue 24).
///
/// The peers' certificates A, B, C are three leaves with distinct keys from Fixtures/pki;
/// `matchPins(commonName:certificateChain:)` checks pins only, so any fixture chain stands for
/// any host name.
enum PeerCase {
    /// OkHttp's `certA1`: the `localhost` leaf.
    static let a = "localhost"
    /// OkHttp's `certB1`: the `attacker` leaf (another key under the same intermediate).
    static let b = "attacker"
    /// OkHttp's `certC1`: the `localhost-other-ca` leaf (another key under another intermediate).
    static let c = "localhost-other-ca"
    static let intermediate = "intermediate-ca"
    static let otherIntermediate = "other-intermediate-ca"
    static let root = "root-ca"

    /// Digests no fixture certificate has: the peers' "fake key" / backup pins.
    static let fake1 = Data(repeating: 0xA1, count: 32).base64EncodedString()
    static let fake2 = Data(repeating: 0xB2, count: 32).base64EncodedString()

    static func spki(_ certificate: String) throws -> String { try PinPolicyTests.spki(certificate) }

    /// The DER chain of the named Fixtures/pki certificates (each file may hold several), leaf first.
    static func chain(_ files: String...) throws -> [Data] {
        try files.flatMap { try TestResources.chainDER("pki/\($0).pem") }
    }

    /// A store holding `policies` (no list pins), at a time inside every fixture's validity.
    static func store(_ policies: [PinPolicy], clock: ManualClock = .inValidPeriod()) throws -> PinStore {
        try PinPolicyTests.store(policies: policies, clock: clock)
    }

    /// The store's verdict on `chain` for `host`.
    static func check(_ store: PinStore, _ host: String, _ chain: [Data]) -> PinStore.ValidationResult {
        store.matchPins(commonName: host, certificateChain: chain)
    }

    /// The error a store refuses `policies` with, or nil (recording an issue) if it accepts them.
    static func configurationError(_ policies: [PinPolicy]) -> PinStoreError? {
        do {
            _ = try store(policies)
            Issue.record("expected the store to refuse \(policies.map(\.domain))")
            return nil
        } catch let error as PinStoreError {
            return error
        } catch {
            Issue.record("expected a PinStoreError, got \(error)")
            return nil
        }
    }

    /// A policy whose pins match any certificate of the chain (OkHttp's, TrustKit's and
    /// Android's kind of pin).
    static func anyKeyPolicy(_ domain: String, _ digests: [String], includesSubdomains: Bool = false,
                             expiration: Date? = nil) -> PinPolicy {
        PinPolicy(domain: domain, includesSubdomains: includesSubdomains,
                  pins: digests.map { .anyKey(spkiSHA256Base64: $0) }, expiration: expiration)
    }

    static func networkSecurityConfig(_ xml: String) throws -> [PinPolicy] {
        try PinPolicyImport.networkSecurityConfig(Data(xml.utf8))
    }

    static func infoPlist(_ xml: String) throws -> [PinPolicy] {
        try PinPolicyImport.infoPlist(Data(xml.utf8))
    }

    /// The import error `body` fails with, or nil (recording an issue) if it succeeds.
    static func importError(_ body: () throws -> [PinPolicy]) -> PinPolicyImportError? {
        PinPolicyImportTests.importError(body)
    }

    /// The UTC start of `yyyy-MM-dd`.
    static func utcDay(_ year: Int, _ month: Int, _ day: Int) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: DateComponents(year: year, month: month, day: day))!
    }
}
