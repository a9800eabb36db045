import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PinStore

/// What one pinned request in the demo came to.
enum DemoOutcome: Sendable {
    /// The connection passed chain validation and the pin check; the server answered.
    case allowed(status: Int, body: String)
    /// The connection was refused before any request byte was sent.
    case refused(reason: String)
}

/// THE PINNED REQUEST OF THE DEMO: the one place that makes an https request pinned by `store`.
///
/// MERGE NOTE: when PinStoreNIO's `URLSessionConfiguration.pinned(by:trustRoots:)` is on the
/// branch, replace the body of ``DemoPinnedRequest/get(_:store:trustRoots:)`` with:
///
/// ```swift
/// let session = URLSession(configuration: .pinned(by: store, trustRoots: trustRoots))
/// defer { session.finishTasksAndInvalidate() }
/// do {
///     let (data, response) = try await session.data(from: url)
///     return .allowed(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: String(decoding: data, as: UTF8.self))
/// } catch let error as URLError {
///     let reason = (error.userInfo[NSUnderlyingErrorKey] as? PinningFailure).map { "\($0)" } ?? error.localizedDescription
///     return .refused(reason: reason)
/// } catch {
///     return .refused(reason: "\(error)")
/// }
/// ```
///
/// Until then this stand-in does the same checks on one SwiftNIO + swift-nio-ssl connection:
/// the presented chain is validated against `trustRoots` for the URL's host, then the pin is
/// checked with `store.validate(commonName:certificateChain:)`; the handshake is refused on
/// either failure, so no request byte reaches a server that is not pinned.
enum DemoPinnedRequest {
    static func get(_ url: URL, store: PinStore, trustRoots: TrustRoots) async -> DemoOutcome {
        guard url.scheme == "https", let host = url.host, let port = url.port else {
            return .refused(reason: "only https URLs with a port are used in the demo")
        }
        let refusal = RefusalBox()
        var configuration = TLSConfiguration.makeClientConfiguration()
        // The custom callback below replaces swift-nio-ssl's chain verification: it validates
        // the chain itself, then checks the pin. Host names are checked by ChainValidator too.
        configuration.certificateVerification = .fullVerification
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            return .refused(reason: "TLS setup failed: \(error)")
        }
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let responsePromise = eventLoop.makePromise(of: ByteBuffer.self)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try NIOSSLClientHandler(context: context, serverHostname: host) { certificates, promise in
                        let chain = certificates.compactMap { try? Data($0.toDERBytes()) }
                        do {
                            _ = try ChainValidator(trustRoots: trustRoots).validate(chain: chain, hostname: host)
                        } catch {
                            refusal.set("chain validation failed: \(error)")
                            promise.succeed(.failed)
                            return
                        }
                        switch store.validate(commonName: host, certificateChain: chain) {
                        case .trusted:
                            promise.succeed(.certificateVerified)
                        case .untrusted:
                            refusal.set("valid chain for \(host), but its fingerprint is not pinned (untrusted)")
                            promise.succeed(.failed)
                        case .empty:
                            refusal.set("no pins for \(host) (empty)")
                            promise.succeed(.failed)
                        }
                    }
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHandler(ResponseCollector(promise: responsePromise))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: "127.0.0.1", port: port).get()
        } catch {
            responsePromise.fail(error)
            return .refused(reason: "cannot connect: \(error)")
        }
        // Queued until the handshake, and so the pin check, has succeeded; dropped otherwise.
        let path = url.path.isEmpty ? "/" : url.path
        channel.writeAndFlush(ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n"), promise: nil)
        let timeout = eventLoop.scheduleTask(in: .seconds(10)) {
            responsePromise.fail(CLIError("no response within 10 seconds"))
            channel.close(promise: nil)
        }
        defer { timeout.cancel() }
        do {
            let response = try await responsePromise.futureResult.get()
            return parse(String(buffer: response))
        } catch {
            return .refused(reason: refusal.value ?? "connection failed: \(error)")
        }
    }

    private static func parse(_ response: String) -> DemoOutcome {
        let parts = response.components(separatedBy: "\r\n\r\n")
        let statusLine = parts.first?.components(separatedBy: "\r\n").first ?? ""
        let status = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return .allowed(status: status, body: parts.dropFirst().joined(separator: "\r\n\r\n"))
    }
}

/// Why the verification callback refused, read after the handshake failed.
private final class RefusalBox: @unchecked Sendable {
    // @unchecked: `reason` is only touched while `lock` is held.
    private let lock = NSLock()
    private var reason: String?

    func set(_ text: String) {
        lock.lock()
        if reason == nil { reason = text }
        lock.unlock()
    }

    var value: String? {
        lock.lock()
        defer { lock.unlock() }
        return reason
    }
}

/// Collects the whole response until the server closes the connection.
private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let promise: EventLoopPromise<ByteBuffer>
    private var received = ByteBuffer()

    init(promise: EventLoopPromise<ByteBuffer>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received.writeBuffer(&buffer)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.succeed(received)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A server that closes without close_notify after a complete answer is still an answer.
        if received.readableBytes > 0 {
            promise.succeed(received)
        } else {
            promise.fail(error)
        }
        context.close(promise: nil)
    }
}
