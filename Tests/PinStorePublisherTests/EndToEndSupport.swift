import Foundation
import PinStore
import PinStoreDevServer
import PinStoreSigning
import PinStoreTesting
@testable import PinStorePublisher

/// A clock the end-to-end tests move by hand: the publisher, its prober's stamps and the pinned
/// client all read it, so K sightings over T minutes and a grace period of days take no real time.
final class SteppedClock: PinStoreClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = Date()) { current = start }

    func now() -> Date {
        lock.lock(); defer { lock.unlock() }
        return current
    }

    func advance(_ seconds: TimeInterval) {
        lock.lock(); current += seconds; lock.unlock()
    }
}

/// A resolver whose 127.0.0.1 ports a test changes between rounds: a partner moving its name to
/// another load balancer, or serving several at once.
final class SwitchableResolver: ProbeAddressResolver, @unchecked Sendable {
    private let lock = NSLock()
    private var current: [Int]
    private var byHost: [String: [Int]] = [:]

    init(_ ports: [Int]) { current = ports }

    /// The ports of every name without ports of its own.
    var ports: [Int] {
        get { lock.lock(); defer { lock.unlock() }; return current }
        set { lock.lock(); current = newValue; lock.unlock() }
    }

    /// The ports of `host` alone (another partner's name).
    func setPorts(_ ports: [Int], forHost host: String) {
        lock.lock(); byHost[host] = ports; lock.unlock()
    }

    func addresses(for host: String, port: Int) async throws(ProbeAddressResolutionError) -> [ProbeAddress] {
        let ports = lock.withLock { byHost[host] ?? current }
        return ports.map { ProbeAddress(ip: "127.0.0.1", port: $0) }
    }
}

/// One publisher's folder: its publication file, keys, anchors and allowed CA, written as a team
/// would write them, and a publisher made from them with the real TLS prober.
struct EndToEndFixture {
    static let host = "partner.pinstore.test"
    static let partnerID = "partner"

    let directory: URL
    let pki: TestPKI
    let signingKey: P256PrivateKey
    let clock: SteppedClock
    let resolver: SwitchableResolver
    /// Seconds between rounds (the file's probeInterval).
    let probeInterval: TimeInterval

    /// Writes the files. `settings` are merged into the publication file's top level,
    /// `partner` into the partner's entry; `morePartners` follow it as written.
    init(pki: TestPKI, ports: [Int], clock: SteppedClock = SteppedClock(), signingKey: P256PrivateKey? = nil,
         directory: URL? = nil, probeInterval: TimeInterval = 60,
         settings: [String: Any] = [:], partner: [String: Any] = [:], morePartners: [[String: Any]] = []) throws {
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-publisher-\(UUID().uuidString)")
        self.pki = pki
        self.signingKey = try signingKey ?? P256PrivateKey()
        self.clock = clock
        self.resolver = SwitchableResolver(ports)
        self.probeInterval = probeInterval
        let fm = FileManager.default
        try fm.createDirectory(at: self.directory, withIntermediateDirectories: true)
        try self.signingKey.pkcs8PEM().write(to: file("signing.key.pem"), atomically: true, encoding: .utf8)
        try pem(pki.root).write(to: file("anchors.pem"), atomically: true, encoding: .utf8)
        try pem(pki.intermediate).write(to: file("intermediate.pem"), atomically: true, encoding: .utf8)
        try (pem(pki.root) + pem(pki.impostorRoot)).write(to: file("both-roots.pem"), atomically: true, encoding: .utf8)
        var entry: [String: Any] = ["id": Self.partnerID, "host": Self.host, "port": 443, "anchors": "anchors.pem",
                                    "allowedCAs": ["intermediate.pem"]]
        entry.merge(partner) { $1 }
        var top: [String: Any] = [
            "partners": [entry] + morePartners,
            "signingKeys": [["file": "signing.key.pem"]],
            "probeInterval": Int(probeInterval),
            "minimumSightings": 3,
            "minimumSpan": Int(probeInterval) * 2,
            "gracePeriod": "1d",
            "expires": "7d",
            "resignInterval": "1d",
            "outputFolder": "public",
            "stateFolder": "state",
        ]
        top.merge(settings) { $1 }
        try JSONSerialization.data(withJSONObject: top, options: [.prettyPrinted, .sortedKeys]).write(to: file("publication.json"))
    }

