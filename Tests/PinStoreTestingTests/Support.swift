import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOPosix
import NIOSSL
import PinStore

/// The certificate chain a TLS server presents, read by a bare swift-nio-ssl client that
/// accepts anything and records what it was shown.
enum PresentedChain {
    struct ClosedBeforeVerification: Error {}

    static func read(port: Int, serverName: String = "localhost") async throws -> [Data] {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let presented = loop.makePromise(of: [Data].self)
        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.closeFuture.whenComplete { _ in presented.fail(ClosedBeforeVerification()) }
                    return channel.eventLoop.makeCompletedFuture {
                        let handler = try NIOSSLClientHandler(context: context, serverHostname: serverName) { certificates, verification in
                            presented.completeWith(Result { try certificates.map { Data(try $0.toDERBytes()) } })
                            verification.succeed(.certificateVerified)
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                }
                .connect(host: "127.0.0.1", port: port).get()
        } catch {
            presented.fail(error)
            throw error
        }
        let chain = try await presented.futureResult.get()
        try? await channel.close()
        return chain
    }
}

/// One plain-http GET (the list server is http on loopback).
enum PlainHTTP {
    static func get(_ url: URL, headers: [String: String] = [:]) async throws -> (status: Int, headers: [AnyHashable: Any], body: Data) {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        let http = response as? HTTPURLResponse
        return (http?.statusCode ?? 0, http?.allHeaderFields ?? [:], data)
    }
}
