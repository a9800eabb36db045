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
    /// A store in use also starts a due update by itself from every `matchPins`, without
    /// blocking the caller; `run()` covers the idle store, and refreshes the
    /// `pinstore_list_age_seconds` gauge at least once a minute.
    ///
    /// It also fetches the cached CRLs again before they expire (planned by `CRLRefreshSchedule`), so a
    /// handshake to a host under a CRL mode finds its CRLs current. A CRL no check has read for
    /// a week is no longer refreshed, and CRL files in the storage folder that expired more
    /// than a day ago are deleted (at most once an hour while CRLs are held; never a current one, which another worker
    /// sharing the folder may still read).
    public func run() async throws {
        // The store's updater does the work; the store is the public face of the service.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.updater.run() }
            group.addTask { await self.refreshCRLs() }
            // The updater returns on graceful shutdown and cancellation: the refresh ends with it.
            try await group.next()
            group.cancelAll()
        }
    }

    /// The CRL refresh loop: fetches what ``CRLChecker/refreshPlan(now:)`` says is due, sleeps
    /// until the next one (at most a minute, so a CRL cached meanwhile is planned), until
    /// cancelled. With no CRL cached it waits for one, off the clock: a store without CRLs
    /// never wakes for them.
    func refreshCRLs() async {
        var lastSweep: Int64?
        while !Task.isCancelled {
            let now = clock.now()
            let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
            // Forgets CRLs no host used for a while and deletes stored ones long expired
            // (CRLChecker.sweep), at most once per sweep interval.
            if lastSweep.map({ seconds - $0 >= CRLChecker.sweepInterval || seconds < $0 }) ?? true {
                crl.sweep(now: seconds)
                lastSweep = seconds
            }
            let plan = crl.refreshPlan(now: seconds)
            if !plan.due.isEmpty {
                await crl.refresh(plan.due)
                continue
            }
            guard let next = plan.nextWake else {
                await crl.cached.wait()
                continue
            }
            let wake = min(Date(timeIntervalSince1970: TimeInterval(next)), now.addingTimeInterval(60))
            do {
                try await clock.sleep(until: wake)
            } catch {
                return
            }
        }
    }
}
