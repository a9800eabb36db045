import Foundation
import PinStore

/// What the benchmarks in `Benchmarks/` (a package of their own) call to time the publisher,
/// whose parts are package API. Reached only through `@_spi(Benchmarks) import PinStorePublisher`;
/// not part of the supported surface.
@_spi(Benchmarks)
public enum PublisherBenchmarkEntryPoints {
    /// A closure that probes `host` at 127.0.0.1:`port` once through the real prober (TLS
    /// handshake, chain recorded, OpenSSL validation against `anchorsPEM`) and answers whether
    /// the chain validated.
    public static func loopbackProbe(host: String, port: Int, anchorsPEM: String) throws -> @Sendable () async -> Bool {
        let roots = try TrustRoots.anchors(pem: anchorsPEM)
        let prober = TLSPartnerProber(resolver: FixedResolver(addresses: [ProbeAddress(ip: "127.0.0.1", port: port)]))
        let target = ProbeTarget(host: host, port: port, trustRoots: roots)
        return {
            let results = await prober.probe(target)
            guard case .observed(let observation) = results.first else { return false }
            return observation.validationFailure == nil
        }
    }

    /// A publisher in `directory` over one partner per `hosts` entry, each presenting
    /// `chains[i]` (DER, leaf first) through an in-memory prober that validates like the real one
    /// (no network: the network's share is ``loopbackProbe(host:port:anchorsPEM:)``'s). K = 1,
    /// T = 0, `resignInterval` one minute.
    public static func publisher(directory: URL, hosts: [String], chains: [[Data]], anchorsPEM: String,
                                 allowedCAPEM: String, signingKeyPEM: String,
                                 minimumSightings: Int = 1, minimumSpan: Int = 0, probeInterval: Int = 60) throws -> PublisherBench {
        let fm = FileManager.default
        try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        try anchorsPEM.write(to: directory.appendingPathComponent("anchors.pem"), atomically: true, encoding: .utf8)
        try allowedCAPEM.write(to: directory.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        try signingKeyPEM.write(to: directory.appendingPathComponent("signing.key.pem"), atomically: true, encoding: .utf8)
        let partners: [[String: Any]] = hosts.enumerated().map { index, host in
            ["id": "p\(index)", "host": host, "anchors": "anchors.pem", "allowedCAs": ["ca.pem"]]
        }
        let json: [String: Any] = [
            "partners": partners, "signingKeys": [["file": "signing.key.pem"]],
            "minimumSightings": minimumSightings, "minimumSpan": minimumSpan, "probeInterval": probeInterval,
            "expires": 3_600, "resignInterval": 60, "gracePeriod": 60,
            "outputFolder": "public", "stateFolder": "state",
        ]
        let file = try PublicationFile(json: try JSONSerialization.data(withJSONObject: json), baseDirectory: directory)
        let clock = BenchClock()
        var presented: [String: [Data]] = [:]
        for (host, chain) in zip(hosts, chains) { presented[host] = chain }
        let prober = ReplayProber(chains: Locked(presented), clock: clock)
        return PublisherBench(publisher: try Publisher(file: file, prober: prober, clock: clock), prober: prober, clock: clock,
                              listURL: directory.appendingPathComponent("public/list.json"))
    }
}

/// A publisher driven by hand: the benchmarks time its rounds and move its clock.
@_spi(Benchmarks)
public struct PublisherBench: Sendable {
    let publisher: Publisher
    let prober: ReplayProber
    let clock: BenchClock
    /// The published list.
    public let listURL: URL

    /// Probes every partner (validation and state save included).
    public func probe() async { await publisher.probe() }

    /// One publication cycle; true when it succeeded.
    public func cycle() async -> Bool { await publisher.cycle() }

    /// Moves the clock on (re-signing is due one minute after the last list).
    public func advance(seconds: TimeInterval) { clock.advance(seconds) }

    /// The clock's time.
    public var now: Date { clock.now() }

    /// What `host` presents from now on.
    public func present(_ chain: [Data], for host: String) { prober.chains.withLock { $0[host] = chain } }
}

/// A resolver with fixed answers.
struct FixedResolver: ProbeAddressResolver {
    let addresses: [ProbeAddress]
    func addresses(for host: String, port: Int) async throws(ProbeAddressResolutionError) -> [ProbeAddress] { addresses }
}

/// Presents stored chains and validates them as `TLSPartnerProber` does, without a network.
struct ReplayProber: PartnerProber {
    let chains: Locked<[String: [Data]]>
    let clock: BenchClock

    func probe(_ target: ProbeTarget) async -> [ProbeResult] {
        guard let chain = chains.withLock({ $0[target.host] }) else {
            return [.unreachable(address: target.host, reason: "no chain")]
        }
        let now = clock.now()
        do {
            let validated = try ChainValidator(trustRoots: target.trustRoots).validate(chain: chain, hostname: target.host, at: now)
            return [.observed(ProbeObservation(address: "127.0.0.1:\(target.port)", observedAt: now, presentedChain: chain,
                                               validatedChain: validated.map(\.derRepresentation), validationFailure: nil))]
        } catch {
            return [.observed(ProbeObservation(address: "127.0.0.1:\(target.port)", observedAt: now, presentedChain: chain,
                                               validatedChain: [], validationFailure: error.description))]
        }
    }
}

/// A clock moved by hand.
final class BenchClock: PinStoreClock {
    private let current = Locked(Date())
    func now() -> Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}
