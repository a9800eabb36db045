import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PinStore

/// A TLS endpoint given on the command line as `host`, `host:port`, `[v6]:port` or an https URL.
struct TLSEndpoint: Sendable, CustomStringConvertible {
    let host: String
    let port: Int

    static let defaultPort = 443

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses the forms above; the port defaults to 443.
    init(parsing text: String) throws {
        var rest = text
        if let range = rest.range(of: "://") {
            let scheme = rest[..<range.lowerBound].lowercased()
            guard scheme == "https" else {
                throw CLIError("\(text): only https endpoints present certificates")
            }
            rest = String(rest[range.upperBound...])
            if let slash = rest.firstIndex(of: "/") { rest = String(rest[..<slash]) }
        }
        var host = rest
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw CLIError("\(text): an IPv6 address needs a closing ]")
            }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw CLIError("\(text): unexpected text after the IPv6 address")
            }
        } else if rest.filter({ $0 == ":" }).count == 1, let colon = rest.firstIndex(of: ":") {
            host = String(rest[..<colon])
            portText = rest[rest.index(after: colon)...]
        }
        guard !host.isEmpty else {
            throw CLIError("\(text): no host name")
        }
        var port = Self.defaultPort
        if let portText {
            guard let parsed = Int(portText), (1...65_535).contains(parsed) else {
                throw CLIError("\(text): \"\(portText)\" is not a TCP port (1 to 65535)")
            }
            port = parsed
        }
        self.init(host: host, port: port)
    }

    var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Whether the host is an IP literal (then no SNI is sent: TLS forbids IP addresses there).
    var hostIsIPAddress: Bool {
        (try? SocketAddress(ipAddress: host, port: port)) != nil
    }
}

/// Connects to a TLS server and returns the certificate chain it presents, leaf first.
///
/// This is an inspection tool: the chain is NOT verified (no trust anchors, no expiry, no host
/// name check), so that expired, self-signed and mis-issued certificates can be looked at too.
/// Never use it to decide whether a server is genuine.
enum PresentedChainReader {
    static func read(_ endpoint: TLSEndpoint, serverName: String? = nil, timeout: TimeInterval = 10) async throws -> [X509Certificate] {
        var configuration = TLSConfiguration.makeClientConfiguration()
        // The custom callback below replaces chain verification and accepts whatever is
        // presented; host-name checking is off so that IP addresses and other names can be read.
        configuration.certificateVerification = .noHostnameVerification
        let sslContext: NIOSSLContext
        do {
            sslContext = try NIOSSLContext(configuration: configuration)
        } catch {
            throw CLIError("cannot set up TLS: \(error)")
        }
        let sni = serverName ?? (endpoint.hostIsIPAddress ? nil : endpoint.host)
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        // The presented chain arrives in the verification callback, during the handshake; the
        // callback accepts it so that the handshake can finish.
        let chainPromise = eventLoop.makePromise(of: [[UInt8]].self)
        let timeoutAmount = TimeAmount.milliseconds(Int64(max(timeout, 0.1) * 1000))

        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeoutAmount)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: sslContext, serverHostname: sni) { certificates, verification in
                        chainPromise.succeed(certificates.compactMap { try? $0.toDERBytes() })
                        verification.succeed(.certificateVerified)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                    try channel.pipeline.syncOperations.addHandler(HandshakeFailureWatcher(promise: chainPromise))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: endpoint.host, port: endpoint.port).get()
        } catch {
            chainPromise.fail(error)
            throw CLIError("cannot connect to \(endpoint): \(Self.describe(connectionError: error))")
        }
        let timer = eventLoop.scheduleTask(in: timeoutAmount) {
            chainPromise.fail(CLIError("no TLS handshake with \(endpoint) within \(timeout) seconds"))
        }
        defer {
            timer.cancel()
            channel.close(promise: nil)
        }
        let chain: [[UInt8]]
        do {
            chain = try await chainPromise.futureResult.get()
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError("TLS handshake with \(endpoint) failed: \(error) (is it a TLS port?)")
        }
        guard !chain.isEmpty else {
            throw CLIError("\(endpoint) presented no certificate")
        }
        do {
            return try chain.map { try X509Certificate(derRepresentation: Data($0)) }
        } catch {
            throw CLIError("\(endpoint) presented a certificate that cannot be parsed", error)
        }
    }

    /// "connection refused" rather than NIO's nested error description.
    private static func describe(connectionError error: any Error) -> String {
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first {
                return describe(connectionError: first.error)
            }
            if error.dnsAError != nil || error.dnsAAAAError != nil {
                return "the host name does not resolve"
            }
        }
        if let error = error as? IOError {
            return String(cString: strerror(error.errnoCode)).lowercased()
        }
        if let error = error as? ChannelError, case .connectTimeout = error {
            return "timed out"
        }
        return "\(error)"
    }
}

/// Fails the chain promise when the connection fails or closes before a chain arrived
/// (completing an already completed promise does nothing).
private final class HandshakeFailureWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let promise: EventLoopPromise<[[UInt8]]>

    init(promise: EventLoopPromise<[[UInt8]]>) {
        self.promise = promise
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(CLIError("the server closed the connection during the TLS handshake"))
        context.fireChannelInactive()
    }
}
