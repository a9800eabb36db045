import Foundation
import PinStore
import PinStoreSigning

/// The Certificate Transparency section a fixture list carries: the logs a store checks SCTs
/// against (each ``TestCTLog`` with its operator and state), when the log list was made, and
/// per-host modes.
///
/// ```swift
/// let (google, other) = (try TestCTLog(), try TestCTLog(keyType: .rsa2048))
/// var list = TestPinList(pinning: [leaf.certificate])
/// list.certificateTransparency = TestCTLogList(logs: [.init(google, operatorName: "A"), .init(other, operatorName: "B")],
///                                              hosts: ["localhost": .enforce])
/// ```
public struct TestCTLogList: Sendable, Hashable {
    /// One log of the list.
    public struct Log: Sendable, Hashable {
        let description: CertificateTransparencyTools.Log

        /// `log`, run by `operatorName`, in `state` (`usable`, `qualified`, `readonly`,
        /// `retired`, `pending`, `rejected`) since `stateSince` (for `retired`: the retirement).
        public init(_ log: TestCTLog, operatorName: String, state: String = "usable", stateSince: Date? = nil) {
            description = CertificateTransparencyTools.Log(
                subjectPublicKeyInfo: log.subjectPublicKeyInfo, operatorName: operatorName, staticCTAPI: log.kind == .staticCTAPI,
                state: state, stateTimestamp: stateSince.map { Int64($0.timeIntervalSince1970.rounded(.down)) })
        }
    }

    /// The logs.
    public var logs: [Log]
    /// Each host's (or pattern's) mode.
    public var hosts: [String: CertificateTransparencyMode]
    /// When the log list was made: stores fail open 70 days later.
    public var timestamp: Date
    /// The profile the list names, if any.
    public var profile: CertificateTransparencyProfile?

    /// A log list made now (by default) of `logs`, with `hosts`' modes.
    public init(logs: [Log], hosts: [String: CertificateTransparencyMode] = [:], timestamp: Date = Date(),
                profile: CertificateTransparencyProfile? = nil) {
        self.logs = logs
        self.hosts = hosts
        self.timestamp = timestamp
        self.profile = profile
    }

    /// The section's JSON, as the signed list carries it.
    public func json() throws(PinStoreError) -> Data {
        try CertificateTransparencyTools.section(timestamp: Int64(timestamp.timeIntervalSince1970.rounded(.down)), profile: profile,
                                                 logs: logs.map(\.description),
                                                 hosts: hosts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }
}
