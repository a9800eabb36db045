import Foundation
import PinStore

extension Publisher {
    /// What one pin-failure report caused.
    package enum ReportReceipt: Sendable, Equatable {
        /// The partner it names is probed now.
        case probing(partnerID: String)
        /// The partner was probed within ``Publisher/reportProbeGap``: its probe comes when the
        /// gap ends (the loop is woken for it), and further reports change nothing more.
        case rateLimited(partnerID: String)
        /// It names a host no partner of the publication file has; ignored.
        case unknownHost(String)
        /// Not a pin-failure report.
        case unreadable
    }

    /// A report makes its partner's probe due at most this often.
    static let reportProbeGap: TimeInterval = 30
    /// Another vantage point's proposal makes a partner's probe due at most this often.
    static let proposalProbeGap: TimeInterval = 60
    /// The largest report body read.
    static let maximumReportSize = 64 << 10

    /// Takes one pin-failure report, as the stores send it to `reportURI` (the JSON
    /// ``PinFailureReport`` format). A report is never evidence: nothing in it reaches a list.
    /// It only makes the partner it names be probed now instead of at the next `probeInterval`,
    /// at most once every ``reportProbeGap`` per partner, so a fleet reporting a swapped
    /// certificate is heard within seconds and a flood of reports costs one probe per gap.
    package func receiveReport(_ body: Data) -> ReportReceipt {
        let receipt = Self.receipt(for: body, partners: setup.partners.map(\.entry)) { id in
            requestProbe([id], minimumGap: Self.reportProbeGap).isEmpty ? .rateLimited(partnerID: id) : .probing(partnerID: id)
        }
        switch receipt {
        case .probing(let id):
            metrics.reports["probing"]?.increment()
            metrics.requestedProbes["report"]?.increment()
            logger.debug("a pin-failure report makes a partner due for a probe", metadata: ["pinstore.partner": "\(id)"])
        case .rateLimited:
            metrics.reports["rateLimited"]?.increment()
        case .unknownHost(let host):
            metrics.reports["unknownHost"]?.increment()
            logger.debug("a pin-failure report names no partner; ignored", metadata: ["pinstore.host": "\(host.prefix(253))"])
        case .unreadable:
            metrics.reports["unreadable"]?.increment()
        }
        return receipt
    }

    /// The partner a report names (its host, and its port when the report gives one), and what
    /// `schedule` does with it.
    static func receipt(for body: Data, partners: [PublicationFile.Partner], schedule: (String) -> ReportReceipt) -> ReportReceipt {
        guard body.count <= maximumReportSize, let report = try? PinFailureReport(jsonData: body) else {
            return .unreadable
        }
        let host = report.hostname.lowercased()
        guard let partner = partners.first(where: { $0.host.lowercased() == host && (report.port == nil || report.port == $0.port) }) else {
            return .unknownHost(report.hostname)
        }
        return schedule(partner.id)
    }

    /// Makes due a probe of each partner that `proposal` pins something for which this vantage
    /// point's own observations do not support: another vantage point may have seen a rotation
    /// first. A hint, never evidence (the proposal is reviewed again after the probe, as any).
    func probePartnersNamed(by proposal: Proposal, view: ProposalReview.View) {
        let names = ProposalReview.unsupportedNames(in: proposal, view: view)
        guard !names.isEmpty else { return }
        let ids = setup.partners.filter { names.contains($0.entry.host.lowercased()) }.map(\.entry.id)
        let due = requestProbe(ids, minimumGap: Self.proposalProbeGap)
        if !due.isEmpty {
            metrics.requestedProbes["proposal"]?.increment(by: Int64(due.count))
            logger.debug("another vantage point's proposal makes partners due for a probe", metadata: ["pinstore.partners": "\(due)"])
        }
    }
}
