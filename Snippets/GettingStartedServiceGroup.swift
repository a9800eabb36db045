// snippet.hide
// The article "Getting started" (PinStore), "Keep the list fresh in a server". Compiled by
// `swift build`, never run.
import Foundation
import Logging
import PinStore
import ServiceLifecycle

struct YourServer: Service { func run() async throws {} }
let server = YourServer()
let logger = Logger(label: "my-server")
let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
// snippet.show
let group = ServiceGroup(configuration: .init(
    services: [.init(service: store), .init(service: server)],
    gracefulShutdownSignals: [.sigterm], logger: logger))
try await group.run()
