import Foundation
import PinStore
import PinStoreSigning
import PinStoreTesting
import Testing
@testable import PinStorePublisher

/// A clock set by hand.
final class TestClock: PinStoreClock, @unchecked Sendable {
    private let lock = NSLock()
    private var date: Date
    init(_ date: Date = Date()) { self.date = date }
    func now() -> Date { lock.lock(); defer { lock.unlock() }; return date }
    func advance(_ seconds: TimeInterval) { lock.lock(); date += seconds; lock.unlock() }
    /// A clock at the current whole second: the state keeps whole seconds, so a test can compare
    /// a recorded time with `now()` exactly.
    static func wholeSeconds() -> TestClock { TestClock(Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))) }
}

/// Presents, for each address, the chain given, validated by the real `ChainValidator`
/// against the test PKI (the real TLS prober is tested by the probe's own suite).
final class PresentingProber: PartnerProber, @unchecked Sendable {
    private let lock = NSLock()
    private var chains: [String: [Data]] = [:]
    private var chainsByHost: [String: [String: [Data]]] = [:]
    let trustRoots: TrustRoots
    let clock: TestClock
    init(trustRoots: TrustRoots, clock: TestClock) { self.trustRoots = trustRoots; self.clock = clock }
    /// What every host without chains of its own presents.
    func present(_ chains: [String: [Data]]) { lock.lock(); self.chains = chains; lock.unlock() }
    /// What `host` presents (other partners' hosts are unaffected).
    func present(_ chains: [String: [Data]], forHost host: String) { lock.lock(); chainsByHost[host] = chains; lock.unlock() }
    func probe(_ target: ProbeTarget) async -> [ProbeResult] {
        let current = lock.withLock { chainsByHost[target.host] ?? chains }
        return current.sorted { $0.key < $1.key }.map { address, chain in
            do {
                let validated = try ChainValidator(trustRoots: trustRoots).validate(chain: chain, hostname: target.host, at: clock.now())
                return .observed(ProbeObservation(address: address, observedAt: clock.now(), presentedChain: chain,
                                                  validatedChain: validated.map(\.derRepresentation), validationFailure: nil))
            } catch {
                return .observed(ProbeObservation(address: address, observedAt: clock.now(), presentedChain: chain,
                                                  validatedChain: [], validationFailure: "\(error)"))
            }
        }
    }
}

/// A temporary folder with a publication file, its key and its folders.
struct PublisherFixture {
    let folder: URL
    let key: P256PrivateKey
    let pki: TestPKI

    init(pki: TestPKI) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("publisher-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        key = try P256PrivateKey()
        try key.pkcs8PEM().write(to: folder.appendingPathComponent("publisher.pem"), atomically: true, encoding: .utf8)
        self.pki = pki
    }

    /// The publication file's JSON with `extra` members merged over the defaults used here;
    /// `morePartners` (`, {...}`) follow partner `api`.
    func json(_ extra: String = "", partnerExtra: String = "", signingKeys: String = #"[{"file": "publisher.pem"}]"#,
              morePartners: String = "") -> Data {
        let ca = pki.intermediate.spkiSHA256Base64
        return Data("""
        {"partners": [{"id": "api", "host": "localhost", "allowedCAs": ["\(ca)"]\(partnerExtra)}\(morePartners)],
         "signingKeys": \(signingKeys),
         "minimumSightings": 3, "minimumSpan": "20m", "probeInterval": "10m",
         "outputFolder": "public", "stateFolder": "state"\(extra)}
        """.utf8)
    }

    func file(_ extra: String = "", partnerExtra: String = "", signingKeys: String = #"[{"file": "publisher.pem"}]"#,
              morePartners: String = "") throws -> PublicationFile {
        try PublicationFile(json: json(extra, partnerExtra: partnerExtra, signingKeys: signingKeys, morePartners: morePartners),
                            baseDirectory: folder)
    }

    var stateURL: URL { folder.appendingPathComponent("state/state.json") }

    var listURL: URL { folder.appendingPathComponent("public/list.json") }

    func cleanUp() { try? FileManager.default.removeItem(at: folder) }

    /// A store reading the published list (its signature required), updated once.
    func storeReadingTheList() async throws -> PinStore {
        var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: try key.publicKey.x963Representation.base64EncodedString(),
                                                   storageDirectory: folder.appendingPathComponent("store"))
        configuration.requireListSignature = true
        let store = try PinStore(configuration: configuration)
        #expect(await store.update() == .ok)
        return store
    }
}
