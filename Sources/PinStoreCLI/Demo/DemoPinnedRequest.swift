import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO

/// What one pinned request in the demo came to.
enum DemoOutcome: Sendable {
    /// The connection passed chain validation and the pin check; the server answered.
    case allowed(status: Int, body: String)
    /// The connection was refused before any request byte was sent.
    case refused(reason: String)
}

/// How the demo's pinned request goes out.
enum DemoTransport: String, Sendable, CaseIterable {
    /// The documented setup line for URLSession on Linux: `URLSession(configuration: .pinned(by:))`.
    case urlSession = "url-session"
    /// `PinningTLSVerifier` on a swift-nio-ssl client channel: the same on Linux and macOS.
    case nio

    /// The platform's default: the pinned URLSession where FoundationNetworking carries it (Linux);
    /// on macOS SwiftNIO, since the Apple URLSession delegate trusts only the system's anchors
    /// and the demo's servers present a private test CA.
    static var platformDefault: DemoTransport {
        #if canImport(FoundationNetworking)
        .urlSession
        #else
        .nio
        #endif
    }
}

/// The demo's pinned request: plain client code on the documented setup, exactly what an app does.
enum DemoPinnedRequest {
    static func get(_ url: URL, store: PinStore, trustRoots: TrustRoots, transport: DemoTransport) async -> DemoOutcome {
        switch transport {
        case .urlSession:
            #if canImport(FoundationNetworking)
            return await getThroughURLSession(url, store: store, trustRoots: trustRoots)
            #else
            return .refused(reason: "the pinned URLSession transport is Linux's (FoundationNetworking); use --transport nio")
            #endif
        case .nio:
            return await getThroughNIO(url, store: store, trustRoots: trustRoots)
        }
    }

    #if canImport(FoundationNetworking)
    private static func getThroughURLSession(_ url: URL, store: PinStore, trustRoots: TrustRoots) async -> DemoOutcome {
        let session = URLSession(configuration: .pinned(by: store, trustRoots: trustRoots))
        defer { session.finishTasksAndInvalidate() }
        do {
            let (data, response) = try await session.data(from: url)
            return .allowed(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: String(decoding: data, as: UTF8.self))
        } catch let error as URLError {
            let reason = (error.userInfo[NSUnderlyingErrorKey] as? PinningFailure).map(\.summary) ?? error.localizedDescription
            return .refused(reason: reason)
        } catch {
            return .refused(reason: "\(error)")
        }
    }
    #endif

    /// One HTTP/1.1 GET over a swift-nio-ssl channel verified by `PinningTLSVerifier`, on
    /// NIOPosix's event loops (where swift-nio-ssl does TLS on every platform).
    static func getThroughNIO(_ url: URL, store: PinStore, trustRoots: TrustRoots) async -> DemoOutcome {
        guard let host = url.host, let port = url.port ?? (url.scheme == "https" ? 443 : nil) else {
            return .refused(reason: "the URL \(url) names no host or port")
        }
        let verifier = PinningTLSVerifier(store: store, trustRoots: trustRoots)
        let refusal = Locked<PinningFailure?>(nil)
        do {
            let context = try NIOSSLContext(configuration: .makeClientConfiguration())
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let tls = try verifier.makeClientHandler(context: context, serverHostname: host, port: port) { decision in
                            if case .deny(let failure) = decision { refusal.withLock { $0 = failure } }
                        }
                        try channel.pipeline.syncOperations.addHandler(tls)
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                    }
                }
            return try await channel.executeThenClose { inbound, outbound in
                var headers = HTTPHeaders()
                headers.add(name: "Host", value: "\(host):\(port)")
                headers.add(name: "Connection", value: "close")
                let path = url.path.isEmpty ? "/" : url.path
                // Written only after the handshake, so a refused chain sends no request byte.
                try await outbound.write(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)))
                try await outbound.write(HTTPClientRequestPart.end(nil))
                var status = 0
                var body = ByteBuffer()
                for try await part in inbound {
                    switch part {
                    case .head(let head): status = Int(head.status.code)
                    case .body(var piece): body.writeBuffer(&piece)
                    case .end: return DemoOutcome.allowed(status: status, body: String(buffer: body))
                    }
                }
                return DemoOutcome.refused(reason: "the connection closed before the response ended")
            }
        } catch {
            if let failure = refusal.withLock({ $0 }) { return .refused(reason: failure.summary) }
            return .refused(reason: "\(error)")
        }
    }
}
