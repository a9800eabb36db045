// snippet.hide
// The article "Pinning AsyncHTTPClient in a server". Compiled by `swift build`, never run.
import Foundation
// snippet.show
import AsyncHTTPClient
import Logging
import PinStore
import PinStoreAsyncHTTPClient
import ServiceLifecycle

let logger = Logger(label: "payments")
let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!,
    publicKey: "BC3kV9OIDnMu...Nv+XE="), logger: logger)
let partner = try HTTPClient(pinnedBy: store, logger: logger)

let group = ServiceGroup(services: [store /*, your HTTP server */], gracefulShutdownSignals: [.sigterm],
                         logger: logger)
try await group.run()
try await partner.shutdown() as Void   // top-level code would otherwise pick the EventLoopFuture overload
