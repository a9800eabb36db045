// snippet.hide
// The article "Pinning gRPC clients" (PinStoreGRPC), "How soon a re-pinned server is reached":
// a transport whose reconnect backoff is capped. Compiled by `swift build`, never run.
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import PinStore
import PinStoreGRPC

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
// The transport needs macOS 15 (grpc-swift 2).
if #available(macOS 15.0, *) {
    let target: any ResolvableTarget = .dns(host: "payments.partner.example", port: 443)
    // snippet.show
    var config = HTTP2ClientTransport.Posix.Config.defaults
    config.backoff = .init(initial: .seconds(1), max: .seconds(10), multiplier: 1.6, jitter: 0.2)
    let transport = try HTTP2ClientTransport.Posix(pinnedBy: store, target: target, config: config)
    // snippet.hide
    _ = transport
}
