// snippet.hide
// The PinStoreGRPC module overview. Compiled by `swift build`, never run. `Greeter` stands for
// the stubs protoc-gen-grpc-swift generates.
import Foundation
// snippet.show
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import PinStore
import PinStoreGRPC

// snippet.hide
let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))

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

// The transport needs macOS 15 (grpc-swift 2). The shown lines inside this `if` are not
// indented, so that they line up with the imports above them in the article.
if #available(macOS 15.0, *) {
// snippet.show
let transport = try HTTP2ClientTransport.Posix(pinnedBy: store, target: .dns(host: "api.example.com", port: 443))
try await withGRPCClient(transport: transport) { client in
    let greeter = Greeter.Client(wrapping: client)   // generated stubs, as usual
    _ = try await greeter.sayHello(.with { $0.name = "pinned" })
}
// snippet.hide
}
