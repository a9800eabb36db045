import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PinStore

/// The real prober: a TLS handshake (swift-nio-ssl) with every address a partner's name resolves
/// to, the presented chain recorded whatever it is, then judged by the core's ``ChainValidator``
/// (the system OpenSSL: a chain to one of the partner's anchors, dates, the TLS server purpose,
/// the host name).
///
/// ```swift
/// let prober = TLSPartnerProber()
/// let results = await prober.probe(ProbeTarget(host: "api.partner.example", port: 443, trustRoots: .system))
/// ```
///
/// What the probe promises:
/// - An observation's ``ProbeObservation/validatedChain`` is non-empty only when OpenSSL
///   validated the presented chain for ``ProbeTarget/host`` at the time of the probe, *and* the
///   server finished the handshake (in TLS the certificate is sent before the server proves it
///   holds the leaf's key; a chain copied from the real partner by a server without the key is
///   recorded with a failure). swift-nio-ssl's own verification is replaced by a callback that
///   only records (its verdict would not be ours), and nothing it accepts is taken as validated.
/// - No application data is sent: the connection is closed right after the handshake.
/// - Bounded: one deadline covers the connection and the handshake of each address; at most
///   ``Configuration/maximumConcurrentHandshakes`` handshakes run at once and
///   ``Configuration/maximumAddresses`` addresses are probed; a chain longer or larger than
///   the limits, or with a certificate larger than ``Configuration/maximumCertificateBytes``,
///   is refused during the handshake and reported, never kept. A server that never
///   answers, answers with something else than TLS or closes early is `.unreachable` with the
///   reason.
package struct TLSPartnerProber: PartnerProber {
    /// The probe's limits.
    package struct Configuration: Sendable {
        /// How long one address may take from the start of the connection to the end of the
        /// handshake.
        package var timeout: Duration = .seconds(10)
        /// The most certificates a presented chain may hold (real chains hold 2 to 4).
        package var maximumChainLength = 8
        /// The most DER bytes a presented chain may hold, all certificates together.
        package var maximumChainBytes = 64 * 1024
        /// The most DER bytes one presented certificate may hold. Real leaves take 1 to 3 KB
        /// (a few hundred names in the subjectAltName stay under 16 KiB); a larger one, such as
        /// a 60 KB subject, is refused during the handshake and reported, never kept.
        package var maximumCertificateBytes = 16 * 1024
        /// How many handshakes of one partner run at once.
        package var maximumConcurrentHandshakes = 4
        /// How many of the resolved addresses are probed; the others are reported unreachable
        /// ("not probed"), so that a name resolving to thousands of addresses costs a bounded time.
        package var maximumAddresses = 32

        package init() {}
    }

    /// The limits this prober keeps.
    package let configuration: Configuration
    private let resolver: any ProbeAddressResolver
    private let now: @Sendable () -> Date
    private let eventLoopGroup: any EventLoopGroup

    /// A prober.
    ///
    /// - Parameters:
    ///   - configuration: Timeouts and limits.
    ///   - resolver: Where addresses come from (the system's resolver by default).
    ///   - now: The time an observation is stamped with and validated at (the publisher's clock).
    ///   - eventLoopGroup: Where connections run; NIO's shared group by default.
    package init(configuration: Configuration = Configuration(),
                 resolver: any ProbeAddressResolver = SystemAddressResolver(),
                 now: @escaping @Sendable () -> Date = { Date() },
                 eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.configuration = configuration
        self.resolver = resolver
        self.now = now
        self.eventLoopGroup = eventLoopGroup
    }

    package func probe(_ target: ProbeTarget) async -> [ProbeResult] {
        let addresses: [ProbeAddress]
        do {
            addresses = try await resolver.addresses(for: target.host, port: target.port)
        } catch {
            let name = ProbeAddress(ip: target.host, port: target.port)
            return [.unreachable(address: name.description, reason: error.description)]
        }
        let probed = Array(addresses.prefix(max(configuration.maximumAddresses, 0)))
        let skipped = addresses.dropFirst(probed.count).map { address in
            ProbeResult.unreachable(address: address.description,
                                    reason: "not probed: \(target.host) resolves to \(addresses.count) addresses and a probe visits at most \(configuration.maximumAddresses)")
        }
        return await probeEach(probed, for: target) + skipped
    }

    /// Probes `addresses` with at most ``Configuration/maximumConcurrentHandshakes`` in flight;
    /// results in the order of `addresses`.
    private func probeEach(_ addresses: [ProbeAddress], for target: ProbeTarget) async -> [ProbeResult] {
        await withTaskGroup(of: (Int, ProbeResult).self) { group in
            var pending = addresses.enumerated().makeIterator()
            var results = [ProbeResult?](repeating: nil, count: addresses.count)
            for _ in 0..<max(configuration.maximumConcurrentHandshakes, 1) {
                guard let (index, address) = pending.next() else { break }
                group.addTask { (index, await probe(address, for: target)) }
            }
            while let (index, result) = await group.next() {
                results[index] = result
                if let (next, address) = pending.next() {
                    group.addTask { (next, await probe(address, for: target)) }
                }
            }
            return results.compactMap { $0 }
        }
    }

    /// One handshake with one address, judged.
    private func probe(_ address: ProbeAddress, for target: ProbeTarget) async -> ProbeResult {
        let handshake = await TLSHandshakeRecorder(limits: configuration, group: eventLoopGroup)
            .handshake(with: address, serverName: target.serverName)
        let presented: PresentedChain
        switch handshake {
        case .failure(let failure):
            return .unreachable(address: address.description, reason: failure.reason)
        case .success(let chain):
            presented = chain
        }
        let observedAt = now()
        var validated: [Data] = []
        var failure: String?
        if let unfinished = presented.unfinishedHandshake {
            failure = "the server presented this chain but did not finish the TLS handshake, so it did not prove it holds the leaf's key (\(unfinished.reason))"
        } else {
            do {
                validated = try ChainValidator(trustRoots: target.trustRoots)
                    .validate(chain: presented.certificates, hostname: target.host, at: observedAt)
                    .map(\.derRepresentation)
            } catch {
                failure = error.description
            }
        }
        return .observed(ProbeObservation(address: address.description, observedAt: observedAt,
                                          presentedChain: presented.certificates,
                                          validatedChain: validated, validationFailure: failure))
    }
}
