import Foundation
import ServiceLifecycle

extension PinStore: Service {
    /// Keeps the list fresh while nothing else uses the store: sleeps until the next update
    /// is due (``nextUpdateDate``), updates, and repeats. A failed download is retried after a
    /// minute, then two, four, ... never less often than the configuration's
    /// `periodicUpdateInterval`. When another process sharing the storage directory has saved a
    /// newer list, it is taken instead of downloading.
    ///
    /// Add the store to the server's `ServiceGroup`; `run()` returns promptly on graceful
    /// shutdown and on cancellation:
    ///
    /// ```swift
    /// let store = try PinStore(configuration: configuration, logger: logger)
    /// let group = ServiceGroup(services: [store, server], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    ///
    /// A store in use also starts a due update by itself from every `validate`, without
    /// blocking the caller; `run()` covers the idle store, and refreshes the
    /// `pinstore_list_age_seconds` gauge at least once a minute.
    public func run() async throws {
        // The store's updater does the work; the store is the public face of the service.
        try await updater.run()
    }
}
