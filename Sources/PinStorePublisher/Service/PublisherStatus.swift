import Foundation

/// What the publisher is doing, for `pinstore publish status`: the list in force and one row
/// per partner. ``table`` prints it.
public struct PublisherStatus: Sendable, Hashable {
    /// One partner's row.
    public struct Partner: Sendable, Hashable {
        /// The partner's id in the publication file.
        public let id: String
        /// Its host and port.
        public let host: String
        /// What the publisher can promise it: `announcedRotation`, `pinnedByCAKey` or
        /// `unannouncedLeafRotation` (see the operations guide).
        public let rotationCase: String
        /// Pins of the list in force for it.
        public let publishedPins: Int
        /// The earliest `notAfter` among the certificates behind its published pins.
        public let pinnedCertificateExpires: Date?
        /// The last probe, and why it reached no address (nil when one answered).
        public let lastProbe: Date?
        public let lastProbeFailure: String?
        /// Certificates seen but not published (waiting for sightings or for a person).
        public let pendingChanges: Int
    }

    /// The version, expiry and publication time of the list in force (nil before the first).
    public let listVersion: Int64?
    public let listExpires: Date?
    public let listPublishedAt: Date?
    /// The partners, in file order.
    public let partners: [Partner]
    /// Staged changes that need a person (`pinstore publish pending`).
    public let changesNeedingApproval: Int
    /// When the list in force is due to be re-signed: `resignInterval` after it was published,
    /// or once it has `expires - resignInterval` left, whichever comes first (nil before the
    /// first list).
    public let listResignDue: Date?
    /// How late a re-signing may come before it counts as overdue: two probe intervals (the
    /// service runs a cycle every `probeInterval` and retries a failed one sooner), at most half
    /// of `expires - resignInterval` (so an overdue list is reported while it is still valid).
    public let resignSlack: TimeInterval

    /// Whether the list is not being re-signed in time at `now`: no list is published, it has
    /// expired, or it is past ``listResignDue`` by more than ``resignSlack``. What exit code 4
    /// of `pinstore publish status` and `once` means. A list whose `expires` is short (under a
    /// day) but is re-signed on schedule is not overdue.
    ///
    /// ```swift
    /// let status = await publisher.status()
    /// if status.isListOverdue(at: Date()) { alert("the pin list is not being re-signed") }
    /// ```
    public func isListOverdue(at now: Date) -> Bool {
        guard let listExpires, let listResignDue else { return true }
        return now >= listExpires || now.timeIntervalSince(listResignDue) > resignSlack
    }

    /// The slack for ``resignSlack``.
    static func resignSlack(probeInterval: TimeInterval, expires: TimeInterval, resignInterval: TimeInterval) -> TimeInterval {
        max(0, min(2 * probeInterval, (expires - resignInterval) / 2))
    }

    /// The status as an aligned text table.
    public var table: String {
        var lines: [String] = []
        if let listVersion, let listExpires {
            lines.append("list version \(listVersion), expires \(Self.format(listExpires))"
                         + (listResignDue.map { ", re-signing due \(Self.format($0))" } ?? ""))
        } else {
            lines.append("no list published yet")
        }
        lines.append("\(changesNeedingApproval) change(s) need approval")
        let header = ["PARTNER", "HOST", "CASE", "PINS", "PINNED CERT EXPIRES", "LAST PROBE", "PENDING", "PROBLEM"]
        var rows = [header]
        for partner in partners {
            rows.append([partner.id, partner.host, partner.rotationCase, String(partner.publishedPins),
                         partner.pinnedCertificateExpires.map(Self.format) ?? "-", partner.lastProbe.map(Self.format) ?? "never",
                         String(partner.pendingChanges), partner.lastProbeFailure ?? ""])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            lines.append(row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
        return lines.joined(separator: "\n")
    }

    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
