// snippet.hide
// The article "Pinning gRPC clients" (PinStoreGRPC): the transport for a partner with a
// private CA. Compiled by `swift build`, never run.
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import PinStore
import PinStoreGRPC

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
let partnerCAFile = URL(fileURLWithPath: "/etc/partner/ca.pem")
// The transport needs macOS 15 (grpc-swift 2).
if #available(macOS 15.0, *) {
    // snippet.show
    let transport = try HTTP2ClientTransport.Posix(
        pinnedBy: store,
        target: .dns(host: "payments.partner.example", port: 443),
        trustRoots: try .anchors(contentsOf: partnerCAFile)   // a private CA; the system store by default
    )
    let client = GRPCClient(transport: transport)
    // snippet.hide
    _ = client
}
