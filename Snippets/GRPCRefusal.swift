// snippet.hide
// The article "Pinning gRPC clients" (PinStoreGRPC): the refusal in an RPC's error. Compiled
// by `swift build`, never run. `Greeter` stands for the stubs protoc-gen-grpc-swift generates.
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import Logging
import PinStore
import PinStoreGRPC

struct HelloRequest: Sendable {
    var name = ""
    static func with(_ configure: (inout HelloRequest) -> Void) -> HelloRequest {
        var request = HelloRequest()
        configure(&request)
        return request
    }
}
struct HelloReply: Sendable {}
enum Greeter {
    @available(macOS 15.0, *)
    struct Client<Transport: ClientTransport> {
        let client: GRPCClient<Transport>
        init(wrapping client: GRPCClient<Transport>) { self.client = client }
        func sayHello(_ request: HelloRequest) async throws -> HelloReply { HelloReply() }
    }
}

let logger = Logger(label: "payments")
let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
// The transport needs macOS 15 (grpc-swift 2).
if #available(macOS 15.0, *) {
    let transport = try HTTP2ClientTransport.Posix(pinnedBy: store, target: .dns(host: "payments.partner.example", port: 443))
    try await withGRPCClient(transport: transport) { client in
        let greeter = Greeter.Client(wrapping: client)
        // snippet.show
        do {
            _ = try await greeter.sayHello(.with { $0.name = "pinned" })
        } catch {
            if let failure = PinningFailure(unwrapping: error) {
                logger.error("partner refused by pinning", metadata: ["reason": "\(failure.summary)"])
            }
        }
        // snippet.hide
    }
}