    func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// The published list, as a static server would serve it.
    var listURL: URL { file("public").appendingPathComponent("list.json") }

    /// The key clients configure: Base64 of the X9.63 point.
    var publicKeyBase64: String { get throws { try signingKey.publicKey.x963Representation.base64EncodedString() } }

    /// A publisher reading the folder's publication file (and resuming from its state file).
    func publisher() throws -> Publisher {
        let prober = TLSPartnerProber(configuration: .hangGuarded, resolver: resolver, now: { [clock] in clock.now() })
        return try Publisher(file: try PublicationFile(contentsOf: file("publication.json")), prober: prober, clock: clock)
    }

    /// One probe interval later: probe every partner and run one publication cycle.
    @discardableResult
    func round(_ publisher: Publisher) async -> Bool {
        clock.advance(probeInterval)
        await publisher.probe()
        return await publisher.cycle()
    }
}

/// The app side: a store configured with the publishers' keys that downloads the published list
/// from a loopback server, and an evaluator that checks what a server presents (the normal trust
/// evaluation against the PKI's root, then the pins), updating on a refusal as deployed apps do.
final class PinnedClient: @unchecked Sendable {
    let store: PinStore
    let server: ListServer
    private let evaluator: PinningEvaluator
    private let clock: SteppedClock
    private let lock = NSLock()
    private var refused = 0

    /// `listFile` is read on every request (a static server over the publisher's output folder).
    init(listFile: URL, publicKeys: [String], threshold: Int = 1, trustRoots: TrustRoots, clock: SteppedClock) async throws {
        server = try await ListServer.start(port: 0) { _ in
            guard let body = FileManager.default.contents(atPath: listFile.path) else {
                return ListServerResponse(status: 404)
            }
            return ListServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
        }
        var configuration = PinStore.Configuration(serviceURL: server.baseURL.appendingPathComponent("list.json"), publicKey: publicKeys[0],
                                                   storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-client-\(UUID().uuidString)"),
                                                   requireListSignature: true)
        configuration.additionalPublicKeys = Array(publicKeys.dropFirst())
        configuration.signatureThreshold = threshold
        store = try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: clock)
        evaluator = PinningEvaluator(store: store, trustRoots: trustRoots)
        self.clock = clock
    }

    /// One request's pin decision on what the server at `port` presents now (a real handshake).
    @discardableResult
    func request(port: Int, host: String = EndToEndFixture.host) async throws -> Bool {
        let results = await TLSPartnerProber(configuration: .hangGuarded, resolver: LoopbackResolver(port)).probe(ProbeTarget(host: host, port: port, trustRoots: .system))
        guard let chain = results.first?.observation?.presentedChain else {
            throw ClientError("no chain from 127.0.0.1:\(port): \(results)")
        }
        let decision = await evaluator.evaluate(host: host, presentedChain: chain, at: clock.now())
        if !decision.isAllowed {
            lock.withLock { refused += 1 }
        }
        return decision.isAllowed
    }

    /// Whether the store in force pins `chain` now, without updating.
    func pins(_ chain: [Data], host: String = EndToEndFixture.host) -> Bool {
        evaluator.evaluateNow(host: host, presentedChain: chain, at: clock.now()).isAllowed
    }

    /// Requests refused so far.
    var refusals: Int {
        lock.lock(); defer { lock.unlock() }
        return refused
    }

    func update() async -> PinStore.UpdateResult {
        await store.update(mode: .forced)
    }

    func shutdown() async throws {
        try await server.shutdown()
    }

    struct ClientError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
