// snippet.hide
// The PinStorePublisher module overview. Compiled by `swift build`, never run.
import Foundation
import Logging
import PinStorePublisher
import ServiceLifecycle

let logger = Logger(label: "publisher")
let url = URL(fileURLWithPath: "publication.json")
// snippet.show
let publisher = try Publisher(file: try PublicationFile(contentsOf: url), logger: logger)
let group = ServiceGroup(services: [publisher], gracefulShutdownSignals: [.sigterm], logger: logger)
try await group.run()
