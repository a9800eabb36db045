// snippet.hide
// README.md, "Using the pins" (SwiftNIO): the lines that add the pinning TLS handler. Compiled by
// `swift build`, never run.
import NIOCore
import NIOSSL
import PinStore
import PinStoreNIO

func addPinnedTLS(store: PinStore, channel: any Channel) throws {
    // snippet.show
    let verifier = PinningTLSVerifier(store: store)
    let context = try NIOSSLContext(configuration: .makeClientConfiguration())
    // in the channel initializer:
    let tls = try verifier.makeClientHandler(context: context, serverHostname: "api.example.com")
    try channel.pipeline.syncOperations.addHandler(tls)
    // write the request after TLSUserEvent.handshakeCompleted
    // snippet.hide
}
