import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// Why an address gave no chain to judge, in words for the state file and the logs.
struct ProbeFailure: Error, Sendable, CustomStringConvertible {
    let reason: String

    init(_ reason: String) {
        self.reason = reason
    }

    var description: String { reason }
}

/// What a server presented: DER, leaf first, and whether the handshake went on to its end.
struct PresentedChain: Sendable {
    let certificates: [Data]
    /// Why the handshake ended after the certificates arrived; nil when it finished.
    let unfinishedHandshake: ProbeFailure?
}

/// One TLS handshake that records the presented chain and sends nothing else.
///
/// The verification callback replaces swift-nio-ssl's verification (a custom callback always
/// does: `SSL_set_custom_verify`). It keeps the chain (within the limits) and lets the handshake
/// go on, so that the server's proof of its key (CertificateVerify, or the signed key exchange
/// in TLS 1.2, both after the certificates) is seen. Whether the chain is trusted is decided
/// afterwards by `ChainValidator`, never here.
struct TLSHandshakeRecorder {
    let limits: TLSPartnerProber.Configuration
    let group: any EventLoopGroup

    /// One client configuration for every probe; verification is the callback's (which accepts
    /// to record) and the host name is checked by `ChainValidator` against the partner's name.
    private static let context: Result<NIOSSLContext, any Error> = Result {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .noHostnameVerification
        // A probe never waits on a peer's close_notify for long: it has nothing to flush.
        configuration.shutdownTimeout = .seconds(1)
        return try NIOSSLContext(configuration: configuration)
    }

    func handshake(with address: ProbeAddress, serverName: String) async -> Result<PresentedChain, ProbeFailure> {
        let socketAddress: SocketAddress
        do {
            socketAddress = try SocketAddress(ipAddress: address.ip, port: address.port)
        } catch {
            return .failure(ProbeFailure("\(address.ip) is not an address a connection can be made to (\(error))"))
        }
        let sslContext: NIOSSLContext
        switch Self.context {
        case .success(let context): sslContext = context
        case .failure(let error): return .failure(ProbeFailure("TLS could not be set up: \(error)"))
        }
        // TLS forbids an IP address in SNI; a partner named by its address gets none.
        let sni: String? = IPAddressLiteral.isLiteral(serverName) ? nil : serverName
        let seconds = Double(limits.timeout.components.seconds) + Double(limits.timeout.components.attoseconds) / 1e18
        let timeout = TimeAmount.nanoseconds(Int64(max(seconds, 0.001) * 1e9))
        let deadline = NIODeadline.now() + timeout
        let eventLoop = group.next()
        let presented = eventLoop.makePromise(of: [Data].self)
        let finished = eventLoop.makePromise(of: Void.self)
        let limits = self.limits

        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: sslContext, serverHostname: sni) { certificates, verification in
                        switch Self.keep(certificates, within: limits) {
                        case .success(let chain):
                            presented.succeed(chain)
                            verification.succeed(.certificateVerified)
                        case .failure(let failure):
                            presented.fail(failure)
                            finished.fail(failure)
                            verification.succeed(.failed)
                        }
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                    try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(presented: presented, finished: finished))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(to: socketAddress).get()
        } catch {
            let failure = ProbeFailure("cannot connect to \(address): \(Self.describe(error))")
            presented.fail(failure)
            finished.fail(failure)
            return .failure(failure)
        }
        // The connection's time counts against the same deadline as the handshake.
        let timer = eventLoop.scheduleTask(deadline: deadline) {
            let failure = ProbeFailure("no TLS handshake with \(address) within \(limits.timeout)")
            presented.fail(failure)
            finished.fail(failure)
        }
        defer {
            timer.cancel()
            channel.close(promise: nil)
        }
        let chain: [Data]
        do {
            chain = try await presented.futureResult.get()
        } catch {
            return .failure(error as? ProbeFailure ?? ProbeFailure("the TLS handshake with \(address) failed: \(Self.describe(error))"))
        }
        do {
            try await finished.futureResult.get()
            return .success(PresentedChain(certificates: chain, unfinishedHandshake: nil))
        } catch {
            let failure = error as? ProbeFailure ?? ProbeFailure(Self.describe(error))
            return .success(PresentedChain(certificates: chain, unfinishedHandshake: failure))
        }
    }

    /// The chain as DER when it is within the limits; why not otherwise.
    private static func keep(_ certificates: [NIOSSLCertificate], within limits: TLSPartnerProber.Configuration) -> Result<[Data], ProbeFailure> {
        guard !certificates.isEmpty else {
            return .failure(ProbeFailure("the server presented no certificate"))
        }
        guard certificates.count <= limits.maximumChainLength else {
            return .failure(ProbeFailure("the server presented \(certificates.count) certificates; a probe keeps at most \(limits.maximumChainLength)"))
        }
        var chain: [Data] = []
        var total = 0
        for certificate in certificates {
            guard let der = try? certificate.toDERBytes() else {
                return .failure(ProbeFailure("a presented certificate could not be read as DER"))
            }
            guard der.count <= limits.maximumCertificateBytes else {
                return .failure(ProbeFailure("the server presented a certificate of \(der.count) bytes; a probe keeps certificates of at most \(limits.maximumCertificateBytes) bytes"))
            }
            total += der.count
            guard total <= limits.maximumChainBytes else {
                return .failure(ProbeFailure("the presented chain is larger than the \(limits.maximumChainBytes) bytes a probe keeps"))
            }
            chain.append(Data(der))
        }
        return .success(chain)
    }

    /// "connection refused" rather than NIO's nested descriptions.
    static func describe(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError, let first = error.connectionErrors.first {
            return describe(first.error)
        }
        if let error = error as? IOError {
            return String(cString: strerror(error.errnoCode)).lowercased()
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return "timed out"
            case .eof, .ioOnClosedChannel, .alreadyClosed: return "the server closed the connection"
            default: return "\(error)"
            }
        }
        if let error = error as? NIOSSLError {
            return "not a TLS handshake the probe could complete (\(error))"
        }
        if let error = error as? BoringSSLError {
            return "not a TLS handshake the probe could complete (\(error))"
        }
        return "\(error)"
    }
}

/// Completes the two promises from the pipeline's events: the handshake's end, an error, or the
/// connection closing first. Completing a promise twice does nothing, so whichever comes first
/// decides.
private final class HandshakeWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let presented: EventLoopPromise<[Data]>
    private let finished: EventLoopPromise<Void>

    init(presented: EventLoopPromise<[Data]>, finished: EventLoopPromise<Void>) {
        self.presented = presented
        self.finished = finished
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            presented.fail(ProbeFailure("the handshake finished without a certificate from the server"))
            // Nothing is sent: the probe closes the channel as soon as it has this event.
            finished.succeed()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Application data the server sends after the handshake is not read.
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let failure = ProbeFailure("the TLS handshake failed: \(TLSHandshakeRecorder.describe(error))")
        presented.fail(failure)
        finished.fail(failure)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let failure = ProbeFailure("the server closed the connection during the TLS handshake")
        presented.fail(failure)
        finished.fail(failure)
        context.fireChannelInactive()
    }
}

/// Whether a server name is an IP address (then no SNI is sent).
package enum IPAddressLiteral {
    /// True for an IPv4 or IPv6 address, brackets allowed.
    package static func isLiteral(_ text: String) -> Bool {
        var host = text
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }
}
