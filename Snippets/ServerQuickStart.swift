// snippet.hide
// README.md, "Quick start" (the server example). scripts/check-doc-examples.sh checks that the
// README's block is this file's shown part. Compiled by `swift build`, never run.
#if canImport(FoundationNetworking)
import Foundation
import ServiceLifecycle

struct YourServer: Service { func run() async throws {} }
let yourServer = YourServer()
let bundledListJSON = Data()
// snippet.show
import Foundation
import FoundationNetworking
import Logging
import PinStore
import PinStoreNIO
import ServiceLifecycle

let logger = Logger(label: "payments")

// 1. Configure once, at start-up. A bad key or a malformed fallback list throws here.
let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!,  // on another domain than the API
    publicKey: "BC3kV9OIDnMu...Nv+XE=",                               // Base64 X9.63 P-256 point (or PEM)
    expectedCommonNames: ["api.partner.example"],                     // optional allow-list
    identifier: "payments",                                           // the store file's name
    fallbackData: bundledListJSON),                                   // optional pins shipped with the app
    logger: logger)

// 2. Update at start-up: blocks only when nothing valid is stored; pins on disk still apply.
let report = await store.updateWithReport()
if report.result != .ok { logger.warning("pin list not updated: \(report.error.map { "\($0)" } ?? "\(report.result)")") }

// 3. The setup line: a URLSession whose https connections are pinned. Use it anywhere in
//    the server, for example in a request handler of `yourServer`:
let session = URLSession(configuration: .pinned(by: store))

let (_, response) = try await session.data(from: URL(string: "https://api.partner.example/v1/charges")!)
// A refusal throws URLError(.serverCertificateUntrusted) before a request byte is sent;
// PinningFailure(unwrapping: error) says why.

// 4. Keep the list fresh for as long as the process runs: the store is a Service. `run()`
//    returns at shutdown (SIGTERM), so this is the last line of main.
let group = ServiceGroup(configuration: .init(
    services: [.init(service: store), .init(service: yourServer)],
    gracefulShutdownSignals: [.sigterm, .sigint],
    logger: logger))
try await group.run()
// snippet.hide
#endif
