import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO
import PinStoreTestSupport

/// The chain-aware adapter (``PinningTLSVerifier``) pointed at a ``LoopbackHTTPSServer``, for
/// comparing it with the pinned `HTTPClient` on the same server: it connects to 127.0.0.1 and
/// asks for `host` (SNI and the host-name check), as the `HTTPClient` does with `dnsOverride`.
/// The pinned URLSession cannot be pointed there: it resolves names only through the system.
enum ChainAwareClient {
    struct Outcome: Sendable {
        /// The status of `GET /hello`, or nil when the handshake (or anything after it) failed.
        var status: Int?
        /// The verifier's decision, reported through `onDecision`; nil if it never decided.
        var decision: PinningDecision?
    }

    /// `GET /hello` on `server` for `host`, verified by `PinningTLSVerifier(store:)` against the
    /// test root (no update on a refusal: the decision is the store's as configured).
    static func get(host: String, server: LoopbackHTTPSServer, store: PinStore) async throws -> Outcome {
        let root = try TestResources.certificate("pki/root-ca.pem")
        let verifier = PinningTLSVerifier(store: store, trustRoots: .anchors([root]), updateOnEmpty: false, updateOnMismatch: false)
        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
        let decision = Locked<PinningDecision?>(nil)
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let response = eventLoop.makePromise(of: Int.self)
        let connect = ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(Int64(HangGuard.seconds)))  // a hang guard: loopback, on busy event loops
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try verifier.makeClientHandler(context: context, serverHostname: host, port: server.port) { made in
                        decision.withLock { $0 = made }
                    }
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(StatusReader(host: host, promise: response))
                }
            }
            .connect(host: "127.0.0.1", port: server.port)
        connect.whenFailure { response.fail($0) }
        let status = try? await response.futureResult.get()
        if let channel = try? await connect.get() { try? await channel.close() }
        return Outcome(status: status, decision: decision.withLock { $0 })
    }
}

/// Sends `GET /hello` as soon as the connection is up (the TLS handler holds it until the
/// handshake succeeds, and drops it if it fails) and reads the response status.
private final class StatusReader: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let host: String
    private let promise: EventLoopPromise<Int>

    init(host: String, promise: EventLoopPromise<Int>) {
        self.host = host
        self.promise = promise
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        headers.add(name: "Connection", value: "close")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/hello", headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            promise.succeed(Int(head.status.code))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}
