// snippet.hide
// The article "Pinning SwiftNIO channels" (PinStoreNIO). Compiled by `swift build`, never run.
import Foundation
// snippet.show
import NIOCore
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO

// snippet.hide
let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
// snippet.show
let verifier = PinningTLSVerifier(store: store)
let context = try NIOSSLContext(configuration: .makeClientConfiguration())

let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            let tls = try verifier.makeClientHandler(context: context, serverHostname: "api.example.com")
            try channel.pipeline.syncOperations.addHandler(tls)
        }
    }
    .connect(host: "api.example.com", port: 443).get()
// write the request after TLSUserEvent.handshakeCompleted
