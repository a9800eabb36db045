import Foundation
import ServiceLifecycle

extension ListUpdater: Service {
    /// The schedule loop behind ``PinStore/run()``: sleeps until the next update is due,
    /// updates, and repeats, until graceful shutdown or cancellation.
    func run() async throws {
        logger.debug("scheduled fingerprint list updates started", metadata: ["pinstore.identifier": "\(configuration.identifier)"])
        // Graceful shutdown cancels the loop: nothing in it needs to finish first. The loop
        // stops waiting for a download at once (scheduledUpdate), which completes on its own
        // for whoever else waits for it.
        await cancelWhenGracefulShutdown {
            await self.runSchedule()
        }
        logger.debug("scheduled fingerprint list updates stopped", metadata: ["pinstore.identifier": "\(configuration.identifier)"])
    }

    /// The loop behind ``run()``; returns when its task is cancelled.
    func runSchedule() async {
        var lastAttempt: Date?
        // A list (or key documents) a fleet delivers as files: a change is noticed within
        // listFileCheckInterval, and read at once. Nil before the first look, so a store that
        // starts reads the files whatever its store file says (they may have changed meanwhile).
        let watchedFiles = [configuration.serviceURL, configuration.keyDocumentURL].compactMap { $0 }.filter(\.isFileURL)
        var filesAtLastAttempt: [FileListFetcher.FileIdentity?]?
        while !Task.isCancelled {
            let now = clock.now()
            hooks.withLock { $0 }.refreshGauges(now)
            var due = nextUpdateDate
            let files = watchedFiles.map(FileListFetcher.identity(of:))
            if !watchedFiles.isEmpty, files != filesAtLastAttempt { due = min(due, now) }
            // At most one scheduled attempt a second, whatever a list's dates say.
            if let lastAttempt { due = max(due, lastAttempt.addingTimeInterval(Self.minimumScheduledInterval)) }
            if now < due {
                // Wake at least once a minute to refresh the age gauge.
                var wake = min(due, now.addingTimeInterval(Self.gaugeRefreshInterval))
                if !watchedFiles.isEmpty { wake = min(wake, now.addingTimeInterval(configuration.listFileCheckInterval)) }
                do {
                    try await clock.sleep(until: wake)
                } catch {
                    return
                }
                continue
            }
            lastAttempt = now
            filesAtLastAttempt = files
            guard let report = await scheduledUpdate() else { return }
            if report.result != .ok {
                logger.debug("scheduled fingerprint list update failed; backing off", metadata: [
                    "pinstore.result": "\(report.result)", "pinstore.retryAt": "\(nextUpdateDate)",
                ])
            }
        }
    }

    /// The shortest time between two scheduled attempts (seconds).
    static let minimumScheduledInterval: TimeInterval = 1
    /// How often an idle ``run()`` refreshes the list-age gauge (seconds).
    static let gaugeRefreshInterval: TimeInterval = 60
}
