// snippet.hide
// README.md, "Using the pins" (gRPC). Compiled by `swift build`, never run.
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import PinStore
import PinStoreGRPC

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
// The transport needs macOS 15 (grpc-swift 2).
if #available(macOS 15.0, *) {
    // snippet.show
    let transport = try HTTP2ClientTransport.Posix(pinnedBy: store, target: .dns(host: "api.example.com", port: 443))
    try await withGRPCClient(transport: transport) { client in /* your generated client, as usual */ }
    // snippet.hide
}
