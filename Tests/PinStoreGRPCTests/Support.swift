import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import NIOCore
import PinStore
import PinStoreTesting
import Synchronization

/// Raw bytes as a gRPC message: the tests need no protobuf, only bytes that go through.
@available(macOS 15.0, *)
struct RawBytesCoder: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }
    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
        serializedMessageBytes.withUnsafeBytes { Array($0) }
    }
}

/// A one-method service, `pinstore.test.Echo/Echo`, that answers what it was sent and
/// remembers the `:authority` each call was addressed to.
@available(macOS 15.0, *)
struct EchoService: RegistrableRPCService {
    static let method = MethodDescriptor(fullyQualifiedService: "pinstore.test.Echo", method: "Echo")
    let calls: Counter
    let authorities: Recorded

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        let calls = self.calls
        let authorities = self.authorities
        router.registerHandler(forMethod: Self.method, deserializer: RawBytesCoder(), serializer: RawBytesCoder()) { request, _ in
            calls.increment()
            for case .string(let authority) in request.metadata[":authority"] { authorities.append(authority) }
            var received: [UInt8] = []
            for try await message in request.messages { received += message }
            let answer = received
            return StreamingServerResponse { writer in
                try await writer.write(answer)
                return [:]
            }
        }
    }
}

/// A thread-safe count.
@available(macOS 15.0, *)
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// Strings recorded from several threads.
@available(macOS 15.0, *)
final class Recorded: Sendable {
    private let values = Mutex<[String]>([])
    func append(_ value: String) { values.withLock { $0.append(value) } }
    var all: [String] { values.withLock { $0 } }
}

/// A gRPC server with TLS on 127.0.0.1 presenting `identity`, counting what reaches it: the
/// TCP connections it accepted (and how many of them have closed), the HTTP/2 streams (one per
/// RPC) opened on them, and the RPCs its service handled.
@available(macOS 15.0, *)
final class TestGRPCServer: Sendable {
    let port: Int
    let connections: Counter
    let closedConnections: Counter
    let streams: Counter
    let calls: Counter
    let authorities: Recorded
    private let server: GRPCServer<HTTP2ServerTransport.Posix>
    private let task: Task<Void, any Error>

    private init(port: Int, connections: Counter, closedConnections: Counter, streams: Counter, calls: Counter,
                 authorities: Recorded, server: GRPCServer<HTTP2ServerTransport.Posix>, task: Task<Void, any Error>) {
        self.port = port
        self.connections = connections
        self.closedConnections = closedConnections
        self.streams = streams
        self.calls = calls
        self.authorities = authorities
        self.server = server
        self.task = task
    }

    static func start(presenting identity: TestIdentity) async throws -> TestGRPCServer {
        let connections = Counter()
        let closedConnections = Counter()
        let streams = Counter()
        let calls = Counter()
        let authorities = Recorded()
        var config = HTTP2ServerTransport.Posix.Config.defaults
        config.channelDebuggingCallbacks.onAcceptTCPConnection = { channel in
            connections.increment()
            channel.closeFuture.whenComplete { _ in closedConnections.increment() }
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        config.channelDebuggingCallbacks.onAcceptHTTP2Stream = { channel in
            streams.increment()
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        let transport = HTTP2ServerTransport.Posix(
            address: .ipv4(host: "127.0.0.1", port: 0),
            transportSecurity: .tls(certificateChain: [.bytes(Array(identity.certificateChainPEM.utf8), format: .pem)],
                                    privateKey: .bytes(Array(identity.privateKeyPEM.utf8), format: .pem)),
            config: config)
        let server = GRPCServer(transport: transport, services: [EchoService(calls: calls, authorities: authorities)])
        let task = Task { try await server.serve() }
        guard let port = try await transport.listeningAddress.ipv4?.port else {
            task.cancel()
            throw CancellationError()
        }
        return TestGRPCServer(port: port, connections: connections, closedConnections: closedConnections, streams: streams, calls: calls,
                              authorities: authorities, server: server, task: task)
    }

    func shutdown() async {
        server.beginGracefulShutdown()
        task.cancel()
        _ = try? await task.value
    }
}
