import CoreMetrics
import Foundation
import PinStore

/// The publisher's swift-metrics instruments:
///
/// | name | kind | dimensions |
/// |---|---|---|
/// | `pinstore_publisher_partners_probed_total` | counter | |
/// | `pinstore_publisher_probe_failures_total` | counter | |
/// | `pinstore_publisher_pending_changes` | gauge | |
/// | `pinstore_publisher_published_changes_total` | counter | |
/// | `pinstore_publisher_list_expires_in_seconds` | gauge | |
/// | `pinstore_publisher_pinned_certificate_expires_in_seconds` | gauge | `partner` |
/// | `pinstore_publisher_proposals_refused_total` | counter | |
/// | `pinstore_publisher_medium_objects_ignored_total` | counter | |
/// | `pinstore_publisher_reports_total` | counter | `outcome`: `probing`, `rateLimited`, `unknownHost`, `unreadable` |
/// | `pinstore_publisher_requested_probes_total` | counter | `cause`: `report`, `proposal` |
/// | `pinstore_publisher_after_publish_failures_total` | counter | |
struct PublisherMetrics: Sendable {
    let partnersProbed: Counter
    let probeFailures: Counter
    let pendingChanges: Gauge
    let publishedChanges: Counter
    let listExpiresIn: Gauge
    /// Proposals this vantage point reviewed and would not sign.
    let proposalsRefused: Counter
    /// Objects in the proposals medium skipped as junk (wrong name, hash, size, form).
    let mediumObjectsIgnored: Counter
    /// Reports received, by what they caused.
    let reports: [String: Counter]
    /// Probes made due before their time, by cause.
    let requestedProbes: [String: Counter]
    /// Runs of the after-publish command that failed (it runs again next round).
    let afterPublishFailures: Counter
    private let factory: any MetricsFactory
    /// One gauge per partner, made on first use (partners come from the file: bounded).
    private let pinExpiry = Locked<[String: Gauge]>([:])

    static let partnersProbedLabel = "pinstore_publisher_partners_probed_total"
    static let probeFailuresLabel = "pinstore_publisher_probe_failures_total"
    static let pendingChangesLabel = "pinstore_publisher_pending_changes"
    static let publishedChangesLabel = "pinstore_publisher_published_changes_total"
    static let listExpiresInLabel = "pinstore_publisher_list_expires_in_seconds"
    static let proposalsRefusedLabel = "pinstore_publisher_proposals_refused_total"
    static let mediumObjectsIgnoredLabel = "pinstore_publisher_medium_objects_ignored_total"
    static let reportsLabel = "pinstore_publisher_reports_total"
    static let requestedProbesLabel = "pinstore_publisher_requested_probes_total"
    static let afterPublishFailuresLabel = "pinstore_publisher_after_publish_failures_total"
    static let pinnedCertificateExpiresInLabel = "pinstore_publisher_pinned_certificate_expires_in_seconds"

    init(factory: any MetricsFactory) {
        self.factory = factory
        partnersProbed = Counter(label: Self.partnersProbedLabel, dimensions: [], factory: factory)
        probeFailures = Counter(label: Self.probeFailuresLabel, dimensions: [], factory: factory)
        pendingChanges = Gauge(label: Self.pendingChangesLabel, dimensions: [], factory: factory)
        publishedChanges = Counter(label: Self.publishedChangesLabel, dimensions: [], factory: factory)
        listExpiresIn = Gauge(label: Self.listExpiresInLabel, dimensions: [], factory: factory)
        proposalsRefused = Counter(label: Self.proposalsRefusedLabel, dimensions: [], factory: factory)
        mediumObjectsIgnored = Counter(label: Self.mediumObjectsIgnoredLabel, dimensions: [], factory: factory)
        afterPublishFailures = Counter(label: Self.afterPublishFailuresLabel, dimensions: [], factory: factory)
        reports = Dictionary(uniqueKeysWithValues: ["probing", "rateLimited", "unknownHost", "unreadable"].map {
            ($0, Counter(label: Self.reportsLabel, dimensions: [("outcome", $0)], factory: factory))
        })
        requestedProbes = Dictionary(uniqueKeysWithValues: ["report", "proposal"].map {
            ($0, Counter(label: Self.requestedProbesLabel, dimensions: [("cause", $0)], factory: factory))
        })
    }

    func pinnedCertificateExpiresIn(partner: String) -> Gauge {
        pinExpiry.withLock { gauges in
            if let gauge = gauges[partner] { return gauge }
            let gauge = Gauge(label: Self.pinnedCertificateExpiresInLabel, dimensions: [("partner", partner)], factory: factory)
            gauges[partner] = gauge
            return gauge
        }
    }
}
